// SIMULATION (test double). node-ipam-controller with the RangeAllocator (the default
// --cidr-allocator-type): with --allocate-node-cidrs=true every Node without spec.podCIDRs gets
// the next free block of each --cluster-cidr (one per IP family) in spec.podCIDR and
// spec.podCIDRs; blocks of Nodes that carry them are occupied; the --service-cluster-ip-range is
// kept out when it overlaps; a deleted Node's blocks are released.
// k8s: cmd/kube-controller-manager/app/core.go newNodeIpamController (nothing runs unless
// --allocate-node-cidrs; --cluster-cidr: one CIDR, or two of different families;
// setNodeCIDRMaskSizes: defaults /24 and /64, --node-cidr-mask-size for single stack,
// --node-cidr-mask-size-ipv4/-ipv6 per family), pkg/controller/nodeipam/ipam/range_allocator.go
// (NewCIDRRangeAllocator: filterOutServiceRange, occupyCIDRs of listed nodes;
// AllocateOrOccupyCIDR; updateCIDRsAllocation: a node that meanwhile got CIDRs keeps them;
// ReleaseCIDR on delete), pkg/controller/nodeipam/ipam/cidrset/cidr_set.go.
// SIMULATION differences: the real allocator patches spec.podCIDRs without a precondition and
// relies on leader election for being alone; here, besides leader election, every assignment
// rebuilds the bitmap from a consistent list of Nodes first and writes with the Node's
// resourceVersion, so that no two allocators can give out one block or both set one Node's.
import type { StoredObject } from "../store.js";
import { CidrSet, parseCIDR } from "./cidr-set.js";
import type { ControllerContext, StopFn } from "./context.js";
import { WorkQueue } from "./queue.js";

export interface NodeIpamFlags {
  allocateNodeCIDRs?: boolean;
  clusterCIDR?: string;
  nodeCIDRMaskSize?: number;
  nodeCIDRMaskSizeIPv4?: number;
  nodeCIDRMaskSizeIPv6?: number;
  serviceClusterIPRange?: string;
}

export interface NodeIpamConfig {
  clusterCIDRs: string[];
  nodeMaskSizes: number[];
  serviceCIDRs: string[];
}

// k8s: cmd/kube-controller-manager/app/core.go defaultNodeMaskCIDRIPv4/IPv6
export const DEFAULT_NODE_MASK_IPV4 = 24;
export const DEFAULT_NODE_MASK_IPV6 = 64;

/**
 * The allocator's configuration from the controller manager's flags, validated as
 * kube-controller-manager does (its start fails with the same messages). Undefined when
 * --allocate-node-cidrs is off: the controller then does nothing.
 */
export function nodeIpamConfig(f: NodeIpamFlags): NodeIpamConfig | undefined {
  if (!f.allocateNodeCIDRs) return undefined;
  const list = (f.clusterCIDR ?? "")
    .trim()
    .split(",")
    .map((s) => s.trim());
  const families = list.map((c) => {
    try {
      return parseCIDR(c).bits;
    } catch {
      throw new Error(
        `node-ipam-controller: --cluster-cidr=${f.clusterCIDR ?? ""} is not a list of CIDRs (invalid CIDR address: ${c})`,
      );
    }
  });
  // k8s: core.go validateCIDRs
  if (list.length > 1 && new Set(families).size < 2) {
    throw new Error(
      `node-ipam-controller: len of ClusterCIDRs==${list.length} and they are not configured as dual stack (at least one from each IPFamily`,
    );
  }
  if (list.length > 2) {
    throw new Error(
      `node-ipam-controller: length of clusterCIDRs is:${list.length} more than max allowed of 2`,
    );
  }
  // k8s: core.go setNodeCIDRMaskSizes
  let v4 = DEFAULT_NODE_MASK_IPV4;
  let v6 = DEFAULT_NODE_MASK_IPV6;
  const { nodeCIDRMaskSize: one, nodeCIDRMaskSizeIPv4: m4, nodeCIDRMaskSizeIPv6: m6 } = f;
  if (list.length > 1) {
    if (one)
      throw new Error("usage of --node-cidr-mask-size is not allowed with dual-stack clusters");
    if (m4) v4 = m4;
    if (m6) v6 = m6;
  } else if (one) {
    if (m4 || m6) {
      throw new Error(
        "usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use IPFamily specific flags",
      );
    }
    v4 = v6 = one;
  } else {
    const ipv6 = families[0] === 128;
    if (m4) {
      if (ipv6)
        throw new Error(
          "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster",
        );
      v4 = m4;
    }
    if (m6) {
      if (!ipv6)
        throw new Error(
          "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster",
        );
      v6 = m6;
    }
  }
  const serviceCIDRs = (f.serviceClusterIPRange ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of serviceCIDRs) {
    try {
      parseCIDR(s);
    } catch {
      throw new Error(
        `node-ipam-controller: --service-cluster-ip-range lists "${s}", which is not a CIDR`,
      );
    }
  }
  return {
    clusterCIDRs: list,
    nodeMaskSizes: families.map((b) => (b === 128 ? v6 : v4)),
    serviceCIDRs,
  };
}

/** The allocator's state: one CidrSet per cluster CIDR, the service ranges kept out. */
export class RangeAllocator {
  readonly sets: CidrSet[];

