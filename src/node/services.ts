import { CommandError, type Host } from "../remote/host.js";

// Service control through the host's init system, as kubeadm's util/initsystem does it:
// systemd (systemctl) first, then OpenRC (rc-service). Commands that change the machine run
// with sudo and are not read-only, so a dry-run host reports them instead of running them.

export type InitSystem = "systemd" | "openrc";

/** Thrown when the host has neither systemctl nor OpenRC (kubeadm's GetInitSystem error). */
export class NoInitSystemError extends Error {
  constructor(host: string) {
    super(`${host}: no supported init system detected (neither systemctl nor openrc was found)`);
    this.name = "NoInitSystemError";
  }
}

/** The init system whose tools are installed (kubeadm looks for the binaries in PATH). */
export async function detectInitSystem(host: Host): Promise<InitSystem | undefined> {
  if (await installed(host, ["systemctl", "--version"])) return "systemd";
  if (await installed(host, ["openrc", "--version"])) return "openrc";
  return undefined;
}

async function installed(host: Host, argv: string[]): Promise<boolean> {
  // 127: the command was not found (exec reports it, the shell of an SSH session too).
  return (await host.exec(argv, { readOnly: true })).code !== 127;
}

async function requireInitSystem(host: Host): Promise<InitSystem> {
  const system = await detectInitSystem(host);
  if (!system) throw new NoInitSystemError(host.name);
  return system;
}

async function runOrThrow(host: Host, argv: string[], what: string): Promise<void> {
  const result = await host.exec(argv, { sudo: true });
  if (result.code !== 0) {
    throw new Error(`${what}: ${new CommandError(host.name, argv, result).message}`);
  }
}

/**
 * Restarts a service: `systemctl daemon-reload` (so changed units and drop-ins are read) then
 * `systemctl restart <name>`; `rc-service <name> restart` on OpenRC.
 */
export async function restartService(host: Host, name: string): Promise<void> {
  if ((await requireInitSystem(host)) === "openrc") {
    await runOrThrow(host, ["rc-service", name, "restart"], `failed to restart ${name}`);
    return;
  }
  await runOrThrow(host, ["systemctl", "daemon-reload"], "failed to reload systemd");
  await runOrThrow(host, ["systemctl", "restart", name], `failed to restart ${name}`);
}

/** Stops a service (`systemctl stop <name>`, `rc-service <name> stop`). */
export async function stopService(host: Host, name: string): Promise<void> {
  if ((await requireInitSystem(host)) === "openrc") {
    await runOrThrow(host, ["rc-service", name, "stop"], `failed to stop ${name}`);
    return;
  }
  await runOrThrow(host, ["systemctl", "stop", name], `failed to stop ${name}`);
}

/** Whether the init system knows the service (kubeadm's ServiceExists). */
export async function serviceExists(host: Host, name: string): Promise<boolean> {
  if ((await requireInitSystem(host)) === "openrc") {
    return (await host.exec(["rc-service", "-e", name], { readOnly: true })).code === 0;
  }
  const result = await host.exec(["systemctl", "status", name], { readOnly: true });
  return !result.stdout.includes("Loaded: not-found");
}

/** Whether the service is running or starting (kubeadm's ServiceIsActive). */
export async function isServiceActive(host: Host, name: string): Promise<boolean> {
  if ((await requireInitSystem(host)) === "openrc") {
    const result = await host.exec(["rc-service", name, "status"], { readOnly: true });
    return !result.stdout.includes("stopped");
  }
  // is-active exits non-zero while "activating"; the text decides.
  const result = await host.exec(["systemctl", "is-active", name], { readOnly: true });
  const state = result.stdout.trim();
  return state === "active" || state === "activating";
}
