import { writeRunnerFile } from "../remote/runner-files.js";
import { connect } from "node:net";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { joinHostPort } from "../config/network.js";
import { renderKubeConfig } from "../kubeconfig/build.js";
import { parseKubeConfig } from "../kubeconfig/parse.js";
import type { KubeConfig } from "../kubeconfig/types.js";

// admin.conf for the steps after `up`: fetched from a control plane and pointed at an address
// the runner can reach (engineering notes: "The kubeconfig points at an address later steps
// cannot reach"). The certificate is still verified: an address the runner uses instead of the
// cluster's own is a SAN of the API server certificate (`up` adds it).

/** Whether this process can open a TCP connection to host:port within `timeoutMs`. */
export function tcpReachable(host: string, port: number, timeoutMs = 3000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

export function serverOf(config: KubeConfig): URL {
  const server = config.clusters[0]?.cluster.server;
  if (!server) throw new Error("admin.conf has no cluster server");
  return new URL(server);
}

/**
 * The first of `candidates` (host names or addresses the runner knows the control planes by)
 * that answers on the API port, or undefined when none does.
 */
export async function reachableServer(
  candidates: readonly string[],
  port: number,
): Promise<string | undefined> {
  for (const host of candidates) {
    if (await tcpReachable(host, port)) return `https://${joinHostPort(host, port)}`;
  }
  return undefined;
}

/** Writes a kubeconfig on the runner, 0600 (it holds the admin credentials), atomically. */
export async function writeRunnerKubeConfig(path: string, config: KubeConfig): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeRunnerFile(path, renderKubeConfig(config, { preferences: false }), 0o600);
}

export function parseAdminConf(text: Buffer, node: string): KubeConfig {
  return parseKubeConfig(text, `${node}:/etc/kubernetes/admin.conf`);
}
