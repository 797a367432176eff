import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import type { EtcdOptions, FakeApiServer } from "../apiserver/index.js";
import { netexecPort, startNetexec } from "./agnhost.js";
import type { HostFiles } from "./host-files.js";
import { startComponentHealth, type ListeningServer } from "./health-servers.js";
import type { PodContainer, PodManifest } from "./static-pods.js";

// SIMULATION (test double). What runs a static pod's container here, in place of containerd and
// the image: `etcd` is Debian's real etcd binary run as a child process; kube-apiserver,
// kube-controller-manager and kube-scheduler are stood in for by the fake API server and
// controllers (test/support/sim/apiserver) and by health endpoints. hostPath volumes are the
// only file system a container sees of the node: a path in the container is translated through
// its volumeMounts to the host path, then into the node's rootfs.

const run = promisify(execFile);

export type ComponentKind =
  "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler";

/** The component a container is, from its command (kubeadm always sets one) or its image. */
export function componentOf(c: PodContainer): ComponentKind | undefined {
  const candidates = [c.command?.[0], c.image?.split("@")[0]?.split(":")[0]];
  for (const cand of candidates) {
    if (!cand) continue;
    const name = basename(cand);
    if (name === "etcd") return "etcd";
    if (
      name === "kube-apiserver" ||
      name === "kube-controller-manager" ||
      name === "kube-scheduler"
    ) {
      return name;
    }
  }
  return undefined;
}

/** The full argv of a container: command then args (the image entrypoint is not known here). */
export function containerArgv(c: PodContainer): string[] {
  return [...(c.command ?? []), ...(c.args ?? [])];
}

/**
 * Container path → host path through the container's volumeMounts and the pod's hostPath
 * volumes (the longest matching mountPath wins, as mounts nest), then into the rootfs. A path
 * outside every mount is inside the image, which the simulation does not have: it is mapped
 * into the rootfs unchanged.
 */
export function containerPathMapper(pod: PodManifest, c: PodContainer, files: HostFiles) {
  const hostPathOf = new Map(
    (pod.spec.volumes ?? []).flatMap((v) =>
      v.hostPath ? [[v.name, v.hostPath.path] as const] : [],
    ),
  );
  const mounts = (c.volumeMounts ?? [])
    .flatMap((m) => {
      const host = hostPathOf.get(m.name);
      return host ? [{ inContainer: m.mountPath.replace(/\/+$/, "") || "/", onHost: host }] : [];
    })
    .sort((a, b) => b.inContainer.length - a.inContainer.length);
  return (p: string): string => {
    if (!p.startsWith("/")) return p;
    const m = mounts.find(
      (x) => p === x.inContainer || p.startsWith(x.inContainer === "/" ? "/" : `${x.inContainer}/`),
    );
    const hostPath = m ? join(m.onHost, p.slice(m.inContainer.length)) : p;
    return files.real(hostPath);
  };
}

/** Rewrites `--flag=/path` and bare `/path` arguments with `map`; URLs and other values stay. */
export function mapArgPaths(argv: string[], map: (p: string) => string): string[] {
  return argv.map((arg, i) => {
    if (i === 0) return arg;
    const m = /^(--?[^=]+=)(\/.*)$/.exec(arg);
    if (m) return `${m[1]}${map(m[2]!)}`;
    return arg.startsWith("/") ? map(arg) : arg;
  });
}

/** The value of `--name=value` (last wins, as pflag). */
export function flagValue(argv: string[], name: string): string | undefined {
  let value: string | undefined;
  for (const a of argv) if (a.startsWith(`--${name}=`)) value = a.slice(name.length + 3);
  return value;
}

let etcdHelp: Promise<string> | undefined;

/**
 * etcd 3.6 (the image kubeadm uses from v1.34) renamed flags that Debian's etcd 3.4 only knows
 * under their --experimental-* names (etcd CHANGELOG-3.6: experimental flags graduated):
 * --feature-gates=InitialCorruptCheck=true and --watch-progress-notify-interval. When the etcd
 * on the PATH lacks the new names, the old ones are passed instead — the translation an older
 * etcd image would need, not a change of meaning. Unknown feature gates are dropped.
 */
