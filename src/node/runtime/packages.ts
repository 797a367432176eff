import { CommandError, type Host } from "../../remote/host.js";
import { lookPath } from "../lookpath.js";

// Installing distribution packages on a node (apt-get on Debian/Ubuntu, dnf on Fedora/RHEL),
// for what a node lacks: containerd on a bare VM, conntrack/socat on a minimal image.

export type PackageManager = "apt-get" | "dnf";

/** A package per manager (names differ: conntrack vs conntrack-tools). */
export type PackageNames = Record<PackageManager, string>;

const INSTALL_TIMEOUT_MS = 15 * 60_000;

/** The host's package manager, or undefined when it has neither apt-get nor dnf. */
export async function packageManager(host: Host): Promise<PackageManager | undefined> {
  if ((await lookPath(host, "apt-get")) !== undefined) return "apt-get";
  if ((await lookPath(host, "dnf")) !== undefined) return "dnf";
  return undefined;
}

function installArgv(pm: PackageManager, names: string[]): string[] {
  return pm === "apt-get"
    ? [
        // No prompts from package scripts; wait for an unattended upgrade's dpkg lock
        // (a fresh cloud VM often runs one) instead of failing at once.
        "env",
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "-o",
        "DPkg::Lock::Timeout=300",
        "install",
        "-y",
        "--no-install-recommends",
        ...names,
      ]
    : ["dnf", "install", "-y", ...names];
}

async function install(host: Host, pm: PackageManager, names: string[]): Promise<void> {
  const argv = installArgv(pm, names);
  const r = await host.exec(argv, { sudo: true, timeoutMs: INSTALL_TIMEOUT_MS });
  if (r.code !== 0) throw new CommandError(host.name, argv, r);
}

/**
 * Installs packages with the host's manager (apt-get refreshes its lists first: a fresh VM may
 * have none). Returns the names that failed (tried one by one after a failed batch, so that one
 * unknown package does not hide the others); throws only when there is no package manager.
 */
export async function installPackages(
  host: Host,
  packages: PackageNames[],
  log: (line: string) => void = () => undefined,
): Promise<{
  manager: PackageManager;
  installed: string[];
  failed: { name: string; error: string }[];
}> {
  const pm = await packageManager(host);
  if (pm === undefined) {
    throw new Error(
      `${host.name}: cannot install packages: neither apt-get nor dnf is on the PATH`,
    );
  }
  const names = [...new Set(packages.map((p) => p[pm]))];
  if (names.length === 0) return { manager: pm, installed: [], failed: [] };
  log(`installing ${names.join(", ")} with ${pm}`);
  if (pm === "apt-get") {
    const update = [
      "env",
      "DEBIAN_FRONTEND=noninteractive",
      "apt-get",
      "-o",
      "DPkg::Lock::Timeout=300",
      "update",
    ];
    const r = await host.exec(update, { sudo: true, timeoutMs: INSTALL_TIMEOUT_MS });
    if (r.code !== 0) log(`warning: ${new CommandError(host.name, update, r).message}`);
  }
  try {
    await install(host, pm, names);
    return { manager: pm, installed: names, failed: [] };
  } catch (batchError) {
    if (names.length === 1) {
      return {
        manager: pm,
        installed: [],
        failed: [{ name: names[0]!, error: (batchError as Error).message }],
      };
    }
  }
  const installed: string[] = [];
  const failed: { name: string; error: string }[] = [];
  for (const name of names) {
    try {
      await install(host, pm, [name]);
      installed.push(name);
    } catch (e) {
      failed.push({ name, error: (e as Error).message });
    }
  }
  return { manager: pm, installed, failed };
}
