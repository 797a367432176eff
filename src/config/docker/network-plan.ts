import { createHash } from "node:crypto";
import { indexedIP, parseCIDR } from "../network.js";

// Names, labels and addresses of a Cluster's Docker resources (pure). Every container, volume
// and network kubeforge makes carries the cluster's label, so that `down` and the action's
// post step remove exactly what kubeforge made and nothing else.

/** The stock image kubeforge's node image is built from by default. */
export const DEFAULT_BASE_IMAGE = "debian:bookworm-slim";

/** Label keys on everything kubeforge creates on the engine. */
export const LABELS = {
  /** The Cluster's name. */
  cluster: "dev.kubeforge.cluster",
  /** The node's name (containers and volumes). */
  node: "dev.kubeforge.node",
  /** The node's role (containers). */
  role: "dev.kubeforge.role",
  /** The recipe digest an image was built from (images). */
  recipe: "dev.kubeforge.node-image.recipe",
} as const;

// distribution/reference's grammar, simplified: [host[:port]/]path[:tag][@digest].
const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const HOST =
  "(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?";
const REFERENCE = new RegExp(
  `^${HOST}${COMPONENT}(?:/${COMPONENT})*(?::[\\w][\\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$`,
);

/** Whether `text` is an image reference Docker accepts ("debian:bookworm", "ghcr.io/o/n:t"). */
export function isImageReference(text: string): boolean {
  return text.length <= 255 && REFERENCE.test(text);
}

/** The engine-wide names of a cluster's resources: kubeforge-<cluster>[-<node>]. */
export function networkName(cluster: string): string {
  return `kubeforge-${cluster}`;
}
export function containerName(cluster: string, node: string): string {
  return `kubeforge-${cluster}-${node}`;
}
export function volumeName(cluster: string, node: string): string {
  return `kubeforge-${cluster}-${node}-var`;
}

/** The first node's index in its subnet: .1 is the bridge's gateway, the rest kept free. */
const FIRST_NODE_INDEX = 10;

/**
 * Stable addresses for `count` nodes in `subnet`, in the Cluster's node order (the same on every
 * run, so a container re-created keeps its address); undefined when the subnet is too small.
 */
export function nodeAddresses(subnet: string, count: number): string[] | undefined {
  const cidr = parseCIDR(subnet);
  if (!cidr || cidr.family !== 4) return undefined;
  const size = 2 ** (32 - cidr.prefix);
  // The last address is the broadcast address.
  if (FIRST_NODE_INDEX + count > size - 1) return undefined;
  return Array.from({ length: count }, (_, i) => indexedIP(subnet, FIRST_NODE_INDEX + i));
}

/** The bridge's own address in the subnet (Docker's default gateway: the first address). */
export function gatewayOf(subnet: string): string {
  return indexedIP(subnet, 1);
}

/**
 * Subnets to try for a cluster's network when the Cluster names none: /24s of 172.30.0.0/16,
 * starting at one derived from the cluster's name (two clusters rarely try the same first),
 * then the others in order. The engine refuses one that overlaps a network it has.
 */
export function candidateSubnets(cluster: string): string[] {
  const start = createHash("sha256").update(cluster).digest()[0]!;
  return Array.from({ length: 256 }, (_, i) => `172.30.${(start + i) % 256}.0/24`);
}
