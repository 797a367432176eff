import { execFile, execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { opensslCAPin } from "./ca-pin.js";
import { bundledCli, type CliResult } from "./cli.js";
import { simulatedNode, type SimulatedNode } from "./sim/kubelet/index.js";
import { RUNTIME_CHILD_PIDS, RUNTIME_PIDFILE } from "./sim/kubelet/runtime-daemon.js";
import {
  prepareSshTestbed,
  runSsh,
  sshClientArgv,
  startSshHost,
  writeKnownHosts,
  type TestHostSsh,
} from "./testbed-ssh.js";
import { alive } from "./processes.js";

// Several test hosts on one machine, networked for real: each host is a network namespace with
// its own loopback and one veth on a Linux bridge in the root namespace, a rootfs folder and a
// simulated node (test/support/sim/kubelet) whose systemctl shim is first on PATH. kubeadm's
// ports are fixed (2379, 2380, 2381, 6443, 10248, 10257, 10259), so every kubeforge process of a
// host runs inside the host's namespace (`ip netns exec`): the kubelet the shim starts, the
// container runtime the kubelet starts and the etcd/API server that runtime runs are its
// descendants and inherit the namespace, so each host has its own set of those ports.
// The bridge has an address too: the test process (root namespace) reaches every host directly.
// With `{ ssh: true }` every host also runs OpenSSH's sshd in a mount + UTS namespace of its own
// whose node folders are the rootfs's (testbed-ssh.ts).

export type { CliResult } from "./cli.js";
export type { TestHostSsh } from "./testbed-ssh.js";

export interface TestHost {
  name: string;
  /** The host's IPv4 address on the testbed bridge. */
  address: string;
  /** The host's IPv6 ULA address on the bridge (testbeds created with `ipv6: true`). */
  address6?: string;
  rootfs: string;
  /** The network namespace's name (`ip netns exec <ns> ...`). */
  ns: string;
  /** The namespace's identity as /proc/<pid>/ns/net shows it, e.g. "net:[4026532301]". */
  netnsId: string;
  node: SimulatedNode;
  /** A folder for the test's own files about this host (configs, patches); not in the rootfs. */
  workDir: string;
  /** Absolute path of a node file. */
  path(p: string): string;
  /** The bundled kubeforge CLI, inside the namespace, with the node's environment. */
  kubeforge(args: string[], opts?: ExecOptions): Promise<CliResult>;
  /** Any command inside the namespace, with the node's environment (etcdctl, ss, curl...). */
  exec(argv: string[], opts?: ExecOptions): Promise<CliResult>;
  /** Pids of the processes in the namespace now (`ip netns pids`). */
  netnsPids(): Promise<number[]>;
  /** The simulated node's daemons: kubelet, container runtime, and the processes it runs (etcd). */
  daemonPids(): Promise<{ kubelet?: number; runtime?: number; containers: number[] }>;
  /**
   * Sets the bridge side of the host's veth down (false) or up (true): while down, nothing
   * reaches the host or leaves it (connections time out; no reset is sent).
   */
  setLinkUp(up: boolean): Promise<void>;
}

/**
 * A host of `createTestbed(names, { ssh: true })`. `exec` and `kubeforge` still run through
 * `ip netns exec` with the machine's file view (node files under `rootfs`); an SSH session sees
 * the host's own view (node files at their absolute paths, bound to the same rootfs folders).
 */
export interface SshTestHost extends TestHost {
  ssh: TestHostSsh;
  /** Runs `command` (a shell command line) over SSH with the OpenSSH client (default user root). */
  sshRun(
    command: string,
    opts?: { user?: string; stdin?: string; timeoutMs?: number },
  ): Promise<CliResult>;
  /** sshRun's stdout; a command that fails throws, naming the host, the command and its stderr. */
  sshOutput(command: string, opts?: { user?: string; timeoutMs?: number }): Promise<string>;
  /** sshd's listener pid, when it runs. */
  sshdPid(): Promise<number | undefined>;
  /** Stops the listener (new connections are refused); open sessions go on, as with systemd. */
  stopSsh(): Promise<void>;
  /** Starts the listener again, in the same namespaces (the host's files are kept). */
  startSsh(): Promise<void>;
  /** Kills the sshd process of every open connection (the client sees the connection drop). */
  dropSshSessions(): Promise<number>;
}

export interface ExecOptions {
  env?: Record<string, string>;
  /** Killed after this long (default 3 minutes), so a hung command cannot hang the test file. */
  timeoutMs?: number;
}

export interface Testbed {
  hosts: TestHost[];
  host(name: string): TestHost;
  /** The bridge, its /24 and its own address (the hosts' default gateway). */
  bridge: string;
  subnet: string;
  gateway: string;
  /** kubectl from the root namespace with the host's admin.conf, JSON output parsed. */
  kubectl<T = unknown>(host: TestHost, args: string[]): Promise<T>;
  /** sha256 of the host's cluster CA public key (SubjectPublicKeyInfo), computed with openssl. */
  caCertHash(host: TestHost): Promise<string>;
  /** Stops every node and process in the namespaces; removes namespaces, links and folders. */
  stop(): Promise<void>;
}

export interface SshTestbed extends Testbed {
  hosts: SshTestHost[];
  host(name: string): SshTestHost;
  /** A known_hosts file with every host's line. */
  knownHostsFile: string;
  /** The host's sshd log so far (LogLevel VERBOSE), for failure messages. */
  sshLogs(host: TestHost): Promise<string>;
}

export interface TestbedOptions {
  /** The simulated kubelets' time scale (default: simulatedNode's). */
  timeScale?: number;
  /** Every host runs OpenSSH's sshd on <address>:22 (see SshTestHost and testbed-ssh.ts). */
  ssh?: boolean;
  /** The version a host's simulated kubelet reports (by host name; default simulatedNode's). */
  kubeletVersions?: Record<string, string>;
  /**
   * Every host also gets an IPv6 ULA address on eth0 (fd00:251:<n>::<10+i>/64), an IPv6
   * default route via the bridge's fd00:251:<n>::1 and IPv6 forwarding on, for IPv6 and
   * dual-stack clusters.
   */
  ipv6?: boolean;
}

function run(argv: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
  return new Promise<CliResult>((resolve) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      {
        env: opts.env ?? process.env,
        maxBuffer: 32 * 1024 * 1024,
        timeout: opts.timeoutMs ?? 180_000,
        killSignal: "SIGKILL",
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        const note = error?.killed ? `\n(killed after ${opts.timeoutMs ?? 180_000} ms)` : "";
        resolve({ code, stdout, stderr: stderr + note });
      },
    );
  });
}

