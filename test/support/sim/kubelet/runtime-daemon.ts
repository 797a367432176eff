import { spawn } from "node:child_process";
import { mkdirSync, openSync, closeSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { createServer, request } from "node:http";
import { join } from "node:path";
import { HostFiles } from "./host-files.js";
import { InProcessRuntime, type DesiredPod, type PodRuntime, type PodStatus } from "./runtime.js";
import { kubeletTiming, sleep } from "./timing.js";

// SIMULATION (test double). The simulated container runtime as its own long-lived process, the
// way containerd outlives the kubelet: `systemctl stop kubelet` leaves static pods running, and a
// restarted kubelet finds them running and keeps them (its first sync adopts what matches).
// The kubelet talks to it over HTTP on a unix socket in `dir` (the CRI's role, greatly reduced).

export const RUNTIME_SOCKET = "runtime.sock";
export const RUNTIME_PIDFILE = "runtime.pid";
export const RUNTIME_LOG = "runtime.log";
/** OS pids of processes the runtime runs (etcd), for a last-resort cleanup. */
export const RUNTIME_CHILD_PIDS = "children.json";

export interface RuntimeDaemonOptions {
  dir: string;
  rootfs: string;
  timeScale: number;
  log: (line: string) => void;
}

/** Runs the runtime daemon until SIGTERM/SIGINT or POST /shutdown. */
export async function runRuntimeDaemon(o: RuntimeDaemonOptions): Promise<void> {
  mkdirSync(o.dir, { recursive: true });
  const runtime = new InProcessRuntime({
    files: new HostFiles(o.rootfs),
    timing: kubeletTiming(o.timeScale),
    log: o.log,
  });
  const socket = join(o.dir, RUNTIME_SOCKET);
  await rm(socket, { force: true });
  let finishing: Promise<void> | undefined;
  const finish = () =>
    (finishing ??= (async () => {
      o.log("runtime shutting down: stopping every container");
      await runtime.shutdown();
      server.close();
      await rm(socket, { force: true });
      await rm(join(o.dir, RUNTIME_PIDFILE), { force: true });
      await rm(join(o.dir, RUNTIME_CHILD_PIDS), { force: true });
    })());
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        try {
          if (req.method === "PUT" && req.url === "/pods") {
            const { pods } = JSON.parse(Buffer.concat(chunks).toString()) as { pods: DesiredPod[] };
            const statuses = await runtime.sync(pods);
            const pids = statuses.flatMap((s) => (s.pid ? [s.pid] : []));
            await writeFile(join(o.dir, RUNTIME_CHILD_PIDS), JSON.stringify(pids));
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ pods: statuses }));
          } else if (req.method === "POST" && req.url === "/shutdown") {
            await finish();
            res.writeHead(200).end("stopped");
            setImmediate(() => process.exit(0));
          } else if (req.url === "/healthz") {
            res.writeHead(200).end("ok");
          } else res.writeHead(404).end();
        } catch (e) {
          res.writeHead(500).end((e as Error).message);
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socket, () => resolve());
  });
  await writeFile(join(o.dir, RUNTIME_PIDFILE), `${process.pid}\n`);
  o.log(`simulated container runtime listening on ${socket} (pid ${process.pid})`);
  await new Promise<void>((resolve) => {
    const onSignal = () => void finish().then(resolve);
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
}

function unixRequest(socket: string, method: string, path: string, body?: unknown) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        socketPath: socket,
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

/** The kubelet's side: a PodRuntime that lives in the daemon, started on first use. */
export class RemoteRuntime implements PodRuntime {
  private readonly socket: string;

  constructor(
    private readonly dir: string,
    /** argv that starts the daemon (node, the bundled script, "runtime", ...). */
    private readonly command: string[],
    private readonly log: (line: string) => void,
  ) {
    this.socket = join(dir, RUNTIME_SOCKET);
  }

  async sync(pods: DesiredPod[]): Promise<PodStatus[]> {
    const res = await this.call("PUT", "/pods", { pods });
    if (res.status !== 200) throw new Error(`container runtime: ${res.status} ${res.body}`);
    return (JSON.parse(res.body) as { pods: PodStatus[] }).pods;
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
      if (child.exitCode !== null) break;
      await sleep(50);
    }
    const log = await readFile(join(this.dir, RUNTIME_LOG), "utf8").catch(() => "");
    throw new Error(`the simulated container runtime did not start:\n${log.slice(-2000)}`);
  }
}
