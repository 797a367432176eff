// The container runtime check. kubeadm (preflight/checks.go addCommonChecks, @00b6a4c7 ≈ v1.35)
// connects to nodeRegistration.criSocket first: when that fails it only logs
// "[preflight] WARNING: Couldn't create the interface used for talking to the container runtime"
// and leaves the CRI check out; when it works, the "CRI" check asks the runtime for its status
// (ContainerRuntime.IsRunning) and fails when it does not answer or is not ready.
// kubeforge talks CRI through `crictl` on the host when it is installed; without crictl it can
// only see whether the socket exists, and then trusts a present socket.
import type { Host } from "../../remote/host.js";
import { lookPath, type LookupOptions } from "../lookpath.js";
import { type Check, fail, makeCheck, pass } from "./checks.js";

/** The socket path of a CRI endpoint ("unix:///run/containerd/containerd.sock" or a bare path). */
export function criSocketPath(endpoint: string): string {
  return endpoint.startsWith("unix://") ? endpoint.slice("unix://".length) : endpoint;
}

/** kubeadm: util/runtime defaultKnownCRISockets, in its order. */
export const KNOWN_CRI_SOCKETS = [
  "unix:///var/run/containerd/containerd.sock",
  "unix:///var/run/crio/crio.sock",
  "unix:///var/run/cri-dockerd.sock",
];

/** The known CRI endpoints whose socket exists on the host, in kubeadm's order. */
export async function presentCRISockets(host: Host): Promise<string[]> {
  const found: string[] = [];
  for (const endpoint of KNOWN_CRI_SOCKETS) {
    // /run and /var/run are the machine's own, also under --rootfs: ask the host's shell.
    // As root: the runtime's folder need not be open to a user reached through sudo.
    const r = await host.exec(["test", "-S", criSocketPath(endpoint)], {
      sudo: true,
      readOnly: true,
      timeoutMs: 10_000,
    });
    if (r.code === 0) found.push(endpoint);
  }
  return found;
}

export type CRIConnection =
  { connected: true; crictl: string | undefined } | { connected: false; reason: string };

/** kubeadm's ContainerRuntime.Connect, done with crictl (a Version call) or a socket test. */
export async function connectCRI(
  host: Host,
  endpoint: string,
  opts: LookupOptions = {},
): Promise<CRIConnection> {
  const crictl = await lookPath(host, "crictl", opts);
  if (crictl !== undefined) {
    const r = await host.exec([crictl, "--runtime-endpoint", endpoint, "version"], {
      sudo: true,
      readOnly: true,
      timeoutMs: 30_000,
    });
    if (r.code === 0) return { connected: true, crictl };
    const detail = (r.stderr || r.stdout).trim().split("\n").at(-1) ?? "";
    return {
      connected: false,
      reason: `validate CRI v1 runtime API for endpoint "${endpoint}": ${detail}`,
    };
  }
  // /run and /var/run are real host paths even under --rootfs: ask the host, not the file view.
  const socket = criSocketPath(endpoint);
  const r = await host.exec(["test", "-S", socket], {
    sudo: true,
    readOnly: true,
    timeoutMs: 10_000,
  });
  return r.code === 0
    ? { connected: true, crictl: undefined }
    : { connected: false, reason: `no container runtime socket at ${socket}` };
}

export function criConnectWarning(reason: string): string {
  return `[preflight] WARNING: Couldn't create the interface used for talking to the container runtime: ${reason}`;
}

interface CRIInfo {
  status?: {
    conditions?: { type?: string; status?: boolean; reason?: string; message?: string }[];
  };
}

/**
 * The "CRI" check: error when the runtime does not report its status, or reports the
 * RuntimeReady condition false [M: condition handling after kubeadm's IsRunning].
 */
export function criCheck(host: Host, endpoint: string, connection: CRIConnection): Check {
  return makeCheck("CRI", async () => {
    if (!connection.connected || connection.crictl === undefined) return pass();
    const r = await host.exec([connection.crictl, "--runtime-endpoint", endpoint, "info"], {
      sudo: true,
      readOnly: true,
      timeoutMs: 30_000,
    });
    if (r.code !== 0) {
      const detail = (r.stderr || r.stdout).trim().split("\n").at(-1) ?? "";
      return fail(`container runtime is not running: ${detail}`);
    }
    let info: CRIInfo;
    try {
      info = JSON.parse(r.stdout) as CRIInfo;
    } catch {
      return fail("container runtime is not running: its status is not JSON");
    }
    for (const c of info.status?.conditions ?? []) {
      if (c.type === "RuntimeReady" && c.status !== true) {
        return fail(
          `container runtime condition "RuntimeReady" is not true. reason: ${c.reason ?? ""}, message: ${c.message ?? ""}`,
        );
      }
    }
    return pass();
  });
}
