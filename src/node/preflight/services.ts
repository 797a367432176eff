// Service manager checks: kubeadm's ServiceCheck and FirewalldCheck (preflight/checks.go
// @00b6a4c7 ≈ v1.35) over its init system helpers (util/initsystem/initsystem_unix.go).
import type { Host } from "../../remote/host.js";
import { lookPath, type LookupOptions } from "./binaries.js";
import { type Check, makeCheck, pass, warn } from "./checks.js";

/** The questions kubeadm asks an init system. */
export interface InitSystem {
  serviceExists(service: string): Promise<boolean>;
  serviceIsEnabled(service: string): Promise<boolean>;
  serviceIsActive(service: string): Promise<boolean>;
  enableCommand(service: string): string;
}

export const NO_INIT_SYSTEM = "no supported init system detected, skipping checking for services";

async function output(host: Host, argv: string[]): Promise<{ code: number; stdout: string }> {
  return host.exec(argv, { readOnly: true, timeoutMs: 30_000 });
}

function systemd(host: Host, systemctl: string): InitSystem {
  return {
    // kubeadm looks only at stdout: a unit systemd does not know shows "Loaded: not-found".
    serviceExists: async (s) =>
      !(await output(host, [systemctl, "status", s])).stdout.includes("Loaded: not-found"),
    serviceIsEnabled: async (s) => (await output(host, [systemctl, "is-enabled", s])).code === 0,
    // A crash-looping kubelet is "activating"; kubeadm counts that as active.
    serviceIsActive: async (s) =>
      ["active", "activating"].includes(
        (await output(host, [systemctl, "is-active", s])).stdout.trim(),
      ),
    enableCommand: (s) => `systemctl enable ${s}.service`,
  };
}

function openrc(host: Host, rcService: string, rcUpdate: string): InitSystem {
  return {
    // openrc reports unknown services on stderr; kubeadm reads the combined output.
    serviceExists: async (s) => {
      const r = await host.exec([rcService, s, "status"], { readOnly: true, timeoutMs: 30_000 });
      return !`${r.stdout}${r.stderr}`.includes("does not exist");
    },
    serviceIsEnabled: async (s) =>
      (await output(host, [rcUpdate, "show", "default"])).stdout.includes(s),
    serviceIsActive: async (s) =>
      !(await output(host, [rcService, s, "status"])).stdout.includes("stopped"),
    enableCommand: (s) => `rc-update add ${s} default`,
  };
}

/**
 * kubeadm's GetInitSystem: systemctl on the PATH means systemd, else openrc; neither is
 * "no supported init system" (the service checks then warn and skip).
 */
export async function getInitSystem(
  host: Host,
  opts: LookupOptions = {},
): Promise<InitSystem | undefined> {
  const systemctl = await lookPath(host, "systemctl", opts);
  if (systemctl !== undefined) return systemd(host, systemctl);
  if ((await lookPath(host, "openrc", opts)) !== undefined) {
    return openrc(
      host,
      (await lookPath(host, "rc-service", opts)) ?? "rc-service",
      (await lookPath(host, "rc-update", opts)) ?? "rc-update",
    );
  }
  return undefined;
}

/**
 * Warnings when the service does not exist or is not enabled ("Service-<Service>": kubeadm
 * title-cases the name, so the kubelet's check is "Service-Kubelet"). kubeadm runs it for the
 * kubelet with CheckIfActive=false, so "not active" is not checked.
 */
export function serviceCheck(host: Host, service: string, opts: LookupOptions = {}): Check {
  const title = service.charAt(0).toUpperCase() + service.slice(1);
  return makeCheck(`Service-${title}`, async () => {
    const init = await getInitSystem(host, opts);
    if (init === undefined) return warn(NO_INIT_SYSTEM);
    if (!(await init.serviceExists(service))) return warn(`${service} service does not exist`);
    if (!(await init.serviceIsEnabled(service))) {
      return warn(`${service} service is not enabled, please run '${init.enableCommand(service)}'`);
    }
    return pass();
  });
}

/** Warning when firewalld is active, naming the ports that must be open (Go's %v of []int). */
export function firewalldCheck(host: Host, ports: number[], opts: LookupOptions = {}): Check {
  return makeCheck("Firewalld", async () => {
    const init = await getInitSystem(host, opts);
    if (init === undefined) return warn(NO_INIT_SYSTEM);
    if (!(await init.serviceExists("firewalld"))) return pass();
    if (await init.serviceIsActive("firewalld")) {
      return warn(
        `firewalld is active, please ensure ports [${ports.join(" ")}] are open or your cluster may not function correctly`,
      );
    }
    return pass();
  });
}
