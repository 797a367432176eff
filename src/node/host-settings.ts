import { CommandError, type Host } from "../remote/host.js";
import { lookPath } from "./lookpath.js";
import { writeIfChanged } from "./runtime/files.js";
import { installPackages, type PackageNames } from "./runtime/packages.js";

// What the kubelet and kube-proxy need from the host, as kubeadm's install docs ("Installing
// kubeadm", "Container runtimes") set it up by hand:
// - kernel modules overlay (containerd's snapshotter) and br_netfilter (bridged pod traffic seen
//   by iptables), loaded now and at boot;
// - net.bridge.bridge-nf-call-iptables/ip6tables = 1 and net.ipv4.ip_forward = 1 (and for
//   clusters with IPv6 ranges net.ipv6.conf.all.forwarding = 1), now and at boot;
// - swap off: the kubelet refuses to start with swap on unless its configuration allows swap
//   (failSwapOn, default true). The docs say "swapoff -a" and, to last across reboots,
//   disabling swap in /etc/fstab: active swap is turned off and fstab's swap lines are commented
//   out (the original fstab is kept once as fstab.kubeforge-orig). A KubeletConfiguration with
//   failSwapOn: false asks for a node with swap (NodeSwap, "Swap memory management" in the
//   Kubernetes docs): swap is left as it is, and kubeadm's preflight only warns about it;
// - the executables kubeadm's preflight checks (preflight/binaries.ts): installed when missing.
// The docs name their files k8s.conf; kubeforge writes kubeforge.conf instead, so that a file a
// user wrote by following the docs is never overwritten and `reset` can tell ours apart.
// In a container or network namespace without /lib/modules modprobe fails: a module the kernel
// already has (or whose sysctls are already there) is fine, with a warning.

export const MODULES_LOAD_FILE = "/etc/modules-load.d/kubeforge.conf";
export const SYSCTL_FILE = "/etc/sysctl.d/kubeforge.conf";
export const FSTAB = "/etc/fstab";
export const FSTAB_BACKUP = "/etc/fstab.kubeforge-orig";
const MARKER = "# Written by kubeforge";
/** Prefix of an fstab swap line kubeforge commented out (recognisable for an undo). */
export const FSTAB_SWAP_COMMENT = "#kubeforge-swap-off# ";

export const KERNEL_MODULES = ["overlay", "br_netfilter"] as const;

export const SYSCTLS: readonly { key: string; value: string }[] = [
  { key: "net.bridge.bridge-nf-call-iptables", value: "1" },
  { key: "net.bridge.bridge-nf-call-ip6tables", value: "1" },
  { key: "net.ipv4.ip_forward", value: "1" },
];

/**
 * For clusters with IPv6 ranges: kubeadm's "Dual-stack support with kubeadm" has every node set
 * net.ipv6.conf.all.forwarding = 1, and its preflight checks /proc/sys/net/ipv6/conf/default/
 * forwarding (writing "all" sets "default" too: Linux net/ipv6/addrconf.c
 * addrconf_fixup_forwarding).
 */
export const IPV6_FORWARDING = { key: "net.ipv6.conf.all.forwarding", value: "1" } as const;

/** Executables kubeadm's preflight looks for, and the packages that ship them. */
export const HOST_TOOLS: readonly { exe: string; required: boolean; packages: PackageNames }[] = [
  { exe: "ip", required: true, packages: { "apt-get": "iproute2", dnf: "iproute" } },
  { exe: "iptables", required: true, packages: { "apt-get": "iptables", dnf: "iptables" } },
  { exe: "mount", required: true, packages: { "apt-get": "mount", dnf: "util-linux" } },
  { exe: "nsenter", required: true, packages: { "apt-get": "util-linux", dnf: "util-linux" } },
  // Required by kubeadm before 1.32; kube-proxy of older versions still calls it.
  {
    exe: "conntrack",
    required: false,
    packages: { "apt-get": "conntrack", dnf: "conntrack-tools" },
  },
  { exe: "ebtables", required: false, packages: { "apt-get": "ebtables", dnf: "ebtables" } },
  { exe: "ethtool", required: false, packages: { "apt-get": "ethtool", dnf: "ethtool" } },
  { exe: "socat", required: false, packages: { "apt-get": "socat", dnf: "socat" } },
  { exe: "tc", required: false, packages: { "apt-get": "iproute2", dnf: "iproute-tc" } },
];

