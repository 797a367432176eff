import type { ClusterNodeSpec } from "../config/cluster/types.js";
import { orderNodeIPs } from "../config/cluster/shortcuts.js";
import type { IPFamily } from "../config/network.js";
import { detectAdvertiseAddress, detectNodeIPs } from "../node/address.js";
import { presentCRISockets } from "../node/preflight/cri.js";
import type { Host, HostFacts } from "../remote/host.js";
import { nodeCondition, type NodeCondition } from "./node-state.js";

// What `up` learns about every host before it changes any: the machine, its address, its
// container runtime and what it already holds of a cluster.

export interface HostInventory {
  node: ClusterNodeSpec;
  facts: HostFacts;
  /**
   * The node's address: the Cluster file's, else the one kubeadm would detect; in a dual-stack
   * cluster, the primary family's of its pair.
   */
  address: string;
  /** Dual-stack only: the kubelet's node-ip pair, the primary family's address first. */
  nodeIPs?: [string, string];
  os: string;
  cgroupVersion: 1 | 2;
  /** The CRI socket found on the host, if any. */
  criSocket: string | undefined;
  condition: NodeCondition;
}

async function osName(host: Host): Promise<string> {
  const r = await host.exec(["cat", "/etc/os-release"], { readOnly: true, timeoutMs: 10_000 });
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(r.stdout)?.[1];
  return pretty ?? "unknown OS";
}

async function cgroupVersion(host: Host): Promise<1 | 2> {
  const r = await host.exec(["test", "-f", "/sys/fs/cgroup/cgroup.controllers"], {
    readOnly: true,
    timeoutMs: 10_000,
  });
  return r.code === 0 ? 2 : 1;
}

/** The node's addresses: one, or in a dual-stack cluster its node-ip pair, primary first. */
async function nodeAddresses(
  host: Host,
  node: ClusterNodeSpec,
  primary: IPFamily | undefined,
): Promise<{ address: string; nodeIPs?: [string, string] }> {
  const given = node.address?.split(",") ?? [];
  if (primary === undefined) {
    return { address: given[0] ?? (await detectAdvertiseAddress(host)) };
  }
  const nodeIPs = orderNodeIPs(await detectNodeIPs(host, given), primary);
  // Control planes advertise the primary family's address: kube-apiserver requires it.
  return { address: nodeIPs[0], nodeIPs };
}

export async function inspectHost(
  host: Host,
  node: ClusterNodeSpec,
  opts: { cluster: string; dualStackPrimary?: IPFamily | undefined },
): Promise<HostInventory> {
  const [facts, addresses, os, cgroup, socket, condition] = await Promise.all([
    host.facts(),
    nodeAddresses(host, node, opts.dualStackPrimary),
    osName(host),
    cgroupVersion(host),
    presentCRISockets(host).then((found) => found[0]),
    nodeCondition(host, { cluster: opts.cluster, node: node.name, role: node.role }),
  ]);
  return {
    node,
    facts,
    ...addresses,
    os,
    cgroupVersion: cgroup,
    criSocket: socket,
    condition,
  };
}

export function describeInventory(i: HostInventory): string {
  const gib = (i.facts.memoryBytes / 2 ** 30).toFixed(1);
  const state =
    i.condition.kind === "foreign" ? `not usable: ${i.condition.reason}` : i.condition.kind;
  return `${i.os}, ${i.facts.arch}, kernel ${i.facts.kernelRelease}, cgroup v${i.cgroupVersion}, ${i.facts.cpuCount} CPUs, ${gib} GiB, address ${i.nodeIPs?.join(",") ?? i.address}, runtime ${i.criSocket ?? "none found"}, ${state}`;
}
