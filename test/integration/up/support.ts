import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bundledCli, type CliResult } from "../../support/cli.js";
import { TEST_HOST_PREFLIGHT_IGNORES } from "../../support/preflight-ignores.js";
import type { SshTestbed, SshTestHost } from "../../support/testbed.js";
import { fileDir } from "../../support/temp-dir.js";

// Shared by the `kubeforge up` tests: a Cluster file for testbed hosts over SSH, the bundled CLI
// run from the test process (the "runner"), and kubectl with the admin.conf `up` exported.

export interface ClusterFileOptions {
  name: string;
  controlPlanes: SshTestHost[];
  workers: SshTestHost[];
  controlPlaneEndpoint?: string;
  wait?: string;
  /** Extra lines under `ssh:`. */
  ssh?: string[];
  /** Replaces a node's host key pin (host-key mismatch tests). */
  pinFor?: (h: SshTestHost) => string;
  /** The SSH login of a node (default root), e.g. the testbed's password-less sudo user. */
  userFor?: (h: SshTestHost) => string;
  /**
   * Where Kubernetes releases come from (prepare.downloads.kubernetes): a local release server's
   * (test/support/release-server.ts) for tests that download binaries, as an upgrade does.
   */
  kubernetesDownloads?: string;
  /** prepare.downloads.kubernetesCI (with kubernetesDownloads): where CI builds come from. */
  kubernetesCIDownloads?: string;
  /** The Cluster's kubernetesVersion (default v1.35.0; the testbed's kubelets report theirs). */
  kubernetesVersion?: string;
}

/**
 * What a testbed host cannot pass of kubeadm's preflight, and only that (preflight-ignores.ts),
 * as a YAML list for nodeRegistration.ignorePreflightErrors. Every other check runs for real.
 */
export const TESTBED_PREFLIGHT_IGNORES = `[${TEST_HOST_PREFLIGHT_IGNORES.join(", ")}]`;

/** A Cluster file: every host pinned by its fingerprint, node preparation off. */
export function clusterFile(o: ClusterFileOptions): string {
  const key = (o.controlPlanes[0] ?? o.workers[0])!.ssh.privateKeyFile;
  const node = (h: SshTestHost, role: string) =>
    `- {name: ${h.name}, role: ${role}, host: "ssh://${o.userFor?.(h) ?? "root"}@${h.ssh.host}:${h.ssh.port}", ssh: {hostKeyFingerprints: ["${o.pinFor ? o.pinFor(h) : h.ssh.hostKeyFingerprint}"]}}`;
  return [
    "apiVersion: kubeforge.dev/v1alpha1",
    "kind: Cluster",
    `name: ${o.name}`,
    `kubernetesVersion: ${o.kubernetesVersion ?? "v1.35.0"}`,
    ...(o.controlPlaneEndpoint ? [`controlPlaneEndpoint: "${o.controlPlaneEndpoint}"`] : []),
    `wait: ${o.wait ?? "3m"}`,
    // The test hosts are prepared already (the simulated kubelet and runtime); node preparation
    // has its own test (prepare.test.ts) against a local release server.
    o.kubernetesDownloads === undefined
      ? "prepare: {enabled: false}"
      : `prepare: {enabled: false, downloads: {kubernetes: "${o.kubernetesDownloads}"${o.kubernetesCIDownloads === undefined ? "" : `, kubernetesCI: "${o.kubernetesCIDownloads}"`}}}`,
    "ssh:",
    `  privateKeyFile: ${key}`,
    ...(o.ssh ?? []).map((l) => `  ${l}`),
    "nodes:",
    ...o.controlPlanes.map((h) => node(h, "control-plane")),
    ...o.workers.map((h) => node(h, "worker")),
    "---",
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: InitConfiguration",
    `nodeRegistration: {ignorePreflightErrors: ${TESTBED_PREFLIGHT_IGNORES}}`,
    "---",
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: JoinConfiguration",
    `nodeRegistration: {ignorePreflightErrors: ${TESTBED_PREFLIGHT_IGNORES}}`,
    "",
  ].join("\n");
}

export interface Runner {
  dir: string;
  kubeforge(args: string[], timeoutMs?: number): Promise<CliResult>;
  writeClusterFile(text: string, name?: string): Promise<string>;
  kubectl<T = unknown>(kubeconfig: string, args: string[]): Promise<T>;
}

