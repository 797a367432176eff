import { pause } from "../../remote/interruption.js";
import type { Host } from "../../remote/host.js";
import { getInitSystem } from "../init-system.js";
import { lookPath } from "../lookpath.js";
import { socketExists } from "./socket.js";
import {
  CONTAINERD_CONFIG_PATH,
  KUBEFORGE_MARKER,
  REGISTRY_HOSTS_DIR,
  containerdConfig,
  registryHostsFiles,
  type ContainerdSettings,
} from "./containerd-config.js";
import { writeIfChanged } from "./files.js";
import { installPackages } from "./packages.js";

// containerd on a node: found (hosted runners have it for Docker) or installed from the
// distribution's packages, configured for the kubelet, restarted when its configuration changed,
// and proven to answer CRI before the kubelet needs it.

export interface RuntimeResult {
  criSocket: string;
  changed: boolean;
  installed: boolean;
}

export interface PrepareContainerdOptions {
  allowInstall: boolean;
  log?: (line: string) => void;
  /** How long to wait for the CRI socket to answer after a (re)start (default 60 s). */
  waitTimeoutMs?: number;
  /** Between two CRI checks (default 500 ms). */
  waitIntervalMs?: number;
}

/** kubeadm's containerd endpoint (util/runtime defaultKnownCRISockets; /var/run links to /run). */
export const CONTAINERD_CRI_SOCKET = "unix:///var/run/containerd/containerd.sock";
const SOCKET_PATH = "/run/containerd/containerd.sock";
export const CONTAINERD_CONFIG_BACKUP = `${CONTAINERD_CONFIG_PATH}.kubeforge-orig`;
const SERVICE = "containerd";

interface CRIStatus {
  ready: boolean;
  detail: string;
}

/**
 * Whether containerd answers CRI: `crictl info` when crictl is installed (the kubelet's own
 * question), else `ctr plugins ls` (the CRI plugin's load status), else only the socket.
 */
async function criStatus(host: Host): Promise<CRIStatus> {
  const crictl = await lookPath(host, "crictl");
  if (crictl !== undefined) {
    const r = await host.exec([crictl, "--runtime-endpoint", CONTAINERD_CRI_SOCKET, "info"], {
      sudo: true,
      readOnly: true,
      timeoutMs: 15_000,
    });
    if (r.code !== 0) return { ready: false, detail: lastLine(r.stderr || r.stdout) };
    try {
      const info = JSON.parse(r.stdout) as {
        status?: { conditions?: { type?: string; status?: boolean; message?: string }[] };
      };
      const runtime = info.status?.conditions?.find((c) => c.type === "RuntimeReady");
      if (runtime !== undefined && runtime.status !== true) {
        return { ready: false, detail: `RuntimeReady is false: ${runtime.message ?? ""}` };
      }
    } catch {
      return { ready: false, detail: "crictl info did not print JSON" };
    }
    return { ready: true, detail: "" };
  }
  const ctr = await lookPath(host, "ctr");
  if (ctr !== undefined) {
    const r = await host.exec([ctr, "--address", SOCKET_PATH, "plugins", "ls"], {
      sudo: true,
      readOnly: true,
      timeoutMs: 15_000,
    });
    if (r.code !== 0) return { ready: false, detail: lastLine(r.stderr || r.stdout) };
    const line = r.stdout.split("\n").find((l) => /^io\.containerd\.grpc\.v1\s+cri\s/.test(l));
    if (line === undefined) return { ready: false, detail: "the CRI plugin is not loaded" };
    const status = line.trim().split(/\s+/).at(-1);
    return status === "ok"
      ? { ready: true, detail: "" }
      : { ready: false, detail: `the CRI plugin's status is "${status ?? ""}"` };
  }
  return (await socketExists(host, SOCKET_PATH))
    ? { ready: true, detail: "" }
    : { ready: false, detail: `no socket at ${SOCKET_PATH}` };
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}

