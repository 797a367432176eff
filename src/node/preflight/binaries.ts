// Executables on the host: kubeadm's InPathCheck and addExecChecks
// (preflight/checks.go and checks_linux.go, kubernetes/kubernetes@039c72e8, ≥ 1.32).
import semver from "semver";
import type { Host } from "../../remote/host.js";
import { lookPath, type LookupOptions } from "../lookpath.js";
import { type Check, fail, makeCheck, pass, pathLabel, warn } from "./checks.js";

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
