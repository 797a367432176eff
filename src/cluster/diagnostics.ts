import { writeRunnerFile } from "../remote/runner-files.js";
import { mkdir } from "node:fs/promises";
import { join, posix } from "node:path";
import { MANIFESTS_DIR } from "../config/paths.js";
import {
  KUBELET_CONFIG_FILE,
  KUBELET_DIR,
  KUBELET_FLAGS_ENV_FILE,
  KUBELET_INSTANCE_CONFIG_FILE,
} from "../manifests/kubelet.js";
import { lookPath } from "../node/lookpath.js";
import { presentCRISockets } from "../node/preflight/cri.js";
import { fleet } from "../remote/fleet.js";
import { displayCommand } from "../remote/command-limits.js";
import type { ExecResult, Host } from "../remote/host.js";
import { isKeyFileName, redactSecrets } from "./diagnostics/redact.js";
import { MARKER_PATH } from "./node-state.js";
import { kubeletCRISocket } from "./reset.js";

// What a user needs to see when a cluster did not come up (issue 6 "Post step"): the kubelet's
// journal, the containers the runtime knows, the control-plane containers' logs, the static pod
// manifests and the kubelet's configuration, and kubeforge's node marker — the files one would
// read on the node by hand (kubeadm's troubleshooting guide starts with `journalctl -xeu kubelet`
// and `crictl ps -a` / `crictl logs`). Each source is one file under <outDir>/<node>/; a source
// that cannot be read becomes a note in its file and never stops the others. Everything written
// goes through redactSecrets first: the folder is uploaded as an artifact.

export interface DiagnosticsOptions {
  outDir: string;
  log?: (line: string) => void;
  /** Lines kept from each log (journal, container logs); default 1000. */
  tailLines?: number;
  /** Time limit of each command and file read on the node; default 30 s. */
  timeoutMs?: number;
  /** Values known to be secret (an SSH key, a sudo password): cut from every file too. */
  secrets?: readonly string[];
}

/** The control-plane static pods' containers (kubeadm: constants.go, the component names). */
export const CONTROL_PLANE_CONTAINERS = [
  "kube-apiserver",
  "etcd",
  "kube-controller-manager",
  "kube-scheduler",
];

const DEFAULT_TAIL_LINES = 1000;
const DEFAULT_TIMEOUT_MS = 30_000;
/** Sources read at once on one node (an SSH connection allows about 10 sessions). */
const CONCURRENCY = 4;

/** One file of the collection: a relative path and what it holds. */
interface Source {
  file: string;
  what: string;
  collect: () => Promise<string>;
}

class SourceUnavailable extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer after ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

function lastLine(r: ExecResult): string {
  return (r.stderr || r.stdout).trim().split("\n").at(-1) ?? "";
}

/** A command missing on the node: exit 127 from a shell or from LocalHost's spawn. */
function notFound(r: ExecResult): boolean {
  return r.code === 127 || /not found|No such file or directory/.test(r.stderr);
}

const header = (lines: string[]) => lines.map((l) => `# ${l}`).join("\n") + "\n";

/** Safe as one path segment of the local folder (node names are DNS subdomains already). */
function segment(name: string): string {
  const s = name.replace(/[^A-Za-z0-9._-]/g, "_");
  return s === "" || s === "." || s === ".." ? "_" : s;
}

class Collector {
  private readonly tail: number;
  private readonly timeoutMs: number;
  private criSocket: Promise<{ crictl?: string; endpoint?: string; reason?: string }> | undefined;

