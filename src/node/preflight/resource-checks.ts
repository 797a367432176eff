// Checks of the machine's resources and privileges. Names, messages and severities from
// kubeadm's preflight/checks.go, checks_linux.go (MemCheck) and checks_unix.go
// (IsPrivilegedUserCheck), kubernetes/kubernetes@00b6a4c7 (≈ v1.35) and @039c72e8 (≥ 1.32).
import type { Host } from "../../remote/host.js";
import { readFileIfExists } from "../../remote/host.js";
import { type Check, fail, makeCheck, pass, warn } from "./checks.js";

// kubeadm constants.go: ControlPlaneNumCPU, ControlPlaneMem (MB).
export const CONTROL_PLANE_NUM_CPU = 2;
export const CONTROL_PLANE_MEM_MB = 1700;

/**
 * Error unless the node's commands run as root. kubeadm runs it first, on its own, and checks
 * its own euid — root, since it is run with sudo. kubeforge is that sudo: a user whose sudo
 * works passes, as `sudo kubeadm` would; one without gets kubeadm's message and the reason.
 */
export function isPrivilegedUserCheck(host: Host): Check {
  return makeCheck("IsPrivilegedUser", async () => {
    const { uid, rootAccess } = await host.facts();
    if (uid === 0 || rootAccess) return pass();
    return fail(
      `user is not running as root (uid ${uid}) and cannot use sudo: run as root, allow the user password-less sudo, or (over SSH) set ssh.sudoPassword`,
    );
  });
}

/**
 * Error when the host has fewer CPUs than required. kubeadm counts runtime.NumCPU() (the CPUs
 * the process may run on); the host facts report the online CPUs, which is the same on CI
 * machines without CPU pinning.
 */
export function numCPUCheck(host: Host, required = CONTROL_PLANE_NUM_CPU): Check {
  return makeCheck("NumCPU", async () => {
    const n = (await host.facts()).cpuCount;
    return n < required
      ? fail(`the number of available CPUs ${n} is less than the required ${required}`)
      : pass();
  });
}

/**
 * Error when the RAM is below the minimum. kubeadm takes sysinfo's Totalram × Unit and divides
 * by 1024 twice (so "MB" are MiB, rounded down); the host facts' memoryBytes is that total.
 */
export function memCheck(host: Host, requiredMB = CONTROL_PLANE_MEM_MB): Check {
  return makeCheck("Mem", async () => {
    const actual = Math.floor((await host.facts()).memoryBytes / 1024 / 1024);
    return actual < requiredMB
      ? fail(`the system RAM (${actual} MB) is less than the minimum ${requiredMB} MB`)
      : pass();
  });
}

export const SWAP_WARNING =
  "swap is supported for cgroup v2 only. The kubelet must be properly configured to use swap. " +
  "Please refer to https://kubernetes.io/docs/concepts/architecture/nodes/#swap-memory, " +
  "or disable swap on the node";

/** Warning when /proc/swaps lists any swap area (more than its header line). */
export function swapCheck(host: Host): Check {
  return makeCheck("Swap", async () => {
    const swaps = await readFileIfExists(host, "/proc/swaps");
    if (swaps === undefined) return pass(); // no /proc/swaps: nothing to warn about
    // bufio.Scanner lines: a trailing newline does not make an extra line.
    const lines = swaps.toString().split("\n");
    if (lines.at(-1) === "") lines.pop();
    return lines.length > 1 ? warn(SWAP_WARNING) : pass();
  });
}
