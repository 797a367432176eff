import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { isIP } from "node:net";
import { join } from "node:path";
import type { NodeFaults } from "./faults.js";
import { memoryImageStore, normalizeReference, type ImageStore } from "./images.js";
import type { PodStatus, SandboxResult, SandboxRuntime } from "./runtime.js";
import { RUNTIME_SOCKET } from "./runtime-client.js";

// SIMULATION (test double). `crictl` for a simulated kubeforge test node: the CRI command-line
// client (kubernetes-sigs/cri-tools) as far as kubeforge uses it, talking to the simulated
// container runtime (runtime-daemon.ts) instead of containerd. Not cri-tools.
// Behaviour followed, from cri-tools' cmd/crictl (main.go, sandbox.go, container.go, version.go,
// info.go) and containerd's CRI plugin:
// - global flags before the command: --runtime-endpoint/-r, --image-endpoint/-i, --timeout/-t,
//   --debug/-D, --config/-c; `-D=false` style booleans. Without an endpoint crictl warns and
//   tries its default endpoints (containerd's first).
// - `version` prints "Version:  0.1.0" and the runtime's name, version and API version.
// - `info` prints the runtime status as JSON; kubeadm reads the RuntimeReady condition.
// - `pods` (alias `sandboxes`) lists pod sandboxes: a table with 13-character IDs, with
//   --quiet/-q the full IDs one per line, with -o json the PodSandbox messages; --name (regexp),
//   --namespace, --state filter.
// - `stopp ID...` prints "Stopped sandbox ID" per pod; stopping a stopped pod succeeds.
// - `rmp ID...` prints "Removed sandbox ID"; a sandbox that still runs is refused unless
//   --force/-f (crictl then stops it first); --all/-a removes every sandbox.
// - `ps` lists containers (running only, unless --all/-a); --quiet/-q prints IDs; with -o json
//   the ListContainersResponse (container.go outputContainersJSON).
// - `logs [--tail N] ID` prints the container's log (the CRI log file, each entry's text on the
//   stream it was written to: cmd/crictl/logs.go → kubelet's kuberuntime/logs ReadLogs); an ID
//   no container has fails with the runtime's NotFound.
// - IDs may be unique prefixes (containerd resolves them with its truncindex).
// - `pull IMAGE` prints "Image is up to date for <image ID>" (cmd/crictl/image.go
//   pullImageCommand; containerd's PullImage answers the image's ID); a failure is the fatal
//   "pulling image: <the runtime's error>". The simulation pulls nothing: the reference is
//   recorded in the image store (images.ts); a registry under .invalid fails as an unresolvable
//   host does in containerd ("failed to resolve reference ... no such host"). A registry given
//   by IP address (a test's own) is contacted as containerd's resolver does first, with
//   `HEAD https://<registry>/v2/<name>/manifests/<tag>` (core/remotes/docker/resolver.go
//   Resolve): any answer counts as the image being there, a refused connection fails as in
//   containerd ("dial tcp <addr>: connect: connection refused"), and a registry that never
//   answers keeps the pull waiting, as a stalled registry does.
// - `inspecti [-q] IMAGE...` prints the images' status as JSON ({"status": Image} per image, the
//   verbose "info" left out with -q; image.go imageStatusCommand, json by default) and fails with
//   "no such image \"X\" present" when the runtime has none (exit 1).
// - `runtime-config` prints the runtime's RuntimeConfig as a table (runtime_config.go, cri-tools
//   ≥ 1.28): "cgroup driver:   SYSTEMD" — containerd ≥ 2.0 answers the RPC (containerd#8722:
//   the default handler's driver, systemd when none says). With the node fault
//   runtimeConfigUnimplemented the runtime is one from before KEP-4033 (containerd 1.7), whose
//   CRI server answers "rpc error: code = Unimplemented desc = method RuntimeConfig not
//   implemented" (the gRPC stub's text, as kubelets log it on containerd 1.7), which crictl
//   wraps: "get runtime config: call RuntimeConfig RPC: <that error>".
// - failures print a logrus fatal line on stderr and exit 1.
// Only the endpoint of containerd (unix:///run/containerd/containerd.sock; /var/run is a link to
// /run) reaches the simulated runtime: any other endpoint fails to connect, as on a node where
// only containerd runs.

export const SIMULATED_RUNTIME_ENDPOINTS = [
  "unix:///var/run/containerd/containerd.sock",
  "unix:///run/containerd/containerd.sock",
];

