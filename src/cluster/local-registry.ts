import { spawn } from "node:child_process";
import { accessSync, closeSync, constants, openSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { parseHostURL } from "../config/cluster/host-url.js";
import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import {
  REGISTRY_CONTAINER_PORT,
  REGISTRY_NETWORK_ALIAS,
  registryConfig,
  registryHost,
} from "../config/local-registry.js";
import { joinHostPort } from "../config/network.js";
import { stopDetached } from "../remote/detached.js";
import type { Host } from "../remote/host.js";
import { writeRunnerFile } from "../remote/runner-files.js";
import { hasDockerNodes } from "./docker-nodes.js";

// The local registry on the runner (Cluster `registry`), after kind's "Local Registry" recipe
// (kind docs, user/local-registry) and k3d's `registry create` + `--registry-use`: the runner
// pushes to localhost:<port>, and every node's containerd maps that name to the registry.
// Where it runs:
// - docker nodes: a `registry:2` container on the cluster's Docker network (kind's recipe), its
//   port published on the runner; the nodes reach it by its network alias.
// - the runner or SSH nodes: the distribution registry's own program when the runner has it
//   (Debian and Ubuntu package it as `docker-registry`: no image to pull, no Docker needed, the
//   way a self-hosted runner without Docker gets one), else the same `registry:2` container on
//   the runner's Docker engine (what GitHub's hosted runners have). With SSH nodes it listens on
//   every address of the runner and the nodes reach it at the address their SSH connection comes
//   from; otherwise on the loopback only.
// It lives until `kubeforge down`, or the end of the job, as the tunnel does (cluster/tunnel.ts).

/** What the state file records, so that a later run reuses it and teardown removes it. */
interface RegistryState {
  port: number;
  /** The registry program's process. */
  pid?: number;
  /** Its configuration file: a pid whose command line names it is ours. */
  config?: string;
  dataDir?: string;
  /** The registry:2 container's name. */
  container?: string;
}

export interface StartedRegistry {
  /** Where the runner pushes and what images are named by: localhost:<port>. */
  host: string;
  port: number;
  /** How it runs, for the log ("the docker-registry program, pid 123"). */
  via: string;
  /** A container on the cluster's network (docker nodes): its address from those nodes. */
  networkServer?: string;
}

export interface RegistryOptions {
  /** Where its pid or container is recorded (the tunnel's neighbour). */
  stateFile: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  timeoutMs?: number;
}

/** The program names of the distribution registry: Debian's and upstream's. */
const PROGRAMS = ["docker-registry", "registry"];

function hasSshNodes(spec: ClusterSpec): boolean {
  return spec.nodes.some((n) => {
    const url = parseHostURL(n.host);
    return !("problem" in url) && url.type === "ssh";
  });
}

function findProgram(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter).filter((d) => d !== "")) {
    for (const name of PROGRAMS) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

async function readState(stateFile: string): Promise<RegistryState | undefined> {
  const text = await readFile(stateFile, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as RegistryState;
  } catch {
    return undefined;
  }
}

/** The recorded process, when it still runs and is still the registry kubeforge started. */
async function ourProcess(state: RegistryState): Promise<number | undefined> {
  if (state.pid === undefined || state.config === undefined) return undefined;
  const cmdline = await readFile(`/proc/${state.pid}/cmdline`, "utf8").catch(() => "");
  return cmdline.split("\0").includes(state.config) ? state.pid : undefined;
}

async function portInUse(port: number, hostIp: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (e: NodeJS.ErrnoException) =>
      e.code === "EADDRINUSE" ? resolve(true) : reject(e),
    );
    server.listen({ port, host: hostIp, exclusive: true }, () =>
      server.close(() => resolve(false)),
    );
  });
}

async function waitUntilServing(
  port: number,
  timeoutMs: number,
  where: string,
  gone: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    const why = gone();
    if (why !== undefined) throw new Error(`registry: ${why}; see ${where}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/`, {
        signal: AbortSignal.timeout(2000),
      });
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `registry: the registry did not answer on 127.0.0.1:${port} within ${Math.round(timeoutMs / 1000)}s (${last}); see ${where}`,
  );
}

async function startProgram(
  program: string,
  port: number,
  hostIp: string,
  opts: RegistryOptions,
): Promise<RegistryState> {
  const base = opts.stateFile.replace(/\.json$/, "");
  const config = `${base}.yml`;
  const dataDir = `${base}.data`;
  const logFile = `${base}.log`;
  const addr = hostIp === "0.0.0.0" ? `:${port}` : `${hostIp}:${port}`;
  await writeRunnerFile(config, registryConfig({ rootDirectory: dataDir, addr }), 0o600);
  const logFd = openSync(
    logFile,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
    0o600,
  );
  const child = spawn(program, ["serve", config], {
    detached: true,
    stdio: ["ignore", logFd, logFd],
    env: opts.env,
  });
  closeSync(logFd);
  let failed: string | undefined;
  child.once("error", (e) => (failed = `${program} did not start: ${e.message}`));
  child.once("exit", (code) => (failed ??= `${program} exited with code ${code}`));
  try {
    await waitUntilServing(port, opts.timeoutMs ?? 30_000, logFile, () => failed);
  } catch (e) {
    if (failed === undefined) child.kill("SIGKILL");
    throw e;
  }
  child.removeAllListeners();
  child.unref();
  opts.log(`[registry] ${program} (pid ${child.pid}) on ${addr}, its blobs in ${dataDir}`);
  return { port, pid: child.pid!, config, dataDir };
}