const QUERY = { readOnly: true, timeoutMs: 15_000 } as const;

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}

async function pathExists(host: Host, test: "-d" | "-e", path: string): Promise<boolean> {
  // /sys and /proc are the machine's own, also for a LocalHost with a rootfs: ask its shell.
  return (await host.exec(["test", test, path], QUERY)).code === 0;
}

/** What shows that the kernel provides a module's function even when it is not a module. */
async function moduleEffectPresent(host: Host, module: string): Promise<boolean> {
  if (module === "br_netfilter") {
    return pathExists(host, "-e", "/proc/sys/net/bridge/bridge-nf-call-iptables");
  }
  if (module === "overlay") {
    const r = await host.exec(["cat", "/proc/filesystems"], QUERY);
    return r.code === 0 && /\boverlay$/m.test(r.stdout);
  }
  return false;
}

async function loadModules(host: Host, changed: string[], log: (l: string) => void) {
  for (const module of KERNEL_MODULES) {
    if (await pathExists(host, "-d", `/sys/module/${module}`)) continue;
    const argv = ["modprobe", module];
    const r = await host.exec(argv, { sudo: true, timeoutMs: 30_000 });
    if (r.code === 0 && (await pathExists(host, "-d", `/sys/module/${module}`))) {
      changed.push(`loaded kernel module ${module}`);
      continue;
    }
    const why = r.code === 0 ? "it did not appear in /sys/module" : lastLine(r.stderr || r.stdout);
    if (await moduleEffectPresent(host, module)) {
      log(
        `WARNING: could not load kernel module ${module} (${why}), but the kernel already provides it (built in, or set up by the machine hosting this one); continuing`,
      );
      continue;
    }
    throw new Error(
      `${host.name}: kernel module ${module} is not loaded and "modprobe ${module}" failed: ${why}`,
    );
  }
  const text = `${MARKER}: kernel modules the kubelet's node needs (kubeadm install docs).\n${KERNEL_MODULES.join("\n")}\n`;
  if (await writeIfChanged(host, MODULES_LOAD_FILE, text, { mode: 0o644 })) {
    changed.push(`wrote ${MODULES_LOAD_FILE}`);
  }
}

async function applySysctls(host: Host, changed: string[], ipv6: boolean) {
  const sysctls = ipv6 ? [...SYSCTLS, IPV6_FORWARDING] : SYSCTLS;
  for (const { key, value } of sysctls) {
    // As root: sysctl lives in /usr/sbin, which a login user's PATH may lack (Debian's does).
    const current = await host.exec(["sysctl", "-n", key], { ...QUERY, sudo: true });
    if (current.code === 0 && current.stdout.trim() === value) continue;
    const argv = ["sysctl", "-w", `${key}=${value}`];
    const r = await host.exec(argv, { sudo: true, timeoutMs: 15_000 });
    if (r.code !== 0) {
      const was = current.code === 0 ? `is ${current.stdout.trim()}` : "does not exist";
      throw new Error(
        `${host.name}: sysctl ${key} ${was} and could not be set to ${value}: ${lastLine(r.stderr || r.stdout)}`,
      );
    }
    changed.push(`set ${key}=${value}`);
  }
  const text = [
    `${MARKER}: sysctls the kubelet and kube-proxy need (kubeadm install docs).`,
    ...sysctls.map(({ key, value }) => `${key} = ${value}`),
    "",
  ].join("\n");
  if (await writeIfChanged(host, SYSCTL_FILE, text, { mode: 0o644 })) {
    changed.push(`wrote ${SYSCTL_FILE}`);
  }
}

/** fstab with every active swap entry commented out; undefined when there is none. */
export function fstabWithoutSwap(fstab: string): string | undefined {
  let edited = false;
  const lines = fstab.split("\n").map((line) => {
    const fields = line.trim().split(/\s+/);
    if (line.trim().startsWith("#") || fields.length < 3 || fields[2] !== "swap") return line;
    edited = true;
    return `${FSTAB_SWAP_COMMENT}${line}`;
  });
  return edited ? lines.join("\n") : undefined;
}