/** cri-tools' defaultRuntimeEndpoints (cmd/crictl/main.go). */
const DEFAULT_ENDPOINTS = [
  "unix:///run/containerd/containerd.sock",
  "unix:///run/crio/crio.sock",
  "unix:///var/run/cri-dockerd.sock",
];

export interface CrictlShimOptions {
  binDir: string;
  /** The node binary (Node 24). */
  nodeExecPath?: string;
  /** The bundled crictl-main.ts (bundleSimCrictl()). */
  crictlScript: string;
  /** The bundled simulated kubelet, which runs the runtime daemon. */
  kubeletScript: string;
  /** The simulated runtime's folder and how to start it when nobody has yet. */
  runtimeDir: string;
  rootfs: string;
  timeScale: number;
}

/** POSIX single-quoting. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** What the shim's client exits with when the daemon cannot answer: the Node crictl takes over. */
export const DAEMON_UNAVAILABLE = 199;

/**
 * The shim's client of the runtime daemon's POST /crictl (runtime-daemon.ts): Perl (perl-base
 * is in every Debian) starts in a few milliseconds, about as fast as cri-tools' Go binary, where
 * a Node process takes several times that on a busy machine. Unreachable, or a daemon without
 * /crictl (404): DAEMON_UNAVAILABLE.
 */
const DAEMON_CLIENT = String.raw`use IO::Socket::UNIX;
my $p = shift;
my $s = IO::Socket::UNIX->new(Peer => $p) or exit ${DAEMON_UNAVAILABLE};
my $b = join("\0", @ARGV);
print $s "POST /crictl HTTP/1.0\r\nContent-Length: " . length($b) . "\r\n\r\n" . $b;
my $r = do { local $/; <$s> };
my ($h, $d) = split(/\r\n\r\n/, defined $r ? $r : "", 2);
exit ${DAEMON_UNAVAILABLE} if !defined $d || $h =~ m{^HTTP/1\.\d 404};
if ($h !~ m{^HTTP/1\.\d 200}) { print STDERR "simulated crictl: the runtime answered: $h\n"; exit 1; }
my ($c, $n, $rest) = split(/\n/, $d, 3);
binmode STDOUT; binmode STDERR;
print STDOUT substr($rest, 0, $n); print STDERR substr($rest, $n);
exit $c;`;

/**
 * Writes an executable `crictl` into opts.binDir; returns its path. A running runtime daemon
 * answers it (DAEMON_CLIENT); else the bundled crictl-main.ts runs, and starts the daemon.
 */
export async function installCrictlShim(opts: CrictlShimOptions): Promise<string> {
  await mkdir(opts.binDir, { recursive: true });
  const argv = [
    opts.nodeExecPath ?? process.execPath,
    opts.crictlScript,
    "--sim-kubelet-script",
    opts.kubeletScript,
    "--sim-runtime-dir",
    opts.runtimeDir,
    "--sim-rootfs",
    opts.rootfs,
    "--sim-time-scale",
    String(opts.timeScale),
  ];
  const script = `#!/bin/sh
# SIMULATION (test double): crictl for a simulated kubeforge test node. Not cri-tools.
# Generated by test/support/sim/kubelet/crictl.ts.
sock=${q(join(opts.runtimeDir, RUNTIME_SOCKET))}
if [ -S "$sock" ] && command -v perl >/dev/null 2>&1; then
  perl -e ${q(DAEMON_CLIENT)} "$sock" "$@"
  rc=$?
  [ "$rc" -eq ${DAEMON_UNAVAILABLE} ] || exit "$rc"
fi
exec ${argv.map(q).join(" ")} "$@"
`;
  const path = join(opts.binDir, "crictl");
  await writeFile(path, script);
  await chmod(path, 0o755);
  return path;
}

class CrictlError extends Error {}

/** logrus's text format, as crictl prints its fatal errors. */
function fatal(message: string): never {
  throw new CrictlError(
    `time="${new Date().toISOString()}" level=fatal msg=${JSON.stringify(message)}`,
  );
}

interface Parsed {
  flags: Map<string, string>;
  args: string[];
}

const BOOLEAN_FLAGS = new Set([
  "debug",
  "D",
  "quiet",
  "q",
  "all",
  "a",
  "force",
  "f",
  "no-trunc",
  "latest",
  "l",
  "verbose",
  "v",
]);
const ALIASES: Record<string, string> = {
  r: "runtime-endpoint",
  i: "image-endpoint",
  t: "timeout",
  D: "debug",
  c: "config",
  q: "quiet",
  a: "all",
  f: "force",
  l: "latest",
  v: "verbose",
  o: "output",
  s: "state",
};

