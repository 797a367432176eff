// Executables on the host: kubeadm's InPathCheck and addExecChecks
// (preflight/checks.go and checks_linux.go, kubernetes/kubernetes@039c72e8, ≥ 1.32).
import semver from "semver";
import type { Host } from "../../remote/host.js";
import { type Check, fail, makeCheck, pass, pathLabel, warn } from "./checks.js";

/** How commands are found on the host. */
export interface LookupOptions {
  /**
   * The PATH to search instead of the host's own (tests point it at a folder they control).
   * Executables found are then run by their absolute path.
   */
  searchPath?: string;
}

/**
 * The absolute path of an executable on the host's PATH, or undefined (Go's exec.LookPath, run
 * on the host itself so that it also works over SSH). Uses the POSIX `command -v` of `sh`.
 */
export async function lookPath(
  host: Host,
  name: string,
  opts: LookupOptions = {},
): Promise<string | undefined> {
  const argv =
    opts.searchPath === undefined
      ? ["sh", "-c", 'command -v "$1"', "sh", name]
      : ["sh", "-c", 'PATH="$2"; command -v "$1"', "sh", name, opts.searchPath];
  const r = await host.exec(argv, { readOnly: true, timeoutMs: 10_000 });
  const found = r.stdout.trim().split("\n")[0] ?? "";
  // `command -v` prints a builtin's bare name; only a path is an executable on disk.
  return r.code === 0 && found.startsWith("/") ? found : undefined;
}

/** Error (mandatory) or warning (optional) when the executable is not on the PATH. */
export function inPathCheck(
  host: Host,
  executable: string,
  mandatory: boolean,
  opts: LookupOptions = {},
): Check {
  return makeCheck(`FileExisting-${pathLabel(executable)}`, async () => {
    if ((await lookPath(host, executable, opts)) !== undefined) return pass();
    const message = `${executable} not found in system path`;
    return mandatory ? fail(message) : warn(message);
  });
}

/** kubeadm's Linux exec checks, in its order. */
export function execChecks(
  host: Host,
  kubernetesVersion: string,
  opts: LookupOptions = {},
): Check[] {
  const checks: Check[] = [];
  // kube-proxy stopped needing conntrack in 1.32 (kubernetes/kubernetes#126952).
  const v = semver.parse(kubernetesVersion, { loose: true });
  if (v !== null && semver.lt(v, "1.32.0")) checks.push(inPathCheck(host, "conntrack", true, opts));
  for (const exe of ["ip", "iptables", "mount", "nsenter"]) {
    checks.push(inPathCheck(host, exe, true, opts));
  }
  for (const exe of ["ebtables", "ethtool", "socat", "tc", "touch"]) {
    checks.push(inPathCheck(host, exe, false, opts));
  }
  return checks;
}