export async function runner(): Promise<Runner> {
  const dir = await fileDir("kubeforge-up-");
  const cli = await bundledCli();
  return {
    dir,
    kubeforge: (args, timeoutMs = 400_000) =>
      cli.kubeforge(args, { timeoutMs, env: { HOME: dir } }),
    writeClusterFile: async (text, name = "cluster.yaml") => {
      const path = join(dir, name);
      await writeFile(path, text);
      return path;
    },
    kubectl: <T>(kubeconfig: string, args: string[]) =>
      new Promise<T>((resolve, reject) => {
        execFile(
          "kubectl",
          ["--kubeconfig", kubeconfig, "--request-timeout", "20s", ...args, "-o", "json"],
          { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
          (error, stdout, stderr) => {
            if (error) reject(new Error(`kubectl ${args.join(" ")}: ${stderr || error.message}`));
            else resolve(JSON.parse(stdout) as T);
          },
        );
      }),
  };
}

interface NodeList {
  items: {
    metadata: { name: string; labels?: Record<string, string> };
    spec?: { podCIDR?: string; taints?: { key: string }[] };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

/** name → Ready status, through real kubectl with the exported admin.conf. */
export async function nodeReadiness(
  r: Runner,
  kubeconfig: string,
): Promise<Record<string, string>> {
  const nodes = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
  return Object.fromEntries(
    nodes.items.map((n) => [
      n.metadata.name,
      n.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "none",
    ]),
  );
}

/** What a failed run should show: the CLI's output and every host's sim logs. */
export async function diagnostics(bed: SshTestbed, result: CliResult): Promise<string> {
  const logs = await Promise.all(
    bed.hosts.map(async (h) => `=== ${h.name}\n${(await h.node.logs()).slice(-3000)}`),
  );
  return `exit ${result.code}\n--- stderr\n${result.stderr}\n--- stdout\n${result.stdout}\n${logs.join("\n")}`;
}

/** Lines of secrets that must never appear in kubeforge's output. */
export async function secretLines(bed: SshTestbed): Promise<string[]> {
  const key = await readFile(bed.hosts[0]!.ssh.privateKeyFile, "utf8");
  return key.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
}

/** Retries `attempt` until it resolves or `timeoutMs` passes (then fails with the last error). */
export async function eventually<T>(
  what: string,
  attempt: () => Promise<T>,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      return await attempt();
    } catch (e) {
      last = e;
      await new Promise((res) => setTimeout(res, 500));
    }
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms: ${String(last)}`);
}

/**
 * The bundled CLI run as the runner's user (HOME in the runner's folder), trusting the local
 * release server's CA (NODE_EXTRA_CA_CERTS), with `env` added.
 */
export async function cliTrustingReleaseServer(
  r: Runner,
  ca: string,
  env: Record<string, string> = {},
): Promise<(args: string[]) => Promise<CliResult>> {
  const caFile = join(r.dir, "release-ca.pem");
  await writeFile(caFile, ca);
  const bundled = await bundledCli();
  return (args) =>
    bundled.kubeforge(args, {
      timeoutMs: 900_000,
      env: { HOME: r.dir, NODE_EXTRA_CA_CERTS: caFile, ...env },
    });
}

/**
 * What an upgrade may change on every host, for "nothing changed": node files, kubelet files,
 * kubeforge's state (in the rootfs), and the binaries in /usr/local/bin (the SSH view's own
 * overlay, outside the rootfs).
 */
export function upgradeHostDigests(bed: SshTestbed): Promise<string[]> {
  return Promise.all(
    bed.hosts.flatMap((h) => [
      ...["etc/kubernetes", "var/lib/kubelet", "var/lib/kubeforge"].map((d) =>
        treeDigest(h.path(d)),
      ),
      h.sshOutput(
        "ls -l --time-style=full-iso /usr/local/bin; sha256sum /usr/local/bin/* || true",
        { timeoutMs: 60_000 },
      ),
    ]),
  );
}

/** sha256 over every file under `dir` (path, mode, mtime and content), for "nothing changed". */
export async function treeDigest(dir: string): Promise<string> {
  const hash = createHash("sha256");
  const walk = async (d: string): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        const s = await stat(p);
        hash.update(`${p} ${s.mode} ${s.mtimeMs}\n`);
        hash.update(await readFile(p));
      }
    }
  };
  await walk(dir);
  return hash.digest("hex");
}

/** One line of a container's log: when it was written, and what. */
export interface LogLine {
  at: number;
  text: string;
}

/**
 * Every line the simulated kube-apiserver of `node` logged, across its restarts: the container
 * logs the simulated kubelet keeps under /var/log/pods (CRI format: `<RFC 3339> <stream> F
 * <line>`), oldest first.
 */
export async function apiServerLog(host: SshTestHost, node: string): Promise<LogLine[]> {
  const pods = host.path("/var/log/pods");
  const lines: LogLine[] = [];
  for (const dir of await readdir(pods)) {
    if (!dir.startsWith(`kube-system_kube-apiserver-${node}_`)) continue;
    const container = join(pods, dir, "kube-apiserver");
    for (const file of await readdir(container)) {
      for (const line of (await readFile(join(container, file), "utf8")).split("\n")) {
        const m = /^(\S+) (?:stdout|stderr) [FP] (.*)$/.exec(line);
        if (m) lines.push({ at: Date.parse(m[1]!), text: m[2]! });
      }
    }
  }
  return lines.sort((a, b) => a.at - b.at);
}

/**
 * Why an API server gave a probe no answer from `from` to `to` although it was up, when its log
 * says: it answered other requests meanwhile (the probe's request was late to reach it: a loaded
 * machine), or its event loop was held — by a synchronous etcd call or by a machine too loaded to
 * run it — and with it every request (the simulation's limit, etcd-backend.ts and stall-log.ts:
 * the real server holds only the one request, on threads of its own).
 */
export function upButSilent(log: LogLine[], from: number, to: number): string | undefined {
  const answered = log.filter((l) => l.at >= from && l.at <= to && / → \d{3}\b/.test(l.text));
  if (answered.length > 0) return `answered ${answered.length} other request(s) meanwhile`;
  for (const l of log) {
    const held = /held the API server for (\d+) ms/.exec(l.text);
    if (held && l.at >= from && l.at - Number(held[1]) <= to) return l.text;
  }
  return undefined;
}