/** urfave/cli-style options: `--name value`, `--name=value`, `-x value`, booleans `-D=false`. */
function parseOptions(argv: string[]): Parsed {
  const flags = new Map<string, string>();
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const m = /^--?([^=]+)(=(.*))?$/.exec(a);
    if (!m || a === "-" || a === "--") {
      args.push(a);
      continue;
    }
    const name = ALIASES[m[1]!] ?? m[1]!;
    if (m[2] !== undefined) flags.set(name, m[3]!);
    else if (BOOLEAN_FLAGS.has(m[1]!) || BOOLEAN_FLAGS.has(name)) flags.set(name, "true");
    else if (i + 1 < argv.length) flags.set(name, argv[++i]!);
    else fatal(`flag needs an argument: ${a}`);
  }
  return { flags, args };
}

const isTrue = (v: string | undefined) => v !== undefined && v !== "false" && v !== "0";

function endpointOf(value: string | undefined, warn: (line: string) => void): string {
  if (value) return value.includes("://") ? value : `unix://${value}`;
  warn(
    `time="${new Date().toISOString()}" level=warning msg="runtime connect using default endpoints: [${DEFAULT_ENDPOINTS.join(" ")}]. As the default settings are now deprecated, you should set the endpoint instead."\n`,
  );
  return DEFAULT_ENDPOINTS[0]!;
}

function checkEndpoint(endpoint: string): void {
  if (SIMULATED_RUNTIME_ENDPOINTS.includes(endpoint)) return;
  const socket = endpoint.replace(/^unix:\/\//, "");
  fatal(
    `validate service connection: validate CRI v1 runtime API for endpoint "${endpoint}": rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix ${socket}: connect: no such file or directory"`,
  );
}

const podName = (p: PodStatus) => p.key.split("/")[1] ?? p.key;
const podNamespace = (p: PodStatus) => p.key.split("/")[0] ?? "";
const sandboxState = (p: PodStatus) =>
  !p.stopped && p.containers.some((c) => c.state.running) ? "SANDBOX_READY" : "SANDBOX_NOTREADY";
const containerId = (c: PodStatus["containers"][number]) =>
  (c.containerID ?? "").replace(/^[a-z]+:\/\//, "");

function ago(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} seconds ago`;
  return `${Math.round(s / 60)} minutes ago`;
}

function table(rows: string[][]): string {
  return (
    rows.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(19) : c)).join(" ")).join("\n") +
    "\n"
  );
}

function sandboxFailure(verb: string, id: string, r: SandboxResult & { found: false }): never {
  if (r.reason === "running") {
    fatal(
      `${verb} the pod sandbox "${id}": rpc error: code = Unknown desc = sandbox container "${id}" is not fully stopped`,
    );
  }
  fatal(
    `${verb} the pod sandbox "${id}": rpc error: code = NotFound desc = an error occurred when try to find sandbox "${id}": ${r.reason === "ambiguous" ? "ambiguous ID" : "not found"}`,
  );
}

/**
 * containerd's first request for a pull: HEAD on the manifest. Resolves to undefined on any
 * answer, or to the dial error; never gives up on a registry that does not answer.
 */
function resolveManifest(ref: string, registry: string): Promise<string | undefined> {
  const name = ref.slice(registry.length + 1).replace(/[:@][^/]*$/, "");
  const tag = ref.slice(registry.length + 1 + name.length + 1);
  return new Promise((resolve) => {
    const req = request(`https://${registry}/v2/${name}/manifests/${tag}`, {
      method: "HEAD",
      rejectUnauthorized: false, // a test registry's certificate is not what is simulated
    });
    req.on("response", (res) => {
      res.resume();
      resolve(undefined);
    });
    req.on("error", (e: NodeJS.ErrnoException) =>
      resolve(
        `dial tcp ${registry}: ${e.code === "ECONNREFUSED" ? "connect: connection refused" : e.message}`,
      ),
    );
    req.end();
  });
}