/** Runs a setup command; a failure throws with the command and its stderr. */
async function must(argv: string[]): Promise<string> {
  const r = await run(argv, { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`${argv.join(" ")} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** Runs every step even when some fail; the errors are returned for a report. */
async function attemptAll(steps: (() => Promise<unknown>)[]): Promise<unknown[]> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (e) {
      errors.push(e);
    }
  }
  return errors;
}

/** The 10.251.<n>.0/24 subnets no route of this machine uses or covers (default route aside). */
async function subnetIsFree(n: number): Promise<boolean> {
  const covering = await run(["ip", "-4", "route", "show", "match", `10.251.${n}.1`]);
  const inside = await run(["ip", "-4", "route", "show", "root", `10.251.${n}.0/24`]);
  const routes = `${covering.stdout}\n${inside.stdout}`
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("default"));
  return covering.code === 0 && inside.code === 0 && routes.length === 0;
}

/**
 * Claims a bridge and its /24. The bridge name carries the subnet octet, and creating a link
 * whose name exists fails: that makes the claim atomic between test files running side by side;
 * a bridge left by an earlier run simply keeps its octet taken.
 */
async function claimBridge(): Promise<{ bridge: string; octet: number }> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const octet = 1 + Math.floor(Math.random() * 254);
    if (!(await subnetIsFree(octet))) continue;
    const bridge = `kftb${octet}`;
    const r = await run(["ip", "link", "add", bridge, "type", "bridge"]);
    if (r.code === 0) return { bridge, octet };
    if (!/exists/i.test(r.stderr)) throw new Error(`ip link add ${bridge}: ${r.stderr.trim()}`);
  }
  throw new Error("no free 10.251.<n>.0/24 subnet for a testbed bridge after 40 attempts");
}

/**
 * With br_netfilter on, bridged frames pass the FORWARD chain of iptables (IPv4) or ip6tables
 * (IPv6), whose policy may drop.
 */
async function forwardDropsBridgedTraffic(tool: "iptables" | "ip6tables"): Promise<boolean> {
  const nf = await readFile(`/proc/sys/net/bridge/bridge-nf-call-${tool}`, "utf8").catch(() => "0");
  if (nf.trim() !== "1") return false;
  const r = await run([tool, "-S", "FORWARD"]);
  return r.code === 0 && !r.stdout.includes("-P FORWARD ACCEPT");
}

async function readPid(file: string): Promise<number | undefined> {
  const n = Number((await readFile(file, "utf8").catch(() => "")).trim());
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function pidsIn(ns: string): number[] {
  try {
    return execFileSync("ip", ["netns", "pids", ns], { stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Kills, by pid, whatever still runs inside a testbed namespace (all of it started by the test). */
async function killNamespaceProcesses(ns: string): Promise<void> {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    const pids = pidsIn(ns).filter((p) => p !== process.pid);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        /* gone */
      }
    }
    const end = Date.now() + (signal === "SIGTERM" ? 3_000 : 2_000);
    while (pids.some(alive) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  }
}

/** sh script: bind-mounts $1 on /etc/hosts and $2 on /etc/resolv.conf, then runs the rest. */
const WITH_HOST_FILES =
  'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf || exit 125; shift 2; exec "$@"';

/** Teardown steps of the testbeds still up, for a last synchronous attempt at process exit. */
const live = new Set<() => void>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const teardown of live) teardown();
  });
}

export function createTestbed(
  names: string[],
  o: TestbedOptions & { ssh: true },
): Promise<SshTestbed>;
export function createTestbed(names: string[], o?: TestbedOptions): Promise<Testbed>;
export async function createTestbed(
  names: string[],
  o: TestbedOptions = {},
): Promise<Testbed | SshTestbed> {
  if (names.length === 0 || names.length > 200) throw new Error("a testbed has 1 to 200 hosts");
  if (new Set(names).size !== names.length) throw new Error("testbed host names must be unique");
  for (const n of names) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n) || n.length > 40)
      throw new Error(`testbed host name "${n}" is not a short DNS label`);
  }

  // Undo steps, run in reverse order by stop() whatever happened.
  const undo: (() => Promise<unknown>)[] = [];
  const namespaces: string[] = [];
  const links: string[] = [];
  const folders: string[] = [];
  const firewallRules: [tool: "iptables" | "ip6tables", rule: string[]][] = [];
  const syncTeardown = () => {
    for (const ns of namespaces) {
      for (const pid of pidsIn(ns)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }
    for (const args of [
      ...namespaces.map((ns) => ["netns", "delete", ns]),
      ...links.map((l) => ["link", "delete", l]),
    ]) {
      try {
        execFileSync("ip", args, { stdio: "ignore" });
      } catch {
        /* already gone */
      }
    }
    for (const [tool, rule] of firewallRules) {
      try {
        execFileSync(tool, ["-D", ...rule], { stdio: "ignore" });
      } catch {
        /* already gone */
      }
    }
    for (const f of folders) {
      try {
        rmSync(f, { recursive: true, force: true });
      } catch {
        /* best effort at exit */
      }
    }
  };
  installExitHook();
  live.add(syncTeardown);

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      const errors = await attemptAll([...undo].reverse());
      live.delete(syncTeardown);
      if (errors.length > 0) {
        console.warn(`testbed teardown: ${errors.length} step(s) failed`, ...errors);
      }
    })());

  let cliBundle: Promise<string> | undefined;
  try {
    const base = await mkdtemp(join(tmpdir(), "kubeforge-testbed-"));
    folders.push(base);
    undo.push(() => rm(base, { recursive: true, force: true }));
    // Bundling the CLI (esbuild, seconds on a busy machine) overlaps the hosts' setup.
    // The run's shared bundle: other test files may be using it, so the testbed leaves it be.
    cliBundle = bundledCli().then((cli) => join(cli.dir, "cli.js"));
    // Awaited below; a failure elsewhere first must not leave it an unhandled rejection.
    cliBundle.catch(() => undefined);
    const cliScript = cliBundle;

    const { bridge, octet } = await claimBridge();
    links.push(bridge);
    undo.push(() => must(["ip", "link", "delete", bridge]));
    const subnet = `10.251.${octet}.0/24`;
    const gateway = `10.251.${octet}.1`;
    await must(["ip", "link", "set", bridge, "alias", `kubeforge testbed (pid ${process.pid})`]);
    await must(["ip", "addr", "add", `${gateway}/24`, "dev", bridge]);
    // A ULA /64 per bridge; "nodad": the address is usable at once, not tentative for seconds.
    const gateway6 = o.ipv6 ? `fd00:251:${octet}::1` : undefined;
    if (gateway6) await must(["ip", "-6", "addr", "add", `${gateway6}/64`, "dev", bridge, "nodad"]);
    await must(["ip", "link", "set", bridge, "up"]);
    for (const tool of o.ipv6 ? (["iptables", "ip6tables"] as const) : (["iptables"] as const)) {
      if (!(await forwardDropsBridgedTraffic(tool))) continue;
      const rule = ["FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"];
      await must([tool, "-I", ...rule]);
      firewallRules.push([tool, rule]);
      undo.push(() => must([tool, "-D", ...rule]));
    }

    // The hosts' own /etc/hosts and /etc/resolv.conf: every testbed host resolves by name, as
    // on a network with DNS, and other names fail at once (nothing answers on 127.0.0.1:53)
    // instead of waiting for a nameserver the namespaces cannot reach.
    const addressOf = (i: number) => `10.251.${octet}.${10 + i}`;
    // Each host's simulated kubelet gives its Pods the ten addresses 10.251.<n>.<100+10i>...+9
    // (sim/kubelet/pod-network.ts): in the bridge's /24, apart from the hosts' own addresses
    // (.10 up) and from each other's, so every namespace on the bridge reaches them by ARP.
    const podIPRangeOf = (i: number) =>
      100 + 10 * i + 9 <= 254
        ? `10.251.${octet}.${100 + 10 * i}-10.251.${octet}.${100 + 10 * i + 9}`
        : undefined;
    const hostsFile = join(base, "hosts");
    const resolvFile = join(base, "resolv.conf");
    await writeFile(
      hostsFile,
      [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        ...names.map((n, i) => `${addressOf(i)}\t${n}`),
        "",
      ].join("\n"),
    );
    await writeFile(resolvFile, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");

    const sshFiles = o.ssh ? await prepareSshTestbed(base) : undefined;
    const sshLogFiles = new Map<string, string>();

    // Hosts are set up side by side; each one's undo steps keep their order among themselves.
    const createHost = async (name: string, i: number): Promise<TestHost | SshTestHost> => {
      const address = addressOf(i);
      const ns = `kftb${octet}-${process.pid}-${name}`;
      const hostVeth = `kftb${octet}v${i}`;
      const peer = `kftb${octet}p${i}`;
      await must(["ip", "netns", "add", ns]);
      namespaces.push(ns);
      undo.push(() => must(["ip", "netns", "delete", ns]));
      // Whatever a test left running in the namespace ends before the namespace is deleted.
      undo.push(() => killNamespaceProcesses(ns));
      await must(["ip", "link", "add", hostVeth, "type", "veth", "peer", "name", peer]);
      links.push(hostVeth);
      // Deleting either end of a veth deletes both.
      undo.push(() => run(["ip", "link", "delete", hostVeth]));
      await must(["ip", "link", "set", peer, "netns", ns]);
      await must(["ip", "link", "set", hostVeth, "master", bridge, "up"]);
      const inNs = (...argv: string[]) => must(["ip", "netns", "exec", ns, ...argv]);
      await inNs("ip", "link", "set", "lo", "up");
      await inNs("ip", "link", "set", peer, "name", "eth0");
      await inNs("ip", "addr", "add", `${address}/24`, "dev", "eth0");
      await inNs("ip", "link", "set", "eth0", "up");
      await inNs("ip", "route", "add", "default", "via", gateway);
      const address6 = gateway6 ? `fd00:251:${octet}::${10 + i}` : undefined;
      if (address6) {
        await inNs("ip", "-6", "addr", "add", `${address6}/64`, "dev", "eth0", "nodad");
        await inNs("ip", "-6", "route", "add", "default", "via", gateway6!);
        // As kubeadm's dual-stack docs ask of every node (its preflight checks
        // net.ipv6.conf.default.forwarding; writing "all" sets "default" too). The namespace's own.
        await inNs("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1");
      }
      const netnsId = (await inNs("readlink", "/proc/self/ns/net")).trim();

      const hostDir = join(base, name);
      const rootfs = join(hostDir, "rootfs");
      const workDir = join(hostDir, "work");
      await mkdir(rootfs, { recursive: true });
      await mkdir(workDir, { recursive: true });
      const node = await simulatedNode({
        rootfs,
        nodeName: name,
        ...(o.timeScale !== undefined ? { timeScale: o.timeScale } : {}),
        ...(o.kubeletVersions?.[name] ? { kubeletVersion: o.kubeletVersions[name] } : {}),
        ...(podIPRangeOf(i) ? { podIPRange: podIPRangeOf(i) } : {}),
      });
      folders.push(join(node.stateDir, ".."));
      // Runs before the namespace's processes are killed: the node's own orderly stop first.
      undo.push(() => node.stop());

      const env = (extra?: Record<string, string>): NodeJS.ProcessEnv => ({
        ...node.env,
        ...extra,
      });
      // `ip netns exec` gives the command a mount namespace of its own (slave of the root's):
      // the bind mounts of the files above stay in it and in the daemons it starts.
      const exec = (argv: string[], opts: ExecOptions = {}) =>
        run(
          [
            "ip",
            "netns",
            "exec",
            ns,
            "sh",
            "-c",
            WITH_HOST_FILES,
            "sh",
            hostsFile,
            resolvFile,
            ...argv,
          ],
          {
            env: env(opts.env),
            ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
          },
        );
      const host: TestHost = {
        name,
        address,
        ...(address6 ? { address6 } : {}),
        rootfs,
        ns,
        netnsId,
        node,
        workDir,
        path: (p) => join(rootfs, p),
        exec,
        kubeforge: async (args, opts) => exec([process.execPath, await cliScript, ...args], opts),
        netnsPids: () => Promise.resolve(pidsIn(ns)),
        daemonPids: async () => {
          const kubelet = await readPid(node.paths.kubeletPidFile);
          const runtime = await readPid(join(node.paths.runtimeDir, RUNTIME_PIDFILE));
          const children = await readFile(join(node.paths.runtimeDir, RUNTIME_CHILD_PIDS), "utf8")
            .then((t) => JSON.parse(t || "[]") as number[])
            .catch(() => []);
          return {
            ...(kubelet ? { kubelet } : {}),
            ...(runtime ? { runtime } : {}),
            containers: children.filter(alive),
          };
        },
        setLinkUp: async (up) => {
          await must(["ip", "link", "set", hostVeth, up ? "up" : "down"]);
        },
      };
      if (!sshFiles) return host;
      // sshd, its sessions and the namespaces' holder live in the network namespace: the
      // namespace's kill step ends them, and the mounts go with the last of them.
      const sshd = await startSshHost({
        name,
        address,
        ns,
        hostDir,
        rootfs,
        binDir: node.binDir,
        hostsFile,
        resolvFile,
        files: sshFiles,
        netnsPids: () => pidsIn(ns),
      });
      sshLogFiles.set(name, sshd.logFile);
      const sshRun: SshTestHost["sshRun"] = (command, opts = {}) =>
        runSsh(
          sshClientArgv(sshd.ssh, sshFiles.knownHostsFile, opts.user ?? "root", command),
          opts,
        );
      return {
        ...host,
        ssh: sshd.ssh,
        sshRun,
        sshOutput: async (command, opts = {}) => {
          const r = await sshRun(command, opts);
          if (r.code !== 0) throw new Error(`${name}: ${command}: ${r.stderr}`);
          return r.stdout;
        },
        sshdPid: sshd.sshdPid,
        stopSsh: sshd.stopSsh,
        startSsh: sshd.startSsh,
        dropSshSessions: sshd.dropSshSessions,
      } satisfies SshTestHost;
    };
    const settled = await Promise.allSettled(names.map((name, i) => createHost(name, i)));
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    const hosts = settled.map((r) => (r as PromiseFulfilledResult<TestHost | SshTestHost>).value);
    await cliBundle;
    if (sshFiles) {
      await writeKnownHosts(
        sshFiles,
        (hosts as SshTestHost[]).map((h) => h.ssh.knownHostsLine),
      );
    }

    return {
      hosts,
      host: (name) => {
        const h = hosts.find((x) => x.name === name);
        if (!h) throw new Error(`the testbed has no host "${name}"`);
        return h;
      },
      bridge,
      subnet,
      gateway,
      kubectl: async <T>(host: TestHost, args: string[]) => {
        const r = await run(
          [
            "kubectl",
            "--kubeconfig",
            host.path("etc/kubernetes/admin.conf"),
            ...args,
            "-o",
            "json",
          ],
          { timeoutMs: 60_000 },
        );
        if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} on ${host.name}: ${r.stderr}`);
        return JSON.parse(r.stdout) as T;
      },
      caCertHash: (host) => Promise.resolve(opensslCAPin(host.path("etc/kubernetes/pki/ca.crt"))),
      stop,
      ...(sshFiles
        ? {
            knownHostsFile: sshFiles.knownHostsFile,
            sshLogs: async (host: TestHost) => {
              const file = sshLogFiles.get(host.name);
              if (!file) throw new Error(`the testbed has no host "${host.name}"`);
              return readFile(file, "utf8").catch(() => "");
            },
          }
        : {}),
    };
  } catch (e) {
    // A bundle still being built registers its folder for removal before the teardown runs.
    await cliBundle?.catch(() => undefined);
    await stop();
    throw e;
  }
}

/** The network namespace a process lives in, as /proc/<pid>/ns/net shows it. */
export function netnsOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}

/** A process's command name (/proc/<pid>/comm), e.g. "etcd". */
export function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
}
