import { execFileSync } from "node:child_process";

// Network namespaces as isolated test hosts (real kernel networking, no simulation): each gets
// its own loopback and addresses, so daemons can bind the fixed ports kubeadm's manifests use
// (2379, 2380, 6443...) without colliding with the machine or with each other.

export interface NetNamespace {
  name: string;
  /** argv prefix that runs a command inside the namespace. */
  exec: string[];
  remove(): void;
}

/** Creates a namespace with loopback up and `addresses` (CIDR form) on its loopback device. */
export function createNetNamespace(prefix: string, addresses: string[] = []): NetNamespace {
  const name = `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
  execFileSync("ip", ["netns", "add", name]);
  const inNs = (...argv: string[]) => execFileSync("ip", ["netns", "exec", name, ...argv]);
  try {
    inNs("ip", "link", "set", "lo", "up");
    for (const a of addresses) inNs("ip", "addr", "add", a, "dev", "lo");
  } catch (e) {
    execFileSync("ip", ["netns", "delete", name]);
    throw e;
  }
  return {
    name,
    exec: ["ip", "netns", "exec", name],
    remove: () => execFileSync("ip", ["netns", "delete", name]),
  };
}
