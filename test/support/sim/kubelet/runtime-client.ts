import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import type {
  DesiredPod,
  PodRuntime,
  PodStatus,
  SandboxResult,
  SandboxRuntime,
  SyncOptions,
} from "./runtime.js";
import { sleep } from "./timing.js";

// SIMULATION (test double). The client side of the simulated container runtime daemon
// (runtime-daemon.ts): HTTP on the unix socket in the runtime's folder, the daemon started on
// first use. Kept apart from the daemon (which runs the containers, the fake API server among
// them) so that a small process — the simulated crictl — loads quickly.

export const RUNTIME_SOCKET = "runtime.sock";
export const RUNTIME_PIDFILE = "runtime.pid";
export const RUNTIME_LOG = "runtime.log";
/** OS pids of processes the runtime runs (etcd), for a last-resort cleanup. */
export const RUNTIME_CHILD_PIDS = "children.json";

function unixRequest(socket: string, method: string, path: string, body?: unknown) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        socketPath: socket,
        // A connection per call: one kept alive to a daemon since killed fails with ECONNRESET,
        // where a new one is refused and the daemon started again.
        agent: false,
        method,
        path,
        headers: payload ? { "Content-Type": "application/json" } : {},
        timeout: 120_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error(`${method} ${path} on ${socket}: timed out`)));
    req.end(payload);
  });
}

/**
 * The kubelet's (and the simulated crictl's) side: a runtime that lives in the daemon, started on
 * first use — as containerd is always running on a node, whoever asks first.
 */
export class RemoteRuntime implements PodRuntime, SandboxRuntime {
  private readonly socket: string;

  constructor(
    private readonly dir: string,
    /** argv that starts the daemon (node, the bundled script, "runtime", ...). */
    private readonly command: string[],
    private readonly log: (line: string) => void,
  ) {
    this.socket = join(dir, RUNTIME_SOCKET);
  }

  async sync(pods: DesiredPod[], opts: SyncOptions = {}): Promise<PodStatus[]> {
    const res = await this.call("PUT", "/pods", { pods, opts });
    if (res.status !== 200) throw new Error(`container runtime: ${res.status} ${res.body}`);
    return (JSON.parse(res.body) as { pods: PodStatus[] }).pods;
  }

  async list(): Promise<PodStatus[]> {
    const res = await this.call("GET", "/pods");
    if (res.status !== 200) throw new Error(`container runtime: ${res.status} ${res.body}`);
    return (JSON.parse(res.body) as { pods: PodStatus[] }).pods;
  }

  stopSandbox(id: string): Promise<SandboxResult> {
    return this.sandboxCall("POST", `/sandboxes/${encodeURIComponent(id)}/stop`);
  }

  removeSandbox(id: string, force: boolean): Promise<SandboxResult> {
    return this.sandboxCall(
      "DELETE",
      `/sandboxes/${encodeURIComponent(id)}${force ? "?force=true" : ""}`,
    );
  }

  private async sandboxCall(method: string, path: string): Promise<SandboxResult> {
    const res = await this.call(method, path);
    if (res.status !== 200) throw new Error(`container runtime: ${res.status} ${res.body}`);
    return JSON.parse(res.body) as SandboxResult;
  }

  /** Not called by the kubelet (stopping it leaves containers running); by node teardown. */
  async shutdown(): Promise<void> {
    try {
      await unixRequest(this.socket, "POST", "/shutdown");
    } catch {
      /* not running */
    }
  }

  private async call(method: string, path: string, body?: unknown) {
    try {
      return await unixRequest(this.socket, method, path, body);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ECONNREFUSED") throw e;
      await this.startDaemon();
      return unixRequest(this.socket, method, path, body);
    }
  }

  private async startDaemon(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    this.log(`starting the simulated container runtime in ${this.dir}`);
    const out = openSync(join(this.dir, RUNTIME_LOG), "a");
    // Its own session: neither the kubelet's stop nor a signal to the kubelet's group reaches it.
    const child = spawn(this.command[0]!, this.command.slice(1), {
      detached: true,
      stdio: ["ignore", out, out],
    });
    child.unref();
    closeSync(out);
    for (let i = 0; i < 200; i++) {
      try {
        if ((await unixRequest(this.socket, "GET", "/healthz")).status === 200) return;
      } catch {
        /* not yet */
      }
      // One that exited 0 found another daemon answering (runtime-daemon.ts listenAlone).
      if (child.exitCode !== null && child.exitCode !== 0) break;
      await sleep(50);
    }
    const log = await readFile(join(this.dir, RUNTIME_LOG), "utf8").catch(() => "");
    throw new Error(`the simulated container runtime did not start:\n${log.slice(-2000)}`);
  }
}