export async function adaptEtcdFlags(argv: string[], log: (l: string) => void): Promise<string[]> {
  etcdHelp ??= run(argv[0] ?? "etcd", ["--help"]).then(
    (r) => r.stdout + r.stderr,
    (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ""}${e.stderr ?? ""}`,
  );
  const help = await etcdHelp;
  const knows = (flag: string) => help.includes(`--${flag}`);
  const out: string[] = [];
  for (const arg of argv) {
    const [flag, value] = arg.startsWith("--")
      ? [arg.slice(2).split("=")[0]!, arg.split(/=(.*)/s)[1]]
      : ["", undefined];
    if (flag === "feature-gates" && !knows("feature-gates")) {
      for (const gate of (value ?? "").split(",").filter(Boolean)) {
        const [name, on] = gate.split("=");
        if (name === "InitialCorruptCheck") out.push(`--experimental-initial-corrupt-check=${on}`);
        else log(`etcd on this machine has no --feature-gates; dropping gate ${gate}`);
      }
    } else if (flag === "watch-progress-notify-interval" && !knows(flag)) {
      out.push(`--experimental-watch-progress-notify-interval=${value}`);
    } else out.push(arg);
  }
  return out;
}

/** A container's log, in the CRI format the kubelet reads (`<RFC3339Nano> <stream> F <line>`). */
export class ContainerLog {
  private readonly out: WriteStream;
  private partial: Record<string, string> = {};

  constructor(readonly path: string) {
    mkdirSync(join(path, ".."), { recursive: true });
    this.out = createWriteStream(path, { flags: "a" });
  }

  write(stream: "stdout" | "stderr", chunk: string): void {
    const text = (this.partial[stream] ?? "") + chunk;
    const lines = text.split("\n");
    this.partial[stream] = lines.pop() ?? "";
    for (const line of lines) this.out.write(`${new Date().toISOString()} ${stream} F ${line}\n`);
  }

  line(text: string): void {
    this.write("stderr", `${text}\n`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(() => resolve()));
  }
}

/** A started container. `exited` settles when it ends on its own. */
export interface RunningContainer {
  readonly pid?: number;
  readonly exited: Promise<{ code: number | null; reason: string }>;
  stop(graceMs: number): Promise<void>;
}

export interface ContainerContext {
  pod: PodManifest;
  container: PodContainer;
  files: HostFiles;
  log: ContainerLog;
  /** The store of the API server this runtime runs, kept across its restarts: the etcd client
   * and cache with --etcd-servers, else the in-memory objects (standing in for etcd). */
  apiStore(): FakeApiServer["store"] | undefined;
  setApiStore(store: FakeApiServer["store"]): void;
  runtimeLog: (line: string) => void;
  /** The node's time scale: simulated controllers shrink their grace periods and leases by it. */
  timeScale: number;
  /** A Pod from the API server (not a static pod): images not simulated run as idle containers. */
  apiPod?: boolean;
  /** The Pod's own IP (pod-network.ts), when it has one. */
  podIP?: string;
}

/** Thrown when a container cannot start yet for a reason that is not a crash. */
export class NotReadyToStart extends Error {}

export async function startContainer(ctx: ContainerContext): Promise<RunningContainer> {
  const kind = componentOf(ctx.container);
  const mapPath = containerPathMapper(ctx.pod, ctx.container, ctx.files);
  const argv = containerArgv(ctx.container);
  switch (kind) {
    case "etcd":
      return startEtcd(ctx, await adaptEtcdFlags(mapArgPaths(argv, mapPath), ctx.runtimeLog));
    case "kube-apiserver":
      return startApiServer(ctx, argv, mapPath);
    case "kube-controller-manager":
      return startControllerManager(ctx, argv, mapPath);
    case "kube-scheduler":
      return startScheduler(ctx, argv);
    default:
      if (ctx.apiPod) return startWorkload(ctx, argv);
      throw new Error(
        `the simulated node cannot run image ${ctx.container.image ?? "?"} (only etcd, kube-apiserver, kube-controller-manager and kube-scheduler are simulated)`,
      );
  }
}

function startEtcd(ctx: ContainerContext, argv: string[]): Promise<RunningContainer> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const e of (ctx.container.env as { name: string; value?: string }[] | undefined) ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
  }
  ctx.log.line(`simulated container runtime: exec ${argv.join(" ")}`);
  // Same process group as the runtime: ending the runtime's group ends etcd too.
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), {
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  child.stdout!.on("data", (b: Buffer) => ctx.log.write("stdout", b.toString()));
  child.stderr!.on("data", (b: Buffer) => ctx.log.write("stderr", b.toString()));
  const exited = new Promise<{ code: number | null; reason: string }>((resolve) => {
    child.on("error", (e) => resolve({ code: 128, reason: `StartError: ${e.message}` }));
    child.on("exit", (code, signal) =>
      resolve({
        code: code ?? 128 + (signal === "SIGKILL" ? 9 : 15),
        reason: code === 0 ? "Completed" : "Error",
      }),
    );
  });
  return Promise.resolve({
    pid: child.pid,
    exited,
    stop: async (graceMs: number) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  });
}

/**
 * A container of a Pod from the API: agnhost netexec serves on the Pod's IP (agnhost.ts); any
 * other image runs as a container with no process, Running until stopped.
 * SIMULATION LIMIT: no image is pulled or run; such a container serves no port. netexec without
 * a Pod IP of its own (no --pod-ip-range) serves nothing either.
 */
async function startWorkload(ctx: ContainerContext, argv: string[]): Promise<RunningContainer> {
  const image = ctx.container.image ?? "";
  const port = /\/agnhost(:|@|$)/.test(image) ? netexecPort(argv) : undefined;
  if (port !== undefined && ctx.podIP) {
    ctx.log.line(`simulated agnhost netexec: serving on ${ctx.podIP}:${port}`);
    return startNetexec(ctx.pod.metadata.name, ctx.podIP, port);
  }
  ctx.log.line(`simulated container runtime: ${image} runs as an idle container`);
  return inProcess(() => Promise.resolve());
}

/** A stand-in component living in this process: it "exits" only when stopped. */
function inProcess(stop: () => Promise<void>): RunningContainer {
  let resolveExit!: (v: { code: number | null; reason: string }) => void;
  const exited = new Promise<{ code: number | null; reason: string }>((r) => (resolveExit = r));
  let stopped = false;
  return {
    exited,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stop();
      resolveExit({ code: 0, reason: "Completed" });
    },
  };
}

/**
 * The kube-apiserver container. With --etcd-servers (kubeadm always sets them) its objects live
 * in that etcd — on a control plane, the etcd static pod the same kubelet starts next to it — so
 * the container runs at once but serves only when etcd answers, retrying meanwhile as
 * kube-apiserver does; every API server on the same etcd cluster shares the same objects. The
 * node keeps one store (etcd client and cache) across restarts while the flags stay the same;
 * the controller-manager of the node uses it. Without etcd flags the store is in memory and
 * likewise kept across restarts (etcd's role).
 */
async function startApiServer(
  ctx: ContainerContext,
  argv: string[],
  mapPath: (p: string) => string,
): Promise<RunningContainer> {
  const sim = await import("../apiserver/index.js");
  const opts = sim.apiServerOptionsFromCommand(argv, mapPath);
  // /version answers the build of the binary (component-base/version Get(), served by
  // staging/src/k8s.io/apiserver/pkg/endpoints/discovery/version.go): here the image's tag,
  // registry.k8s.io/kube-apiserver:<version> as kubeadm names it (images.GetKubernetesImage).
  // A CI build's tag has "_" for its version's "+" (kubeadm's KubernetesVersionToImageTag,
  // util/version.go); the binary still reports the version itself.
  const version = releaseTag(ctx.container.image)?.replace(/_/g, "+");
  if (version) opts.version = version;
  const log = (line: string) => ctx.log.line(line);
  const etcd = opts.etcd;
  if (!etcd) {
    const store = ctx.apiStore();
    const inMemory = await sim.startFakeApiServer({ ...opts, ...(store ? { store } : {}), log });
    ctx.setApiStore(inMemory.store);
    log(`simulated kube-apiserver serving on ${inMemory.url}`);
    return inProcess(() => inMemory.stop());
  }
  const abort = new AbortController();
  let server: FakeApiServer | undefined;
  let resolveExit!: (v: { code: number | null; reason: string }) => void;
  const exited = new Promise<{ code: number | null; reason: string }>((r) => (resolveExit = r));
  const starting = (async () => {
    let store = ctx.apiStore();
    if (!store || !sameEtcd(store.etcdOptions, etcd)) {
      log(`simulated kube-apiserver: waiting for etcd at ${etcd.servers.join(",")}`);
      store = await sim.ObjectStore.open({ etcd, log, signal: abort.signal });
      ctx.setApiStore(store);
    }
    if (abort.signal.aborted) return;
    server = await sim.startFakeApiServer({ ...opts, store, log });
    ctx.setApiStore(server.store);
    log(`simulated kube-apiserver serving on ${server.url}`);
  })().catch((e: unknown) => {
    if (abort.signal.aborted) return;
    log(`simulated kube-apiserver: ${(e as Error).message}`);
    resolveExit({ code: 1, reason: "Error" });
  });
  return {
    exited,
    stop: async () => {
      abort.abort();
      await starting;
      await server?.stop();
      resolveExit({ code: 0, reason: "Completed" });
    },
  };
}

/** "registry.k8s.io/kube-apiserver:v1.36.3" → "v1.36.3"; undefined for any other tag. */
export function releaseTag(image: string | undefined): string | undefined {
  const name = (image ?? "").split("@")[0]!;
  const tag = name.slice(name.lastIndexOf(":") + 1);
  return name.lastIndexOf(":") > name.lastIndexOf("/") && /^v\d+\.\d+\.\d+/.test(tag)
    ? tag
    : undefined;
}

function sameEtcd(a: EtcdOptions | undefined, b: EtcdOptions): boolean {
  return (
    !!a &&
    a.servers.join(",") === b.servers.join(",") &&
    a.caFile === b.caFile &&
    a.certFile === b.certFile &&
    a.keyFile === b.keyFile &&
    (a.prefix ?? "/registry") === (b.prefix ?? "/registry")
  );
}

/** --bind-address / --secure-port of a component's secure serving, with their defaults. */
function secureServing(argv: string[], defaultPort: number) {
  return {
    // SecureServingOptions: --bind-address defaults to 0.0.0.0 (all interfaces).
    host: flagValue(argv, "bind-address") ?? "0.0.0.0",
    port: Number(flagValue(argv, "secure-port") ?? defaultPort),
  };
}

async function startControllerManager(
  ctx: ContainerContext,
  argv: string[],
  mapPath: (p: string) => string,
): Promise<RunningContainer> {
  const store = ctx.apiStore();
  // SIMULATION LIMIT: the real controller-manager reaches the API through --kubeconfig; the
  // fake controllers act directly on the store of the API server this same node runs.
  if (!store) throw new NotReadyToStart("no simulated kube-apiserver has run on this node yet");
  const sim = await import("../apiserver/index.js");
  const opts = sim.controllersOptionsFromCommand(argv, mapPath);
  const controllers = sim.startFakeControllers(store, {
    ...opts,
    timeScale: ctx.timeScale,
    log: (line: string) => ctx.log.line(line),
  });
  // kube-controller-manager: --secure-port 10257 (cmd/kube-controller-manager/app/options).
  const { host, port } = secureServing(argv, 10257);
  let health: ListeningServer | undefined;
  try {
    if (port > 0) health = await startComponentHealth(host, port);
  } catch (e) {
    controllers.stop();
    throw e;
  }
  ctx.log.line(
    `simulated kube-controller-manager: controllers running, serving on ${host}:${port}`,
  );
  return inProcess(async () => {
    controllers.stop();
    await health?.close();
  });
}

async function startScheduler(ctx: ContainerContext, argv: string[]): Promise<RunningContainer> {
  // kube-scheduler: --secure-port 10259 (cmd/kube-scheduler/app/options). It binds Pods
  // (controllers/pod-scheduler.ts) while it holds its Lease.
  // SIMULATION LIMIT: as the controller-manager, it acts directly on the store of the API server
  // this node runs, not through --kubeconfig.
  const store = ctx.apiStore();
  if (!store) throw new NotReadyToStart("no simulated kube-apiserver has run on this node yet");
  const sim = await import("../apiserver/index.js");
  const { host, port } = secureServing(argv, 10259);
  const health = port > 0 ? await startComponentHealth(host, port) : undefined;
  const scheduler = sim.startFakeScheduler(store, {
    log: (line) => ctx.log.line(line),
    timeScale: ctx.timeScale,
  });
  ctx.log.line(`simulated kube-scheduler: serving on ${host}:${port}`);
  return inProcess(async () => {
    scheduler.stop();
    await health?.close();
  });
}
