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
