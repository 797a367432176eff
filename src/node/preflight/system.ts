// kubeadm's SystemVerificationCheck (preflight/checks.go; checks_linux.go addOSValidator) over
// the validators of k8s.io/system-validators as vendored by Kubernetes 1.35 (v1.12.1,
// kubernetes/kubernetes#134744): KernelValidator, OSValidator, CgroupsValidator with the
// kubelet version. Specs from validators/types_unix.go @ce183508, the cgroup mount detection
// from validators/cgroup_validator_linux.go and its tests, the cgroups v1 verdict from
// system-validators#61 (error for a kubelet ≥ 1.35.0-0, else warning).
//
// Left out, on purpose: the kernel config validation (CONFIG_* options). kubeadm reads
// /proc/config.gz or /boot/config-<release> and, when neither exists, loads the "configs"
// kernel module to read it — a change to the machine that a preflight here must not make.
import semver from "semver";
import type { Host } from "../../remote/host.js";
import type { LookupOptions } from "../lookpath.js";
import { type Check, makeCheck } from "./checks.js";
import { getKubeletVersion } from "./version-checks.js";

/** DefaultSysSpec (Linux) of system-validators, the parts this check uses. */
export const SYS_SPEC = {
  os: "Linux",
  // 5.4, 5.10 and 5.15 LTS, or any 6.x and later.
  kernelVersions: [
    /^5\.4.*$/,
    /^5\.10.*$/,
    /^5\.15.*$/,
    /^([6-9]|[1-9][0-9]+)\.([0-9]+)\.([0-9]+).*$/,
  ],
  cgroupsV1: ["cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids"],
  cgroupsV1Optional: ["hugetlb", "blkio"],
  cgroupsV2: ["cpu", "cpuset", "devices", "freezer", "memory", "pids"],
  cgroupsV2Optional: ["hugetlb", "io"],
} as const;

export const CGROUPS_V1_MESSAGE =
  "cgroups v1 support is deprecated and will be removed in a future release. Please migrate to cgroups v2. " +
  "To explicitly enable cgroups v1 support for kubelet v1.35 or newer, you must set the kubelet configuration " +
  "option 'FailCgroupV1' to 'false'. You must also explicitly skip this validation. For more information, " +
  "see https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1";

export const VERIFICATION_FAILED =
  "[preflight] The system verification failed. Printing the output from the verification:";

export interface CgroupMount {
  path: string;
  /** undefined when the version depends on the files under a tmpfs /sys/fs/cgroup. */
  v2: boolean | undefined;
}

/**
 * system-validators' getUnifiedMountpoint over the text of /proc/mounts: a tmpfs on
 * /sys/fs/cgroup (systemd's v1 or hybrid layout) wins, then the first cgroup2 mount, then the
 * first cgroup (v1) mount; no cgroup mount at all is an error.
 */
export function cgroupMountpoint(mounts: string): CgroupMount | { error: string } {
  let v1: string | undefined;
  for (const line of mounts.split("\n")) {
    const [, path, type] = line.trim().split(/\s+/);
    if (path === undefined || type === undefined) continue;
    if (type === "tmpfs" && path === "/sys/fs/cgroup") return { path, v2: undefined };
    if (type === "cgroup2") return { path, v2: true };
    if (type === "cgroup" && v1 === undefined) v1 = path;
  }
  return v1 !== undefined ? { path: v1, v2: false } : { error: "cgroup mountpoint not found" };
}

/** Controllers enabled in /proc/cgroups (the v1 view): rows whose "enabled" column is not 0. */
export function cgroupV1Subsystems(procCgroups: string): string[] {
  return procCgroups
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => l.trim().split(/\s+/))
    .filter((parts) => parts.length >= 4 && parts[3] !== "0")
    .map((parts) => parts[0]!);
}

/** Whether cgroups v1 must stop the kubelet (FailCgroupV1 defaults to true from 1.35). */
export function cgroupsV1IsFatal(kubeletVersion: string): boolean {
  const v = semver.parse(kubeletVersion.replace(/^v/, ""));
  return v !== null && semver.gte(v, "1.35.0-0");
}