  constructor(
    private readonly host: Host,
    private readonly nodeName: string,
    opts: DiagnosticsOptions,
  ) {
    this.tail = opts.tailLines ?? DEFAULT_TAIL_LINES;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  exec(argv: string[]): Promise<ExecResult> {
    // The host's own limit ends the command; the race guards against a connection that hangs.
    return withTimeout(
      this.host.exec(argv, { sudo: true, readOnly: true, timeoutMs: this.timeoutMs }),
      this.timeoutMs + Math.min(5_000, this.timeoutMs),
      `"${displayCommand(argv)}"`,
    );
  }

  async readFile(path: string): Promise<string | undefined> {
    const read = async () => {
      if (!(await this.host.exists(path))) return undefined;
      return (await this.host.readFile(path)).toString("utf8");
    };
    return withTimeout(read(), this.timeoutMs, `reading ${path}`);
  }

  /** `tail -n N` of a node file, as root (container logs are root's). */
  async tailFile(path: string): Promise<string> {
    const r = await this.exec(["tail", "-n", String(this.tail), "--", path]);
    if (r.code !== 0) throw new Error(`tail ${path}: ${lastLine(r)}`);
    return r.stdout;
  }

  /** The kubelet's journal; without journald, the service manager's view and log files. */
  async kubeletLog(): Promise<string> {
    const argv = ["journalctl", "-u", "kubelet", "--no-pager", "-n", String(this.tail)];
    const r = await this.exec(argv);
    const text = r.stdout.trim();
    const empty = /^-- No entries --$/m.test(text) || text === "";
    if (r.code === 0 && !empty) return `${header([displayCommand(argv)])}${r.stdout}`;
    const why = notFound(r)
      ? "journalctl is not installed on this node"
      : r.code !== 0
        ? `journalctl failed (exit ${r.code}): ${lastLine(r)}`
        : `journald has no kubelet entries (${lastLine(r) || "empty"})`;
    const parts = [
      header([`${displayCommand(argv)}: ${why}.`, "Falling back to the sources below."]),
    ];
    const status = await this.exec(["systemctl", "status", "kubelet", "--no-pager", "-l"]).catch(
      (e: Error) => ({ code: -1, stdout: "", stderr: e.message }),
    );
    parts.push(
      `\n## systemctl status kubelet (exit ${status.code})\n${status.stdout}${status.stderr}`,
    );
    // OpenRC's kubelet service and hand-started kubelets log to files.
    for (const file of ["/var/log/kubelet.log", "/var/log/kubelet/kubelet.log"]) {
      try {
        const present = await withTimeout(this.host.exists(file), this.timeoutMs, file);
        parts.push(
          present
            ? `\n## ${file} (last ${this.tail} lines)\n${await this.tailFile(file)}`
            : `\n## ${file}: not present\n`,
        );
      } catch (e) {
        parts.push(`\n## ${file}: could not be read: ${(e as Error).message}\n`);
      }
    }
    return parts.join("");
  }

  /** crictl and the CRI endpoint the kubelet uses (kubeadm-flags.env/config), or a known socket. */
  cri(): Promise<{ crictl?: string; endpoint?: string; reason?: string }> {
    this.criSocket ??= (async () => {
      const crictl = await lookPath(this.host, "crictl");
      if (crictl === undefined) return { reason: "crictl is not installed on this node" };
      const configured = await kubeletCRISocket(this.host).catch(() => undefined);
      const endpoint = configured ?? (await presentCRISockets(this.host))[0];
      if (endpoint === undefined) {
        return { crictl, reason: "no CRI socket is configured or present on this node" };
      }
      return { crictl, endpoint };
    })();
    return this.criSocket;
  }

  async crictl(args: string[]): Promise<{ argv: string[]; result: ExecResult }> {
    const { crictl, endpoint, reason } = await this.cri();
    if (crictl === undefined || endpoint === undefined) throw new SourceUnavailable(reason);
    const argv = [crictl, "--runtime-endpoint", endpoint, ...args];
    return { argv, result: await this.exec(argv) };
  }

  async containers(): Promise<string> {
    const { argv, result } = await this.crictl(["ps", "-a"]);
    if (result.code !== 0) throw new Error(`"${displayCommand(argv)}" failed: ${lastLine(result)}`);
    return `${header([displayCommand(argv)])}${result.stdout}`;
  }

  /** The newest container of a control-plane component (crash loops leave older attempts). */
  private async containerId(component: string): Promise<string | undefined> {
    const { argv, result } = await this.crictl(["ps", "-a", "-o", "json"]);
    if (result.code !== 0) throw new Error(`"${displayCommand(argv)}" failed: ${lastLine(result)}`);
    let list: {
      containers?: { id?: string; metadata?: { name?: string }; createdAt?: string }[];
    };
    try {
      list = JSON.parse(result.stdout) as typeof list;
    } catch {
      throw new SourceUnavailable(`"${displayCommand(argv)}" did not print JSON`);
    }
    const mine = (list.containers ?? []).filter((c) => c.metadata?.name === component && c.id);
    const created = (c: { createdAt?: string }) => {
      try {
        return BigInt(c.createdAt ?? "0");
      } catch {
        return 0n;
      }
    };
    mine.sort((a, b) => (created(b) > created(a) ? 1 : created(b) < created(a) ? -1 : 0));
    return mine[0]?.id;
  }

  /** The kubelet's copy of a static pod container's log (/var/log/pods), when crictl cannot. */
  private async podLogFile(component: string): Promise<string | undefined> {
    const root = "/var/log/pods";
    const dirs = await withTimeout(this.host.readDir(root), this.timeoutMs, root);
    // kubelet: <namespace>_<pod name>_<pod uid>; a static pod is named <component>-<node name>.
    const pod =
      dirs.find((d) => d.startsWith(`kube-system_${component}-${this.nodeName}_`)) ??
      dirs.find((d) => d.startsWith(`kube-system_${component}-`));
    if (pod === undefined) return undefined;
    const dir = posix.join(root, pod, component);
    const logs = (await withTimeout(this.host.readDir(dir), this.timeoutMs, dir))
      .filter((f) => /^\d+\.log$/.test(f))
      .sort((a, b) => parseInt(b, 10) - parseInt(a, 10));
    return logs[0] === undefined ? undefined : posix.join(dir, logs[0]);
  }

  async containerLog(component: string): Promise<string> {
    let viaCrictl: string;
    try {
      const id = await this.containerId(component);
      if (id !== undefined) {
        const { argv, result } = await this.crictl(["logs", "--tail", String(this.tail), id]);
        // crictl writes the container's stdout and stderr to its own (klog logs to stderr).
        if (result.code === 0)
          return `${header([displayCommand(argv)])}${result.stdout}${result.stderr}`;
        viaCrictl = `"${displayCommand(argv)}" failed: ${lastLine(result)}`;
      } else viaCrictl = `the container runtime has no ${component} container`;
    } catch (e) {
      viaCrictl = (e as Error).message;
    }
    const file = await this.podLogFile(component).catch(() => undefined);
    if (file === undefined) throw new SourceUnavailable(`${viaCrictl}; no log under /var/log/pods`);
    return `${header([`${viaCrictl}.`, `Showing the kubelet's log file ${file} instead.`])}${await this.tailFile(file)}`;
  }

  async nodeFile(path: string): Promise<string> {
    const text = await this.readFile(path);
    if (text === undefined) throw new SourceUnavailable(`${path} is not present on this node`);
    return text;
  }

  async manifestSources(): Promise<Source[]> {
    const names = await withTimeout(
      this.host.readDir(MANIFESTS_DIR),
      this.timeoutMs,
      MANIFESTS_DIR,
    ).catch(() => [] as string[]);
    const files = names.filter((n) => !isKeyFileName(n) && !n.startsWith(".")).sort();
    if (files.length === 0) {
      return [
        {
          file: "manifests/README.txt",
          what: MANIFESTS_DIR,
          collect: () => Promise.reject(new SourceUnavailable(`${MANIFESTS_DIR} has no files`)),
        },
      ];
    }
    return files.map((n) => ({
      file: `manifests/${segment(n)}`,
      what: posix.join(MANIFESTS_DIR, n),
      collect: () => this.nodeFile(posix.join(MANIFESTS_DIR, n)),
    }));
  }
}

/** A node that is a container: the engine's view of it too (`docker inspect`). */
function engineSources(host: Host): Source[] {
  const inspect = (host as Partial<{ inspect: () => Promise<string> }>).inspect;
  if (typeof inspect !== "function") return [];
  return [
    { file: "docker-inspect.json", what: "docker inspect", collect: () => inspect.call(host) },
  ];
}

/**
 * Collects a node's diagnostics into <outDir>/<node>/ and returns the files written (absolute
 * runner paths). Every source gets its file — the data, or a note saying why it is missing; a
 * failing source never stops the collection. Commands run as root with a time limit.
 */
export async function collectDiagnostics(
  host: Host,
  nodeName: string,
  opts: DiagnosticsOptions,
): Promise<{ files: string[] }> {
  const c = new Collector(host, nodeName, opts);
  const dir = join(opts.outDir, segment(nodeName));
  const kubeletFile = (name: string) => posix.join(KUBELET_DIR, name);
  const sources: Source[] = [
    { file: "kubelet.log", what: "the kubelet's log", collect: () => c.kubeletLog() },
    { file: "crictl-ps.txt", what: "the containers (crictl ps -a)", collect: () => c.containers() },
    ...CONTROL_PLANE_CONTAINERS.map((name) => ({
      file: `containers/${name}.log`,
      what: `the ${name} container's log`,
      collect: () => c.containerLog(name),
    })),
    ...(await c.manifestSources()),
    ...[KUBELET_CONFIG_FILE, KUBELET_INSTANCE_CONFIG_FILE, KUBELET_FLAGS_ENV_FILE].map((name) => ({
      file: `kubelet/${name}`,
      what: kubeletFile(name),
      collect: () => c.nodeFile(kubeletFile(name)),
    })),
    { file: "kubeforge-node.json", what: MARKER_PATH, collect: () => c.nodeFile(MARKER_PATH) },
    ...engineSources(host),
  ];
  const written: string[] = [];
  await fleet(
    sources,
    (s) => s.file,
    async (s) => {
      let text: string;
      try {
        text = await s.collect();
      } catch (e) {
        const reason = (e as Error).message;
        // A source that does not exist on this kind of node is expected; anything else is news.
        if (!(e instanceof SourceUnavailable)) {
          opts.log?.(`${nodeName}: could not collect ${s.what}: ${reason}`);
        }
        text = header([`kubeforge diagnostics: ${s.what} could not be collected: ${reason}`]);
      }
      const path = join(dir, ...s.file.split("/"));
      await mkdir(join(path, ".."), { recursive: true });
      await writeRunnerFile(path, redactSecrets(text, opts.secrets), 0o600);
      written.push(path);
    },
    { concurrency: CONCURRENCY },
  );
  written.sort();
  opts.log?.(`${nodeName}: ${written.length} diagnostics files in ${dir}`);
  return { files: written };
}
