import { mkdirSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { runCrictl } from "./crictl.js";
import { readFaults } from "./faults.js";
import { HostFiles } from "./host-files.js";
import { runtimeImageStore } from "./images.js";
import { InProcessRuntime, type DesiredPod, type PodStatus, type SyncOptions } from "./runtime.js";
import { RUNTIME_CHILD_PIDS, RUNTIME_PIDFILE, RUNTIME_SOCKET } from "./runtime-client.js";
import { kubeletTiming } from "./timing.js";

export {
  RemoteRuntime,
  RUNTIME_CHILD_PIDS,
  RUNTIME_LOG,
  RUNTIME_PIDFILE,
  RUNTIME_SOCKET,
} from "./runtime-client.js";

// SIMULATION (test double). The simulated container runtime as its own long-lived process, the
// way containerd outlives the kubelet: `systemctl stop kubelet` leaves static pods running, and a
// restarted kubelet finds them running and keeps them (its first sync adopts what matches).
// The kubelet talks to it over HTTP on a unix socket in `dir` (the CRI's role, greatly reduced);
// the simulated crictl (crictl.ts) lists, stops and removes its pod sandboxes the same way, or
// has the daemon run its whole command line (POST /crictl, the crictl shim's fast path).

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
    faultsDir: o.dir,
  });
  const socket = join(o.dir, RUNTIME_SOCKET);
  const images = runtimeImageStore(o.dir);
  // A crictl command line (its words NUL-separated) run here, as the crictl process would run
  // it against this runtime; the answer is "<exit code>\n<stdout bytes>\n<stdout><stderr>".
  const crictl = async (body: Buffer): Promise<Buffer> => {
    const text = body.toString();
    const argv = text === "" ? [] : text.split("\0");
    let out = "";
    let err = "";
    const code = await runCrictl(
      argv,
      runtime,
      { out: (t) => (out += t), err: (t) => (err += t) },
      images,
      () => readFaults(o.dir),
    );
    o.log(`crictl ${argv.join(" ")}: exit code ${code}`);
    const stdout = Buffer.from(out);
    return Buffer.concat([Buffer.from(`${code}\n${stdout.length}\n`), stdout, Buffer.from(err)]);
  };
  const recordChildren = (statuses: PodStatus[]) =>
    writeFile(
      join(o.dir, RUNTIME_CHILD_PIDS),
      JSON.stringify(statuses.flatMap((s) => (s.pid ? [s.pid] : []))),
    );
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
          const sandbox = /^\/sandboxes\/([^/?]*)(\/stop)?(\?force=true)?$/.exec(req.url ?? "");
          if (req.method === "PUT" && req.url === "/pods") {
            const { pods, opts } = JSON.parse(Buffer.concat(chunks).toString()) as {
              pods: DesiredPod[];
              opts?: SyncOptions;
            };
            const statuses = await runtime.sync(pods, opts);
            await recordChildren(statuses);
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ pods: statuses }));
          } else if (req.method === "GET" && req.url === "/pods") {
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ pods: await runtime.list() }));
          } else if (sandbox && req.method === (sandbox[2] ? "POST" : "DELETE")) {
            const id = decodeURIComponent(sandbox[1]!);
            const result = sandbox[2]
              ? await runtime.stopSandbox(id)
              : await runtime.removeSandbox(id, sandbox[3] !== undefined);
            await recordChildren(await runtime.list());
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end(JSON.stringify(result));
          } else if (req.method === "POST" && req.url === "/crictl") {
            const out = await crictl(Buffer.concat(chunks));
            await recordChildren(await runtime.list());
            res.writeHead(200, { "Content-Type": "application/octet-stream" });
            res.end(out);
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
  if (!(await listenAlone(server, socket))) {
    o.log(`a simulated container runtime answers on ${socket} already: this one exits`);
    return;
  }
  await writeFile(join(o.dir, RUNTIME_PIDFILE), `${process.pid}\n`);
  o.log(`simulated container runtime listening on ${socket} (pid ${process.pid})`);
  await new Promise<void>((resolve) => {
    const onSignal = () => void finish().then(resolve);
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
}

const listen = (server: Server, socket: string) =>
  new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    const onError = (e: NodeJS.ErrnoException) => resolve(e);
    server.once("error", onError);
    server.listen(socket, () => {
      server.off("error", onError);
      resolve(undefined);
    });
  });

const answers = (socket: string) =>
  new Promise<boolean>((resolve) => {
    const c = connect(socket, () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });

/**
 * Listens on the socket unless a daemon answers there already (whoever asks first starts the
 * daemon, and concurrent crictl calls may each start one): creating a unix socket is atomic, so
 * only one of several daemons started at once gets it; the others return false and exit. A
 * socket nobody answers on is left over from a killed daemon and replaced.
 */
async function listenAlone(server: Server, socket: string): Promise<boolean> {
  let e = await listen(server, socket);
  if (e?.code === "EADDRINUSE" && !(await answers(socket))) {
    await rm(socket, { force: true });
    e = await listen(server, socket);
  }
  if (e?.code === "EADDRINUSE") return false;
  if (e) throw e;
  return true;
}
