import { execFile } from "node:child_process";
import { promisify } from "node:util";

// SIMULATION (test double). The pod network of a simulated node, in place of a CNI plugin: a
// Pod that is not hostNetwork gets an IPv4 address from the node's range, added to the node's
// eth0 as a /32 when its sandbox is set up and removed when it is torn down (the CNI ADD and DEL
// a runtime calls: k8s.io/cri-api RunPodSandbox/StopPodSandbox, containernetworking/cni SPEC.md).
// The other testbed hosts sit on the same bridged /24 and reach such an address by ARP, as
// Pods of a flat network are reachable from every node.
// SIMULATION LIMITS: the range is handed to the kubelet by the testbed (--pod-ip-range
// first-last, inside the bridge's /24), not the Node's spec.podCIDR; no network namespace per
// Pod: a Pod's server listens on its address in the node's namespace. Without a range a Pod
// gets no address of its own: the kubelet reports the node's IP and its server is not started.

const run = promisify(execFile);

const toInt = (ip: string) => ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
const toIP = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");

/** "10.0.0.100-10.0.0.109" → its addresses in order; throws on anything else. */
export function parsePodIPRange(range: string): string[] {
  const m = /^(\d+\.\d+\.\d+\.\d+)-(\d+\.\d+\.\d+\.\d+)$/.exec(range.trim());
  if (!m) throw new Error(`--pod-ip-range ${range}: want first-last IPv4 addresses`);
  const [first, last] = [toInt(m[1]!), toInt(m[2]!)];
  if (last < first || last - first > 1023) throw new Error(`--pod-ip-range ${range}: bad range`);
  return Array.from({ length: last - first + 1 }, (_, i) => toIP(first + i));
}

/** The first address of `range` not in `used`; undefined when all are taken. */
export function allocatePodIP(range: string[], used: Set<string>): string | undefined {
  return range.find((ip) => !used.has(ip));
}

/** CNI ADD: the address on the node's interface. An address already there (a runtime that was
 * killed before its DEL) is taken over. */
export async function addPodAddress(ip: string, dev = "eth0"): Promise<void> {
  try {
    await run("ip", ["addr", "add", `${ip}/32`, "dev", dev]);
  } catch (e) {
    if (!/File exists/.test(String((e as { stderr?: string }).stderr))) throw e;
  }
}

/** CNI DEL: the address removed; one already gone is fine (DEL is idempotent). */
export async function removePodAddress(ip: string, dev = "eth0"): Promise<void> {
  await run("ip", ["addr", "del", `${ip}/32`, "dev", dev]).catch(() => undefined);
}
