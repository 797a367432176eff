import { writeRunnerFile } from "../remote/runner-files.js";
import { spawn } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import type { ClusterSpec } from "../config/cluster/types.js";
import type { Host } from "../remote/host.js";
import { stopDetached } from "../remote/detached.js";
import { SshHost } from "../remote/ssh/host.js";
import { directTarget, startTunnelProxy, type ProxyTarget } from "../remote/tunnel/proxy.js";
import { connectNode } from "./connect.js";

// The runner's way to the API servers after `up` has returned, when admin.conf cannot name an
// API server directly: the runner reaches the hosts only over SSH, or the cluster has several
// control planes and no load balancer of the user's. A detached `kubeforge tunnel` process
// listens on the runner's loopback and forwards each connection to an API server that answers —
// directly or through a node's SSH connection. It lives until `kubeforge down` (or, in GitHub
// Actions, the end of the job, when the runner ends a job's leftover processes).
// Secrets (the Cluster's SSH keys) reach it on stdin, never in argv or the environment.

export interface TunnelTargetSpec {
  /** Through this node's SSH connection; absent = directly from the runner. */
  node?: string;
  /** The API server as seen from the node (or from the runner when direct). */
  host: string;
  port: number;
  /** The host key `up` saw for the node: pinned in the tunnel (accept-new is for one run). */
  hostKeyFingerprint?: string;
}

export interface TunnelSpec {
  cluster: ClusterSpec;
  targets: TunnelTargetSpec[];
}

/** What the tunnel process prints first on stdout, one JSON line. */
interface TunnelReady {
  port: number;
}

/** The host key up saw for an SSH host (pinned into the tunnel's connections). */
export function observedHostKey(host: Host): string | undefined {
  return host instanceof SshHost ? host.hostKeyFingerprint : undefined;
}

function pinned(spec: ClusterSpec, target: TunnelTargetSpec): ClusterSpec {
  if (!target.hostKeyFingerprint) return spec;
  return {
    ...spec,
    nodes: spec.nodes.map((n) =>
      n.name === target.node
        ? {
            ...n,
            ssh: {
              ...n.ssh,
              hostKeyFingerprints: [target.hostKeyFingerprint!],
              acceptNewHostKeys: false,
            },
          }
        : n,
    ),
  };
}

/** A target through a node's SSH connection, connected on first use and again after a drop. */
function sshTarget(
  spec: ClusterSpec,
  target: TunnelTargetSpec,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): ProxyTarget & { close(): Promise<void> } {
  const node = spec.nodes.find((n) => n.name === target.node);
  if (!node) throw new Error(`tunnel target names node "${target.node}", not in the cluster`);
  let connecting: Promise<SshHost> | undefined;
  const connected = async (): Promise<SshHost> => {
    if (connecting) {
      const host = await connecting.catch(() => undefined);
      if (host?.isOpen) return host;
      connecting = undefined;
      await host?.close();
    }
    connecting = connectNode(pinned(spec, target), node, {
      readFile: (p) => readFile(p),
      env,
      log,
    }).then((h) => h as SshHost);
    return connecting;
  };
  return {
    describe: `${target.host}:${target.port} via ${node.name}`,
    open: async () => (await connected()).connectTo(target.host, target.port),
    close: async () => {
      const host = await connecting?.catch(() => undefined);
      await host?.close();
    },
  };
}

/** The tunnel itself (run inside the `kubeforge tunnel` process, or a test). */
export async function runTunnel(
  spec: TunnelSpec,
  opts: { env: NodeJS.ProcessEnv; log: (line: string) => void },
): Promise<{ port: number; close(): Promise<void> }> {
  const closers: (() => Promise<void>)[] = [];
  const targets = spec.targets.map((t) => {
    if (t.node === undefined) return directTarget(t.host, t.port);
    const target = sshTarget(spec.cluster, t, opts.env, opts.log);
    closers.push(() => target.close());
    return target;
  });
  const proxy = await startTunnelProxy(targets, { log: opts.log });
  opts.log(
    `tunnel for cluster "${spec.cluster.name}" on 127.0.0.1:${proxy.port} to ${targets.map((t) => t.describe).join(", ")}`,
  );
  return {
    port: proxy.port,
    close: async () => {
      await proxy.close();
      await Promise.all(closers.map((c) => c()));
    },
  };
}

/** The `kubeforge tunnel` command: the spec on stdin, `{"port":N}` on stdout, logs on stderr. */
export async function tunnelMain(stdin: NodeJS.ReadableStream): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
  const spec = JSON.parse(Buffer.concat(chunks).toString("utf8")) as TunnelSpec;
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  const tunnel = await runTunnel(spec, { env: process.env, log });
  const ready: TunnelReady = { port: tunnel.port };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  const stop = () => {
    log("stopping");
    void tunnel.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

interface TunnelState {
  pid: number;
  port: number;
  logFile: string;
}

/**
 * Starts a detached `kubeforge tunnel` (the CLI bundle at `cliPath`), waits until it listens,
 * and records its pid in `stateFile` (0600). An earlier tunnel recorded there is stopped first.
 */
export async function startTunnelProcess(
  spec: TunnelSpec,
  opts: { cliPath: string; stateFile: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<{ port: number; pid: number; logFile: string }> {
  await stopTunnelProcess(opts.stateFile);
  const logFile = `${opts.stateFile.replace(/\.json$/, "")}.log`;
  // Appended to, never through a link planted in the state folder.
  const logFd = openSync(
    logFile,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
    0o600,
  );
  const child = spawn(process.execPath, [opts.cliPath, "tunnel"], {
    detached: true,
    stdio: ["pipe", "pipe", logFd],
    env: opts.env,
  });
  closeSync(logFd);
  child.stdin!.end(JSON.stringify(spec));
  const ready = await new Promise<TunnelReady>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(
          `the SSH tunnel did not start within ${opts.timeoutMs ?? 60_000} ms; see ${logFile}`,
        ),
      );
    }, opts.timeoutMs ?? 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString("utf8");
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(line) as TunnelReady);
        } catch (e) {
          reject(new Error(`the SSH tunnel printed "${line}"; see ${logFile}`, { cause: e }));
        }
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the SSH tunnel exited with code ${code} before listening; see ${logFile}`));
    });
  });
  child.removeAllListeners("exit");
  child.stdout!.destroy();
  child.unref();
  const state: TunnelState = { pid: child.pid!, port: ready.port, logFile };
  await writeRunnerFile(opts.stateFile, `${JSON.stringify(state)}\n`, 0o600);
  return state;
}

/** Stops the tunnel recorded in `stateFile`, if it still runs; returns whether one was stopped. */
export async function stopTunnelProcess(stateFile: string): Promise<boolean> {
  const text = await readFile(stateFile, "utf8").catch(() => undefined);
  if (text === undefined) return false;
  await rm(stateFile, { force: true });
  let state: TunnelState;
  try {
    state = JSON.parse(text) as TunnelState;
  } catch {
    return false;
  }
  // Only a process that is still our tunnel: a recycled pid must not be killed.
  const cmdline = await readFile(`/proc/${state.pid}/cmdline`, "utf8").catch(() => "");
  if (!cmdline.split("\0").includes("tunnel")) return false;
  return stopDetached(state.pid);
}