  constructor(readonly cfg: NodeIpamConfig) {
    this.sets = cfg.clusterCIDRs.map((c, i) => new CidrSet(c, cfg.nodeMaskSizes[i]!));
    this.filterOutServiceRanges();
  }

  /** k8s: range_allocator.go filterOutServiceRange — only a range overlapping the cluster's. */
  private filterOutServiceRanges(): void {
    for (const svc of this.cfg.serviceCIDRs) {
      for (const set of this.sets) {
        try {
          set.occupy(svc);
        } catch {
          // Not overlapping (or of the other family): nothing to keep out.
        }
      }
    }
  }

  /**
   * Rebuilds the bitmap from the Nodes as listed (their podCIDRs), keeping the next-fit position.
   * Returns the problems found (garbage or out-of-range CIDRs), which the real allocator reports.
   */
  resync(nodes: StoredObject[]): string[] {
    const problems: string[] = [];
    for (const s of this.sets) s.clear();
    this.filterOutServiceRanges();
    for (const n of nodes) problems.push(...this.occupy(n));
    return problems;
  }

  /** k8s: range_allocator.go occupyCIDRs */
  occupy(node: StoredObject): string[] {
    const problems: string[] = [];
    podCIDRsOf(node).forEach((cidr, idx) => {
      const set = this.sets[idx];
      if (!set) {
        problems.push(
          `node:${node.metadata.name} has an allocated cidr: ${cidr} at index:${idx} that does not exist in cluster cidrs configuration`,
        );
        return;
      }
      try {
        set.occupy(cidr);
      } catch (e) {
        problems.push(
          `failed to mark cidr[${cidr}] at idx [${idx}] as occupied for node: ${node.metadata.name}: ${(e as Error).message}`,
        );
      }
    });
    return problems;
  }

  /** k8s: range_allocator.go ReleaseCIDR */
  release(node: StoredObject): void {
    podCIDRsOf(node).forEach((cidr, idx) => {
      try {
        this.sets[idx]?.release(cidr);
      } catch {
        // Out of range: never occupied.
      }
    });
  }

  /** One block of every cluster CIDR; all or nothing. k8s: AllocateOrOccupyCIDR */
  allocate(): string[] {
    const out: string[] = [];
    try {
      for (const set of this.sets) out.push(set.allocateNext());
    } catch (e) {
      out.forEach((c, i) => this.sets[i]!.release(c));
      throw e;
    }
    return out;
  }
}

export function podCIDRsOf(node: StoredObject): string[] {
  const spec = (node.spec ?? {}) as { podCIDR?: string; podCIDRs?: string[] };
  if (spec.podCIDRs && spec.podCIDRs.length > 0) return spec.podCIDRs;
  return spec.podCIDR ? [spec.podCIDR] : [];
}

const NODE = { apiVersion: "v1", kind: "Node" };

export function startNodeIpam(ctx: ControllerContext, cfg: NodeIpamConfig): StopFn {
  const { store, log } = ctx;
  const allocator = new RangeAllocator(cfg);
  const nodeInfo = store.infoForKind("v1", "Node");

  /** A consistent list (an etcd-backed store's cache brought up to etcd first). */
  function listNodes(): StoredObject[] {
    store.syncResource(nodeInfo);
    return store.list(NODE.apiVersion, NODE.kind);
  }

  function assign(name: string): void {
    for (let attempt = 0; attempt < 5; attempt++) {
      const nodes = listNodes();
      const node = nodes.find((n) => n.metadata.name === name);
      if (!node || node.metadata.deletionTimestamp) return;
      // A node that has CIDRs keeps them (updateCIDRsAllocation: "Node already has a CIDR
      // allocated"); they are occupied by the resync of the next assignment.
      if (podCIDRsOf(node).length > 0) return;
      for (const p of allocator.resync(nodes)) log(`node-ipam-controller: ${p}`);
      const cidrs = allocator.allocate();
      const spec = { ...((node.spec ?? {}) as Record<string, unknown>) };
      spec.podCIDR = cidrs[0];
      spec.podCIDRs = cidrs;
      try {
        // node carries the resourceVersion just listed: a concurrent change is a conflict.
        store.update({ ...node, spec });
        log(`node-ipam-controller: Set Node PodCIDR node="${name}" CIDR=[${cidrs.join(" ")}]`);
        return;
      } catch (e) {
        allocator.release({ ...node, spec });
        if ((e as { code?: number }).code !== 409) throw e;
      }
    }
    throw new Error(`node ${name} kept changing while its CIDR was assigned`);
  }

  const queue = new WorkQueue(assign, (name, e) =>
    log(
      `node-ipam-controller: failed to allocate a CIDR for node ${name}: ${(e as Error).message}`,
    ),
  );
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.group !== "" || ev.resource.kind !== "Node") return;
    if (ev.type === "DELETED") allocator.release(ev.object);
    else if (podCIDRsOf(ev.object).length === 0) queue.add(ev.object.metadata.name);
    else for (const p of allocator.occupy(ev.object)) log(`node-ipam-controller: ${p}`);
  });
  const initial = listNodes();
  for (const p of allocator.resync(initial)) log(`node-ipam-controller: ${p}`);
  for (const n of initial) if (podCIDRsOf(n).length === 0) queue.add(n.metadata.name);
  log(`node-ipam-controller: Starting range CIDR allocator (${cfg.clusterCIDRs.join(",")})`);
  return () => {
    unsubscribe();
    queue.stop();
  };
}
