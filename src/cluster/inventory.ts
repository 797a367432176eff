import type { ClusterNodeSpec } from "../config/cluster/types.js";
import { detectAdvertiseAddress } from "../node/address.js";
import { presentCRISockets } from "../node/preflight/cri.js";
import type { Host, HostFacts } from "../remote/host.js";
import { nodeCondition, type NodeCondition } from "./node-state.js";

// What `up` learns about every host before it changes any: the machine, its address, its
// container runtime and what it already holds of a cluster.

export interface HostInventory {
  node: ClusterNodeSpec;
  facts: HostFacts;
  /** The node's address: the Cluster file's, else the one kubeadm would detect. */
  address: string;
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

export async function inspectHost(
  host: Host,
  node: ClusterNodeSpec,
  cluster: string,
): Promise<HostInventory> {
  const [facts, address, os, cgroup, socket, condition] = await Promise.all([
    host.facts(),
    node.address ? Promise.resolve(node.address) : detectAdvertiseAddress(host),
    osName(host),
    cgroupVersion(host),
    presentCRISockets(host).then((found) => found[0]),
    nodeCondition(host, { cluster, node: node.name, role: node.role }),
  ]);
  return { node, facts, address, os, cgroupVersion: cgroup, criSocket: socket, condition };
}

export function describeInventory(i: HostInventory): string {
  const gib = (i.facts.memoryBytes / 2 ** 30).toFixed(1);
  const state =
    i.condition.kind === "foreign" ? `not usable: ${i.condition.reason}` : i.condition.kind;
  return `${i.os}, ${i.facts.arch}, kernel ${i.facts.kernelRelease}, cgroup v${i.cgroupVersion}, ${i.facts.cpuCount} CPUs, ${gib} GiB, address ${i.address}, runtime ${i.criSocket ?? "none found"}, ${state}`;
}