async function startContainer(
  spec: ClusterSpec,
  port: number,
  hostIp: string,
  opts: RegistryOptions,
): Promise<RegistryState> {
  const docker = await import("../remote/docker/index.js");
  const cluster = await docker.dockerCluster(spec, opts.log).catch((e: unknown) => {
    throw new Error(
      `registry: this machine has neither the docker-registry program (apt-get install docker-registry) nor a Docker engine to run registry:2 in (${(e as Error).message})`,
      { cause: e },
    );
  });
  const container = await cluster.ensureRegistry(port, hostIp);
  await waitUntilServing(port, opts.timeoutMs ?? 60_000, `docker logs ${container}`);
  return { port, container };
}

/**
 * Starts the cluster's registry on the runner, or reuses the one a previous run started on the
 * same port. A port another program holds is refused before anything starts.
 */
export async function startLocalRegistry(
  spec: ClusterSpec,
  opts: RegistryOptions,
): Promise<StartedRegistry> {
  if (!spec.registry) throw new Error("the Cluster has no registry");
  const { port } = spec.registry;
  const docker = hasDockerNodes(spec);
  const hostIp = hasSshNodes(spec) ? "0.0.0.0" : "127.0.0.1";
  const started = (via: string): StartedRegistry => ({
    host: registryHost(port),
    port,
    via,
    ...(docker
      ? { networkServer: `http://${REGISTRY_NETWORK_ALIAS}:${REGISTRY_CONTAINER_PORT}` }
      : {}),
  });

  const previous = await readState(opts.stateFile);
  const program = docker ? undefined : findProgram(opts.env);
  const running = previous?.port === port ? await ourProcess(previous) : undefined;
  if (running !== undefined && program !== undefined) {
    return started(`the ${program} program, pid ${running} (already running)`);
  }
  // A registry:2 container of a previous run on this port is reused by ensureRegistry.
  const ownContainer = previous?.port === port && previous.container !== undefined;
  if (!ownContainer) {
    await stopLocalRegistry(opts.stateFile);
    if (await portInUse(port, hostIp)) {
      throw new Error(
        `registry: port ${port} on this machine is in use by another program; give another port (for example registry: ${port === 65535 ? 5002 : port + 1})`,
      );
    }
  }
  // The CLI's is next to admin.conf, whose folder (~/.kube) may not exist yet.
  await mkdir(dirname(opts.stateFile), { recursive: true, mode: 0o700 });
  const state = program
    ? await startProgram(program, port, hostIp, opts)
    : await startContainer(spec, port, hostIp, opts);
  await writeRunnerFile(opts.stateFile, `${JSON.stringify(state)}\n`, 0o600);
  return started(
    state.container
      ? `the ${state.container} container (registry:2)`
      : `the ${program} program, pid ${state.pid}`,
  );
}

/** Stops and removes the registry recorded in `stateFile`; returns what was removed. */
export async function stopLocalRegistry(stateFile: string): Promise<string | undefined> {
  const state = await readState(stateFile);
  if (state === undefined) return undefined;
  let removed: string | undefined;
  const pid = await ourProcess(state);
  if (pid !== undefined && (await stopDetached(pid))) removed = `the registry process ${pid}`;
  if (state.container !== undefined) {
    const docker = await import("../remote/docker/index.js");
    const engine = await docker.DockerEngine.connect();
    await engine.removeContainer(state.container);
    removed = `the registry container ${state.container}`;
  }
  for (const path of [state.dataDir, state.config]) {
    if (path !== undefined) await rm(path, { recursive: true, force: true });
  }
  await rm(stateFile, { force: true });
  return removed;
}

/**
 * The registry's address as the node's containerd reaches it (hosts.toml's server): the
 * container's alias on the cluster's network, the runner's loopback, or for an SSH node the
 * address its SSH connection comes from (sshd's SSH_CONNECTION: client address first).
 */
export async function registryServerFor(
  node: ClusterNodeSpec,
  host: Host,
  registry: StartedRegistry,
): Promise<string> {
  const url = parseHostURL(node.host);
  const type = "problem" in url ? "local" : url.type;
  if (type === "docker") {
    if (!registry.networkServer)
      throw new Error(`${node.name}: the registry is not on the nodes' network`);
    return registry.networkServer;
  }
  if (type !== "ssh") return `http://127.0.0.1:${registry.port}`;
  const r = await host.exec(["printenv", "SSH_CONNECTION"], { readOnly: true, timeoutMs: 10_000 });
  const client = r.stdout.trim().split(/\s+/)[0] ?? "";
  if (r.code !== 0 || client === "") {
    throw new Error(
      `${node.name}: cannot tell the runner's address from the node (SSH_CONNECTION is not set), so the registry cannot be reached from it`,
    );
  }
  return `http://${joinHostPort(client, registry.port)}`;
}