async function waitForCRI(host: Host, timeoutMs: number, intervalMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let status = await criStatus(host);
  while (!status.ready && Date.now() < deadline) {
    await pause(intervalMs);
    status = await criStatus(host);
  }
  if (!status.ready) {
    throw new Error(
      `${host.name}: containerd did not answer on ${CONTAINERD_CRI_SOCKET} within ${Math.round(timeoutMs / 1000)}s (${status.detail}); see "journalctl -u containerd"`,
    );
  }
}

/** Removes hosts.toml files kubeforge wrote for registries no longer configured. */
async function removeStaleHostsFiles(host: Host, keep: Set<string>): Promise<string[]> {
  const removed: string[] = [];
  for (const registry of await host.readDir(REGISTRY_HOSTS_DIR)) {
    const path = `${REGISTRY_HOSTS_DIR}/${registry}/hosts.toml`;
    if (keep.has(path) || !(await host.exists(path))) continue;
    if ((await host.readFile(path)).toString().startsWith(KUBEFORGE_MARKER)) {
      await host.remove(path);
      removed.push(path);
    }
  }
  return removed;
}

/**
 * Finds or installs containerd, writes its configuration (a foreign config.toml is kept once as
 * config.toml.kubeforge-orig) and registry hosts files, restarts it when the configuration
 * changed or it is not running, and waits until it answers CRI. Returns kubeadm's containerd
 * endpoint.
 */
export async function prepareContainerd(
  host: Host,
  s: ContainerdSettings,
  opts: PrepareContainerdOptions,
): Promise<RuntimeResult> {
  const log = opts.log ?? (() => undefined);
  // Bad settings fail before anything on the node changes.
  const config = containerdConfig(s);
  const hostsFiles = registryHostsFiles(s.registryMirrors ?? {});

  let installed = false;
  const binary = await lookPath(host, "containerd");
  const socket = await socketExists(host, SOCKET_PATH);
  if (binary === undefined && !socket) {
    if (!opts.allowInstall) {
      throw new Error(
        `${host.name}: containerd is not installed (no containerd on the PATH, no socket at ${SOCKET_PATH}) and installing packages is not allowed; install containerd or allow installation`,
      );
    }
    const result = await installPackages(
      host,
      [{ "apt-get": "containerd", dnf: "containerd" }],
      log,
    );
    if (result.failed.length > 0 || (await lookPath(host, "containerd")) === undefined) {
      const why = result.failed[0]?.error ?? "containerd is still not on the PATH";
      throw new Error(
        `${host.name}: containerd could not be installed with ${result.manager}: ${why}`,
      );
    }
    installed = true;
    log(`installed containerd with ${result.manager}`);
  }

  const configChanged = await writeIfChanged(host, CONTAINERD_CONFIG_PATH, config, {
    mode: 0o644,
    backup: { path: CONTAINERD_CONFIG_BACKUP, marker: KUBEFORGE_MARKER },
  });
  if (configChanged) log(`wrote ${CONTAINERD_CONFIG_PATH}`);
  let hostsChanged = false;
  for (const f of hostsFiles) {
    if (await writeIfChanged(host, f.path, f.content, { mode: 0o644 })) {
      log(`wrote ${f.path}`);
      hostsChanged = true;
    }
  }
  for (const path of await removeStaleHostsFiles(host, new Set(hostsFiles.map((f) => f.path)))) {
    log(`removed ${path} (its registry has no mirror any more)`);
    hostsChanged = true;
  }

  const init = await getInitSystem(host);
  const running = (await criStatus(host)).ready;
  // Hosts files are read per pull (docs/hosts.md): only config.toml needs a restart.
  const restart = configChanged || installed || !running;
  if (restart) {
    if (init === undefined) {
      throw new Error(
        `${host.name}: cannot (re)start containerd: no supported init system (systemd or OpenRC) found`,
      );
    }
    log(configChanged ? "restarting containerd (configuration changed)" : "starting containerd");
    await init.serviceRestart(SERVICE);
  }
  await waitForCRI(host, opts.waitTimeoutMs ?? 60_000, opts.waitIntervalMs ?? 500);
  const changed = installed || configChanged || hostsChanged || restart;
  if (!changed) log("containerd already configured and running");
  return { criSocket: CONTAINERD_CRI_SOCKET, changed, installed };
}