async function turnSwapOff(
  host: Host,
  changed: string[],
  keepSwap: boolean,
  log: (l: string) => void,
) {
  const swaps = await host.exec(["cat", "/proc/swaps"], QUERY);
  // /proc/swaps: a header line, then one line per active swap area.
  const active = swaps.code === 0 ? swaps.stdout.trim().split("\n").slice(1).filter(Boolean) : [];
  if (keepSwap) {
    if (active.length > 0) {
      log(
        `swap left on (${active.map((l) => l.split(/\s+/)[0]).join(", ")}): the KubeletConfiguration sets failSwapOn: false`,
      );
    }
    return;
  }
  if (active.length > 0) {
    const argv = ["swapoff", "-a"];
    const r = await host.exec(argv, { sudo: true, timeoutMs: 5 * 60_000 });
    if (r.code !== 0) {
      throw new Error(
        `${host.name}: swap is on and "swapoff -a" failed (the kubelet does not start with swap on): ${lastLine(r.stderr || r.stdout)}`,
      );
    }
    changed.push(`turned swap off (${active.map((l) => l.split(/\s+/)[0]).join(", ")})`);
  }
  if (!(await host.exists(FSTAB))) return;
  const fstab = (await host.readFile(FSTAB)).toString();
  const edited = fstabWithoutSwap(fstab);
  if (edited === undefined) return;
  const mode = ((await host.stat(FSTAB))?.mode ?? 0o644) & 0o7777;
  if (!(await host.exists(FSTAB_BACKUP))) await host.writeFile(FSTAB_BACKUP, fstab, mode);
  await host.writeFile(FSTAB, edited, mode);
  changed.push(`commented out swap in ${FSTAB} (original kept as ${FSTAB_BACKUP})`);
}

async function installTools(
  host: Host,
  allowInstall: boolean,
  changed: string[],
  log: (l: string) => void,
) {
  const missing: (typeof HOST_TOOLS)[number][] = [];
  for (const tool of HOST_TOOLS) {
    if ((await lookPath(host, tool.exe)) === undefined) missing.push(tool);
  }
  if (missing.length === 0) return;
  const names = (tools: readonly { exe: string }[]) => tools.map((t) => t.exe).join(", ");
  if (!allowInstall) {
    const required = missing.filter((t) => t.required);
    if (required.length > 0) {
      throw new Error(
        `${host.name}: ${names(required)} not found and installing packages is not allowed; install them or allow installation`,
      );
    }
    log(
      `WARNING: ${names(missing)} not found (kubeadm's preflight warns); installing packages is not allowed`,
    );
    return;
  }
  const result = await installPackages(
    host,
    missing.map((t) => t.packages),
    log,
  );
  const stillMissing: (typeof HOST_TOOLS)[number][] = [];
  for (const tool of missing) {
    if ((await lookPath(host, tool.exe)) === undefined) stillMissing.push(tool);
  }
  if (result.installed.length > 0) changed.push(`installed ${result.installed.join(", ")}`);
  const detail = result.failed.map((f) => f.error).join("; ");
  const required = stillMissing.filter((t) => t.required);
  if (required.length > 0) {
    throw new Error(
      `${host.name}: ${names(required)} still not found after installing packages with ${result.manager}${detail ? `: ${detail}` : ""}`,
    );
  }
  if (stillMissing.length > 0) {
    log(`WARNING: ${names(stillMissing)} could not be installed${detail ? `: ${detail}` : ""}`);
  }
}

/**
 * Kernel modules, sysctls, swap (off unless keepSwap) and host tools as the kubelet needs them. Idempotent: returns
 * what it changed, and an empty list (saying so) when everything was in place.
 */
export async function prepareHostSettings(
  host: Host,
  opts: {
    allowInstall: boolean;
    log?: (line: string) => void;
    /** The kubelet runs with swap (KubeletConfiguration failSwapOn: false): leave it on. */
    keepSwap?: boolean;
    /** The cluster has IPv6 ranges (ipv6 or dual-stack): IPv6 forwarding on too. */
    ipv6Forwarding?: boolean;
  },
): Promise<{ changed: string[] }> {
  const log = opts.log ?? (() => undefined);
  const changed: string[] = [];
  const step = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (e) {
      if (e instanceof CommandError) throw new Error(`${what}: ${e.message}`, { cause: e });
      throw e;
    }
  };
  await step("kernel modules", () => loadModules(host, changed, log));
  await step("sysctls", () => applySysctls(host, changed, opts.ipv6Forwarding === true));
  await step("swap", () => turnSwapOff(host, changed, opts.keepSwap === true, log));
  await step("host tools", () => installTools(host, opts.allowInstall, changed, log));
  for (const c of changed) log(c);
  if (changed.length === 0) log("host settings already in place");
  return { changed };
}
