import type { ClusterNodeSpec } from "../config/cluster/types.js";
import { orderNodeIPs } from "../config/cluster/shortcuts.js";
import type { IPFamily } from "../config/network.js";
import { detectAdvertiseAddress, detectNodeIPs } from "../node/address.js";
import { KNOWN_CRI_SOCKET_PATHS, knownCRISocketsAt } from "../node/preflight/cri.js";
import { CommandError, type Host, type HostFacts } from "../remote/host.js";
import { presentPathsLoop } from "../remote/present-paths.js";
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

// The machine's OS, its cgroup version and the CRI sockets at kubeadm's known paths, asked in
// one command (one process start on the host instead of five) of the machine itself, also under
// --rootfs; as root: a runtime's folder need not be open to a user reached through sudo.
const MACHINE_MARK = "#kubeforge-machine";
const MACHINE_SCRIPT = [
  "cat /etc/os-release 2>/dev/null",
  `printf '\n%s\n' '${MACHINE_MARK}'`,
  "if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo 2; else echo 1; fi",
  presentPathsLoop("-S"),
].join("\n");

export interface Machine {
  os: string;
  cgroupVersion: 1 | 2;
  /** The known CRI endpoints whose socket exists, in kubeadm's order. */
  criSockets: string[];
}

export async function inspectMachine(host: Host): Promise<Machine> {
  const argv = ["sh", "-c", MACHINE_SCRIPT, "sh"];
  const r = await host.exec([...argv, ...KNOWN_CRI_SOCKET_PATHS], {
    sudo: true,
    readOnly: true,
    timeoutMs: 10_000,
  });
  const at = r.stdout.lastIndexOf(`\n${MACHINE_MARK}\n`);
  if (r.code !== 0 || at < 0) throw new CommandError(host.name, argv, r);
  const [cgroup, ...found] = r.stdout.slice(at + MACHINE_MARK.length + 2).split("\n");
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(r.stdout.slice(0, at))?.[1];
  return {
    os: pretty ?? "unknown OS",
    cgroupVersion: cgroup === "2" ? 2 : 1,
    criSockets: knownCRISocketsAt(found),
  };
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
  const [facts, addresses, found, condition] = await Promise.all([
    host.facts(),
    nodeAddresses(host, node, opts.dualStackPrimary),
    inspectMachine(host),
    nodeCondition(host, { cluster: opts.cluster, node: node.name, role: node.role }),
  ]);
  return {
    node,
    facts,
    ...addresses,
    os: found.os,
    cgroupVersion: found.cgroupVersion,
    criSocket: found.criSockets[0],
    condition,
  };
}

export function describeInventory(i: HostInventory): string {
  const gib = (i.facts.memoryBytes / 2 ** 30).toFixed(1);
  const state =
    i.condition.kind === "foreign" ? `not usable: ${i.condition.reason}` : i.condition.kind;
  return `${i.os}, ${i.facts.arch}, kernel ${i.facts.kernelRelease}, cgroup v${i.cgroupVersion}, ${i.facts.cpuCount} CPUs, ${gib} GiB, address ${i.nodeIPs?.join(",") ?? i.address}, runtime ${i.criSocket ?? "none found"}, ${state}`;
}