export interface CrictlIO {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs one crictl command line (without the leading --sim-* options). Returns the exit code. */
export async function runCrictl(
  argv: string[],
  runtime: SandboxRuntime,
  io: CrictlIO,
  images: ImageStore = memoryImageStore(),
  faults: () => Promise<NodeFaults> = () => Promise.resolve({}),
): Promise<number> {
  try {
    // Global options end at the first non-option word: the command.
    const commandAt = argv.findIndex((a, i) => {
      if (a.startsWith("-")) return false;
      const prev = argv[i - 1];
      if (prev === undefined || !prev.startsWith("-") || prev.includes("=")) return true;
      const name = prev.replace(/^--?/, "");
      return BOOLEAN_FLAGS.has(name);
    });
    const global = parseOptions(commandAt < 0 ? argv : argv.slice(0, commandAt));
    const command = commandAt < 0 ? undefined : argv[commandAt];
    const { flags, args } = parseOptions(commandAt < 0 ? [] : argv.slice(commandAt + 1));
    if (!command) fatal("no command given (version, info, pods, stopp, rmp, ps, pull, inspecti)");
    const endpoint = endpointOf(global.flags.get("runtime-endpoint"), io.err);
    checkEndpoint(endpoint);

    switch (command) {
      case "version":
        io.out(
          "Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v2.0.0-kubeforge-simulated\nRuntimeApiVersion:  v1\n",
        );
        await runtime.list(); // connects (and starts the runtime) as a Version RPC would
        return 0;
      case "info":
        await runtime.list();
        io.out(
          `${JSON.stringify(
            {
              status: {
                conditions: [
                  { type: "RuntimeReady", status: true, reason: "", message: "" },
                  { type: "NetworkReady", status: true, reason: "", message: "" },
                ],
              },
              simulated: "kubeforge test double",
            },
            null,
            2,
          )}\n`,
        );
        return 0;
      case "pods":
      case "sandboxes":
      case "sandbox":
      case "p": {
        let pods = await runtime.list();
        const name = flags.get("name");
        if (name) pods = pods.filter((p) => new RegExp(name).test(podName(p)));
        const ns = flags.get("namespace");
        if (ns) pods = pods.filter((p) => new RegExp(ns).test(podNamespace(p)));
        const state = flags.get("state")?.toLowerCase();
        if (state) pods = pods.filter((p) => sandboxState(p).toLowerCase().endsWith(state));
        if (isTrue(flags.get("quiet"))) {
          io.out(pods.map((p) => `${p.sandboxId}\n`).join(""));
          return 0;
        }
        if (flags.get("output") === "json") {
          // The CRI's PodSandbox message as crictl prints it (protojson, int64 as a string).
          const items = pods.map((p) => ({
            id: p.sandboxId,
            metadata: { name: podName(p), uid: p.uid, namespace: podNamespace(p), attempt: 0 },
            state: sandboxState(p),
            createdAt: String(BigInt(Date.parse(p.startTime)) * 1_000_000n),
            labels: {},
            annotations: {},
            runtimeHandler: "",
          }));
          io.out(`${JSON.stringify({ items }, null, 2)}\n`);
          return 0;
        }
        const trunc = (id = "") => (isTrue(flags.get("no-trunc")) ? id : id.slice(0, 13));
        io.out(
          table([
            ["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"],
            ...pods.map((p) => [
              trunc(p.sandboxId),
              ago(p.startTime),
              sandboxState(p),
              podName(p),
              podNamespace(p),
              "0",
              "(default)",
            ]),
          ]),
        );
        return 0;
      }
      case "stopp": {
        if (args.length === 0) fatal("ID cannot be empty");
        for (const id of args) {
          const r = await runtime.stopSandbox(id);
          if (!r.found) sandboxFailure("stopping", id, r);
          io.out(`Stopped sandbox ${id}\n`);
        }
        return 0;
      }
      case "rmp": {
        const force = isTrue(flags.get("force"));
        const ids = isTrue(flags.get("all"))
          ? (await runtime.list()).map((p) => p.sandboxId!)
          : args;
        if (ids.length === 0 && !isTrue(flags.get("all"))) fatal("ID cannot be empty");
        for (const id of ids) {
          const r = await runtime.removeSandbox(id, force);
          if (!r.found) sandboxFailure("removing", id, r);
          io.out(`Removed sandbox ${id}\n`);
        }
        return 0;
      }
      case "ps":
      case "containers": {
        const all = isTrue(flags.get("all"));
        const rows = (await runtime.list()).flatMap((p) =>
          p.containers
            .filter((c) => containerId(c) !== "" && (all || c.state.running))
            .map((c) => ({ pod: p, c })),
        );
        if (isTrue(flags.get("quiet"))) {
          io.out(rows.map((r) => `${containerId(r.c)}\n`).join(""));
          return 0;
        }
        if (flags.get("output") === "json") {
          // The CRI's ListContainersResponse as crictl prints it (protojson, int64 as a string).
          const containers = rows.map(({ pod, c }) => ({
            id: containerId(c),
            podSandboxId: pod.sandboxId,
            metadata: { name: c.name, attempt: c.restartCount },
            image: { image: c.image },
            imageRef: c.image,
            state: c.state.running ? "CONTAINER_RUNNING" : "CONTAINER_EXITED",
            createdAt: String(
              BigInt(Date.parse(c.state.running?.startedAt ?? pod.startTime)) * 1_000_000n,
            ),
            labels: {
              "io.kubernetes.container.name": c.name,
              "io.kubernetes.pod.name": podName(pod),
              "io.kubernetes.pod.namespace": podNamespace(pod),
              "io.kubernetes.pod.uid": pod.uid,
            },
            annotations: {},
          }));
          io.out(`${JSON.stringify({ containers }, null, 2)}\n`);
          return 0;
        }
        io.out(
          table([
            ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"],
            ...rows.map(({ pod, c }) => [
              containerId(c).slice(0, 13),
              c.image,
              ago(pod.startTime),
              c.state.running ? "Running" : "Exited",
              c.name,
              String(c.restartCount),
              (pod.sandboxId ?? "").slice(0, 13),
              podName(pod),
            ]),
          ]),
        );
        return 0;
      }
      case "logs": {
        const id = args[0];
        if (!id) fatal("ID cannot be empty");
        const found = (await runtime.list())
          .flatMap((p) => p.containers)
          .filter((c) => containerId(c) !== "" && containerId(c).startsWith(id));
        const logPath = found.length === 1 ? found[0]!.logPath : undefined;
        if (logPath === undefined) {
          fatal(
            `rpc error: code = NotFound desc = an error occurred when try to find container "${id}": not found`,
          );
        }
        // The CRI log format: "<RFC3339Nano> <stdout|stderr> <F|P> <text>" per line; crictl
        // writes each entry's text to its own stream, a partial (P) one without a new line.
        let entries = (await readFile(logPath, "utf8").catch(() => ""))
          .split("\n")
          .map((l) => /^\S+ (stdout|stderr) ([FP]) (.*)$/.exec(l))
          .filter((m): m is RegExpExecArray => m !== null);
        const tail = Number(flags.get("tail") ?? "-1");
        if (tail >= 0) entries = entries.slice(Math.max(0, entries.length - tail));
        for (const [, stream, tag, text] of entries) {
          const line = tag === "F" ? `${text}\n` : text!;
          if (stream === "stdout") io.out(line);
          else io.err(line);
        }
        return 0;
      }
      case "pull": {
        const image = args[0];
        if (!image) fatal("Image name cannot be empty");
        const ref = normalizeReference(image);
        const registry = ref.slice(0, ref.indexOf("/"));
        const host = registry.replace(/:\d+$/, "");
        if (host.endsWith(".invalid")) {
          fatal(
            `pulling image: rpc error: code = Unknown desc = failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": failed to do request: Head "https://${registry}/v2/": dial tcp: lookup ${host}: no such host`,
          );
        }
        await runtime.list(); // connects (and starts the runtime) as a PullImage RPC would
        if (isIP(host.replace(/^\[|\]$/g, "")) !== 0) {
          const failure = await resolveManifest(ref, registry);
          if (failure) {
            fatal(
              `pulling image: rpc error: code = Unknown desc = failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": failed to do request: Head "https://${registry}/v2/": ${failure}`,
            );
          }
        }
        const pulled = await images.add(image);
        io.out(`Image is up to date for ${pulled.id}\n`);
        return 0;
      }
      case "runtime-config": {
        await runtime.list(); // connects, as the RPC would
        if ((await faults()).runtimeConfigUnimplemented) {
          fatal(
            "get runtime config: call RuntimeConfig RPC: rpc error: code = Unimplemented desc = method RuntimeConfig not implemented",
          );
        }
        io.out("cgroup driver:   SYSTEMD\n");
        return 0;
      }
      case "inspecti": {
        if (args.length === 0) fatal("IMAGE-ID cannot be empty");
        await runtime.list();
        const statuses: unknown[] = [];
        for (const image of args) {
          const found = await images.get(image);
          if (!found) fatal(`no such image "${image}" present`);
          statuses.push(
            isTrue(flags.get("quiet"))
              ? { status: found }
              : { status: found, info: { simulated: "kubeforge test double" } },
          );
        }
        for (const st of statuses) io.out(`${JSON.stringify(st, null, 2)}\n`);
        return 0;
      }
      default:
        fatal(`No help topic for '${command}'`);
    }
  } catch (e) {
    io.err(
      `${e instanceof CrictlError ? e.message : `time="${new Date().toISOString()}" level=fatal msg=${JSON.stringify((e as Error).message)}`}\n`,
    );
    return 1;
  }
}
