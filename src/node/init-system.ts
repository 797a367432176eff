import { CommandError, type Host } from "../remote/host.js";
import { lookPath, type LookupOptions } from "./lookpath.js";

// kubeadm's util/initsystem (initsystem_unix.go): systemd when systemctl is on the PATH, else
// OpenRC. Preflight asks it questions; kubelet-start stops and restarts the kubelet through it.
// Questions are read-only commands. Stop and restart change the machine: they run with sudo and
// are not read-only, so a dry-run host reports them instead of running them.

export interface InitSystem {
  readonly name: "systemd" | "openrc";
  serviceExists(service: string): Promise<boolean>;
  serviceIsEnabled(service: string): Promise<boolean>;
  serviceIsActive(service: string): Promise<boolean>;
  /** Stops the service; throws naming the command that failed. */
  serviceStop(service: string): Promise<void>;
  /** Reloads unit files (systemd's daemon-reload; OpenRC has none to reload). */
  reloadUnits(): Promise<void>;
  /**
   * Reloads unit files (unless the caller just did) then restarts the service; throws naming
   * the failed command.
   */
  serviceRestart(service: string, opts?: { unitsReloaded?: boolean }): Promise<void>;
  /** The command a user runs to enable the service (for preflight's advice). */
  enableCommand(service: string): string;
}

/** kubeadm's GetInitSystem error. */
export const NO_INIT_SYSTEM_DETECTED = "no supported init system detected";

const QUERY_TIMEOUT_MS = 30_000;

function query(host: Host, argv: string[]) {
  return host.exec(argv, { readOnly: true, timeoutMs: QUERY_TIMEOUT_MS });
}

async function change(host: Host, argv: string[], what: string): Promise<void> {
  const result = await host.exec(argv, { sudo: true });
  if (result.code !== 0) {
    throw new Error(`${what}: ${new CommandError(host.name, argv, result).message}`);
  }
}

function systemd(host: Host, systemctl: string): InitSystem {
  const reloadUnits = () => change(host, [systemctl, "daemon-reload"], "failed to reload systemd");
  return {
    name: "systemd",
    // kubeadm looks only at stdout: a unit systemd does not know shows "Loaded: not-found".
    serviceExists: async (s) =>
      !(await query(host, [systemctl, "status", s])).stdout.includes("Loaded: not-found"),
    serviceIsEnabled: async (s) => (await query(host, [systemctl, "is-enabled", s])).code === 0,
    // A crash-looping kubelet is "activating"; kubeadm counts that as active. is-active exits
    // non-zero while activating, so the text decides.
    serviceIsActive: async (s) =>
      ["active", "activating"].includes(
        (await query(host, [systemctl, "is-active", s])).stdout.trim(),
      ),
    serviceStop: (s) => change(host, [systemctl, "stop", s], `failed to stop ${s}`),
    reloadUnits,
    serviceRestart: async (s, opts = {}) => {
      if (!opts.unitsReloaded) await reloadUnits();
      await change(host, [systemctl, "restart", s], `failed to restart ${s}`);
    },
    enableCommand: (s) => `systemctl enable ${s}.service`,
  };
}

function openrc(host: Host, rcService: string, rcUpdate: string): InitSystem {
  return {
    name: "openrc",
    // OpenRC reports unknown services on stderr; kubeadm reads the combined output.
    serviceExists: async (s) => {
      const r = await query(host, [rcService, s, "status"]);
      return !`${r.stdout}${r.stderr}`.includes("does not exist");
    },
    serviceIsEnabled: async (s) =>
      (await query(host, [rcUpdate, "show", "default"])).stdout.includes(s),
    serviceIsActive: async (s) =>
      !(await query(host, [rcService, s, "status"])).stdout.includes("stopped"),
    serviceStop: (s) => change(host, [rcService, s, "stop"], `failed to stop ${s}`),
    reloadUnits: () => Promise.resolve(),
    serviceRestart: (s) => change(host, [rcService, s, "restart"], `failed to restart ${s}`),
    enableCommand: (s) => `rc-update add ${s} default`,
  };
}

/**
 * kubeadm's GetInitSystem: systemctl on the PATH means systemd, else openrc, else undefined.
 * Commands run by name, as kubeadm runs them; with a test `searchPath`, by the path found there.
 */
export async function getInitSystem(
  host: Host,
  opts: LookupOptions = {},
): Promise<InitSystem | undefined> {
  const command = async (name: string) => {
    const found = await lookPath(host, name, opts);
    return { found, argv0: opts.searchPath === undefined ? name : (found ?? name) };
  };
  const systemctl = await command("systemctl");
  if (systemctl.found !== undefined) return systemd(host, systemctl.argv0);
  if ((await command("openrc")).found !== undefined) {
    return openrc(host, (await command("rc-service")).argv0, (await command("rc-update")).argv0);
  }
  return undefined;
}