interface Report {
  lines: string[];
  warnings: string[];
  errors: string[];
}

function kernel(release: string, r: Report): void {
  r.lines.push(`KERNEL_VERSION: ${release}`);
  if (!SYS_SPEC.kernelVersions.some((re) => re.test(release))) {
    r.errors.push(`unsupported kernel release: ${release}`);
  }
}

async function os(host: Host, r: Report): Promise<void> {
  const u = await host.exec(["uname"], { readOnly: true, timeoutMs: 10_000 });
  if (u.code !== 0) {
    r.errors.push(
      `failed to get os name: ${(u.stderr || u.stdout).trim() || `exit status ${u.code}`}`,
    );
    return;
  }
  const name = u.stdout.trim();
  r.lines.push(`OS: ${name}`);
  if (name !== SYS_SPEC.os) r.errors.push(`unsupported operating system: ${name}`);
}

/** The wanted controllers missing from `present`, each reported as enabled or missing. */
function missingSubsystems(
  wanted: readonly string[],
  present: readonly string[],
  r: Report,
): string[] {
  const missing: string[] = [];
  for (const c of wanted) {
    const ok = present.includes(c);
    r.lines.push(`CGROUPS_${c.toUpperCase()}: ${ok ? "enabled" : "missing"}`);
    if (!ok) missing.push(c);
  }
  return missing;
}

async function readText(host: Host, path: string): Promise<string> {
  return (await host.readFile(path)).toString();
}

async function cgroups(host: Host, kubeletVersion: string, r: Report): Promise<void> {
  let mount: CgroupMount | { error: string };
  try {
    mount = cgroupMountpoint(await readText(host, "/proc/mounts"));
  } catch (e) {
    mount = { error: (e as Error).message };
  }
  if ("error" in mount) {
    r.errors.push(`cannot get the cgroups mountpoint: ${mount.error}`);
    return;
  }
  const v2 = mount.v2 ?? !(await host.exists("/sys/fs/cgroup/memory"));
  let present: string[];
  if (v2) {
    try {
      // devices and freezer are built into cgroup v2 and never listed in cgroup.controllers.
      const listed = await readText(host, `${mount.path}/cgroup.controllers`);
      present = ["devices", "freezer", ...listed.trim().split(/\s+/).filter(Boolean)];
    } catch (e) {
      r.errors.push(`failed to get cgroups v2 subsystems: ${(e as Error).message}`);
      return;
    }
  } else {
    (cgroupsV1IsFatal(kubeletVersion) ? r.errors : r.warnings).push(CGROUPS_V1_MESSAGE);
    try {
      present = cgroupV1Subsystems(await readText(host, "/proc/cgroups"));
    } catch (e) {
      r.errors.push(`failed to get cgroups v1 subsystems: ${(e as Error).message}`);
      return;
    }
  }
  const required = missingSubsystems(v2 ? SYS_SPEC.cgroupsV2 : SYS_SPEC.cgroupsV1, present, r);
  const optional = missingSubsystems(
    v2 ? SYS_SPEC.cgroupsV2Optional : SYS_SPEC.cgroupsV1Optional,
    present,
    r,
  );
  if (required.length > 0) r.errors.push(`missing required cgroups: ${required.join(" ")}`);
  if (optional.length > 0) r.warnings.push(`missing optional cgroups: ${optional.join(" ")}`);
}

/**
 * "SystemVerification": kernel release, OS and cgroups. Errors and warnings per validator as
 * kubeadm classifies them; on error the validators' report is printed first, as kubeadm does.
 */
export function systemVerificationCheck(host: Host, opts: LookupOptions = {}): Check {
  return makeCheck("SystemVerification", async () => {
    const r: Report = { lines: [], warnings: [], errors: [] };
    kernel((await host.facts()).kernelRelease, r);
    await os(host, r);
    const kubelet = await getKubeletVersion(host, opts);
    await cgroups(host, "version" in kubelet ? kubelet.version.version : "", r);
    return {
      warnings: r.warnings,
      errors: r.errors,
      info: r.errors.length > 0 ? [VERIFICATION_FAILED, ...r.lines] : [],
    };
  });
}
