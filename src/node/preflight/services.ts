// Service manager checks: kubeadm's ServiceCheck and FirewalldCheck (preflight/checks.go
// @00b6a4c7 ≈ v1.35) over the init system (src/node/init-system.ts).
import type { Host } from "../../remote/host.js";
import { getInitSystem, NO_INIT_SYSTEM_DETECTED } from "../init-system.js";
import type { LookupOptions } from "../lookpath.js";
import { type Check, makeCheck, pass, warn } from "./checks.js";

export const NO_INIT_SYSTEM = `${NO_INIT_SYSTEM_DETECTED}, skipping checking for services`;

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
