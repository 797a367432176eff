import { parseCIDR } from "../network.js";
import { DEFAULT_BASE_IMAGE, isImageReference, nodeAddresses } from "../docker/network-plan.js";
import { childPath, type FieldReader } from "./fields.js";
import type { NodeInput } from "./decode.js";
import type { ClusterDockerSpec, ClusterNodeSpec } from "./types.js";

// The Cluster's `host: docker` nodes and its `docker` section: containers kubeforge runs on the
// runner's Docker engine (src/remote/docker). What the fields mean; the engine is not asked.

export const DOCKER_FIELDS = ["image", "baseImage", "subnet"] as const;

export interface DockerInput {
  image?: string;
  baseImage?: string;
  subnet?: string;
}

const q = (v: unknown) => JSON.stringify(v);

/** Reads the written `docker` section. */
export function decodeDocker(value: unknown, r: FieldReader): DockerInput | undefined {
  const m = r.mapping(value, "docker", DOCKER_FIELDS);
  if (!m) return undefined;
  const out: DockerInput = {};
  for (const k of DOCKER_FIELDS) {
    const v = r.string(m[k], childPath("docker", k), { strict: true });
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * Problems of a `host: docker` node's other fields: the container gets its address from the
 * cluster's network and is reached through the engine, never over SSH.
 */
export function checkDockerNode(node: NodeInput, path: string, r: FieldReader): void {
  if (node.ssh !== undefined) {
    r.report(
      `${path}.ssh`,
      "the node is a Docker container; ssh settings apply only to ssh:// hosts",
    );
  }
  if (node.address !== undefined) {
    r.report(
      `${path}.address`,
      "a docker node's address comes from the cluster's Docker network (set docker.subnet to choose it)",
    );
  }
}

/**
 * The defaulted `docker` section when the Cluster has docker nodes (or wrote the section), with
 * every problem reported; undefined otherwise.
 */
export function buildDocker(
  input: DockerInput | undefined,
  nodes: readonly ClusterNodeSpec[],
  r: FieldReader,
): ClusterDockerSpec | undefined {
  const dockerNodes = nodes.filter((n) => n.host === "docker");
  if (input === undefined && dockerNodes.length === 0) return undefined;
  const out: ClusterDockerSpec = { baseImage: input?.baseImage ?? DEFAULT_BASE_IMAGE };
  for (const k of ["image", "baseImage"] as const) {
    const v = input?.[k];
    if (v === undefined) continue;
    if (!isImageReference(v)) {
      r.report(`docker.${k}`, `${q(v)} is not an image reference such as debian:bookworm`);
    } else if (k === "image") out.image = v;
  }
  if (input?.image !== undefined && input.baseImage !== undefined) {
    r.report("docker.baseImage", "is only used to build kubeforge's node image; image is set");
  }
  if (input?.subnet !== undefined) {
    const cidr = parseCIDR(input.subnet);
    if (!cidr || cidr.family !== 4 || cidr.network !== input.subnet.split("/")[0]) {
      r.report("docker.subnet", `${q(input.subnet)} is not an IPv4 network such as 172.30.5.0/24`);
    } else if (cidr.prefix > 28 || cidr.prefix < 8) {
      r.report("docker.subnet", `${q(input.subnet)}: the prefix must be /8 to /28`);
    } else if (nodeAddresses(input.subnet, dockerNodes.length) === undefined) {
      r.report(
        "docker.subnet",
        `${q(input.subnet)} has too few addresses for ${dockerNodes.length} docker nodes`,
      );
    } else out.subnet = input.subnet;
  }
  return out;
}
