import { existsSync, readFileSync } from "node:fs";

// Swap and kernel modules belong to the machine, not to a testbed host (a network and mount
// namespace): a host's "swapoff -a" or modprobe would change the machine itself. Node
// preparation tests run only where neither would happen (CI machines: no swap, no /lib/modules).

export const machineSwapOn = existsSync("/proc/swaps")
  ? readFileSync("/proc/swaps", "utf8").trim().split("\n").length > 1
  : false;

export const machineWouldLoadModules =
  existsSync("/lib/modules") &&
  !(existsSync("/sys/module/overlay") && existsSync("/sys/module/br_netfilter"));

/**
 * Whether the node preparation tests must be skipped on this machine (`unmet` names what else
 * they lack). Under CI they may not be: .ci/run turns swap off and loads the modules first, so a
 * CI machine where they still cannot run fails here instead of passing without them.
 */
export function skipNodePreparation(unmet: string[] = []): boolean {
  const reasons = [
    ...(machineSwapOn ? ["the machine has swap on"] : []),
    ...(machineWouldLoadModules ? ["overlay or br_netfilter is not loaded"] : []),
    ...unmet,
  ];
  if (reasons.length > 0 && process.env.CI) {
    throw new Error(`the node preparation tests cannot run under CI: ${reasons.join("; ")}`);
  }
  return reasons.length > 0;
}
