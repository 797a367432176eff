import { execFile } from "node:child_process";
import { createPrivateKey, createPublicKey } from "node:crypto";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { XMLParser } from "fast-xml-parser";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { DisruptionReport } from "../../../src/cluster/upgrade/disruptions.js";
import { PROBE_NAMESPACE } from "../../../src/cluster/upgrade/probes/api-targets.js";
import type { WorkloadsTimeline } from "../../../src/cluster/upgrade/probes/timeline.js";
import { CANARY_IMAGE, CANARY_NAME } from "../../../src/manifests/probe-canary.js";
import type { CliResult } from "../../support/cli.js";
import { etcdctl } from "../../support/etcdctl.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import {
  cliTrustingReleaseServer,
  clusterFile,
  diagnostics,
  runner,
  upgradeHostDigests,
  type Runner,
} from "../up/support.js";

// `kubeforge upgrade -f cluster.yaml --to v1.36.3` on a cluster `kubeforge up` built at v1.35.0
// over real SSH: one control plane and two workers, each a testbed host whose kubelet and API
// server are the simulation (etcd is Debian's). The target kubelet and kubectl come from the
// local release server (binaries whose trailer names their version: the simulated kubelet
// reports it after its restart, test/support/sim/kubelet/binary.ts). First the refusals — two
// minors up, a downgrade — with every host's files unchanged, then the plan, a run whose
// kube-scheduler never restarts on cp-1 (rolled back, the run stops there), the upgrade itself
// resuming it, and a second run that finds every node at the target and changes nothing. The order is
// kubeadm's documented one (kubeadm-upgrade.md §2: `upgrade apply` on the first control plane,
// then on each worker `upgrade node`, a drain, its kubelet upgraded and restarted, uncordoned).

const exec = promisify(execFile);

/**
 * The private keys an upgrade of a control plane renews, as kubeadm's renewCertsByComponent and
 * the admin.conf and super-admin.conf renewals do (phases/upgrade/staticpods.go), and the CA
 * keys it never touches; each renewal makes a new key (certs/renewal: pkiutil.NewCertAndKey).
 */
const RENEWED_KEY_FILES = [
  "pki/apiserver.key",
  "pki/apiserver-kubelet-client.key",
  "pki/front-proxy-client.key",
  "pki/apiserver-etcd-client.key",
  "pki/etcd/server.key",
  "pki/etcd/peer.key",
  "pki/etcd/healthcheck-client.key",
];
const RENEWED_KUBECONFIGS = [
  "controller-manager.conf",
  "scheduler.conf",
  "admin.conf",
  "super-admin.conf",
];
const CA_KEY_FILES = ["pki/ca.key", "pki/front-proxy-ca.key", "pki/etcd/ca.key"];

/** The SubjectPublicKeyInfo (base64) of each key cp-1 keeps, by file. */
async function controlPlaneKeys(): Promise<Map<string, string>> {
  const path = (f: string) => bed.host("cp-1").path(`etc/kubernetes/${f}`);
  const spki = (pem: string | Buffer) =>
    createPublicKey(createPrivateKey(pem))
      .export({ type: "spki", format: "der" })
      .toString("base64");
  const keys = new Map<string, string>();
  for (const f of [...RENEWED_KEY_FILES, ...CA_KEY_FILES])
    keys.set(f, spki(await readFile(path(f))));
  for (const f of RENEWED_KUBECONFIGS) {
    const kc = load(await readFile(path(f), "utf8")) as {
      users: { user: { "client-key-data": string } }[];
    };
    keys.set(f, spki(Buffer.from(kc.users[0]!.user["client-key-data"], "base64")));
  }
  return keys;
}
const FROM = "v1.35.0";
const TARGET = "v1.36.3";
const WORKER_STEPS = ["upgrade-node", "cordon", "drain", "kubelet", "gate", "uncordon"];
const BLOCKED_DRAIN_SECONDS = 15;
/** How long after w-1's uncordon the canary's replacement on w-2 is kept from starting. */
const HOLD_MS = 10_000;

let bed: SshTestbed;
let r: Runner;
let server: ReleaseServer;
let clusterPath: string;
let kubeconfig: string;
let reportPath: string;
let junitPath: string;
let cli: (args: string[]) => Promise<CliResult>;
/** The users' own kubelet build of the target (--kubelet-binary). */
let usersKubelet: string;
/** The report of the run that failed on cp-1's frozen kube-scheduler (it took the snapshot). */
let faultReport: Report;

interface Report {
  apiVersion: string;
  kind: string;
  cluster: string;
  from: string;
  to: string;
  result: string;
  durationSeconds: number;
  etcd?: { snapshot: { node: string; path: string; bytes: number; takenBy: string } };
  addons: {
    coredns: { before?: string; after?: string };
    kubeProxy: { before?: string; after?: string };
  };
  nodes: {
    name: string;
    role: string;
    result: string;
    kubeletBefore?: string;
    kubeletAfter?: string;
    steps: { name: string; startedAt: string; seconds: number; result: string; detail?: string }[];
    backups: string[];
  }[];
  api?: {
    intervalMs: number;
    endpoints: {
      name: string;
      kind: string;
      url: string;
      checks: string;
      samples: number;
      failures: number;
      longestOutageSeconds: number;
      outages: { start: string; seconds: number; samples: number; during: string[] }[];
    }[];
  };
  workloads?: WorkloadsTimeline;
  disruptions?: DisruptionReport;
}

interface NodeList {
  items: {
    metadata: { name: string };
    spec?: { unschedulable?: boolean };
    status?: {
      conditions?: { type: string; status: string }[];
      nodeInfo?: { kubeletVersion: string };
    };
  }[];
}

/** The testbed's three hosts as the Cluster `name`: one control plane, two workers. */
const clusterNamed = (name: string) =>
  clusterFile({
    name,
    controlPlanes: [bed.host("cp-1")],
    workers: [bed.host("w-1"), bed.host("w-2")],
    kubernetesDownloads: server.sources.kubernetes,
  });

const hostDigests = () => upgradeHostDigests(bed);

const upgrade = (...extra: string[]) =>
  cli([
    "upgrade",
    "-f",
    clusterPath,
    "--report",
    reportPath,
    "--junit",
    junitPath,
    "--drain-timeout",
    "60s",
    "--node-timeout",
    "3m",
    ...extra,
  ]);

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1", "w-2"], { ssh: true });
  r = await runner();
  server = await startReleaseServer();
  cli = await cliTrustingReleaseServer(r, server.ca);
  // The hosts are prepared already (the simulated kubelet and runtime); the upgrade's binaries
  // come from the local release server.
  clusterPath = await r.writeClusterFile(clusterNamed("rehearsal"));
  kubeconfig = join(r.dir, "admin.conf");
  reportPath = join(r.dir, "report", "upgrade-report.json");
  junitPath = join(r.dir, "report", "junit.xml");
  const up = await cli(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
  if (up.code !== 0) throw new Error(await diagnostics(bed, up));
  // A Pod on w-1 the drain must evict (no controller: `kubectl drain --force` evicts it too).
  const pod = join(r.dir, "pod.yaml");
  await writeFile(
    pod,
    [
      "apiVersion: v1",
      "kind: Pod",
      "metadata: {name: canary, namespace: default, labels: {app: canary}}",
      "spec:",
      "  nodeName: w-1",
      "  automountServiceAccountToken: false",
      "  containers: [{name: c, image: registry.k8s.io/pause:3.10.1}]",
      "",
    ].join("\n"),
  );
  await r.kubectl(kubeconfig, ["create", "--validate=false", "-f", pod]);
  // A kubelet "built by the user": the release server's kind of binary (/bin/true and a trailer
  // the simulated kubelet reads its version from) under another path.
  usersKubelet = join(r.dir, "users-kubelet");
  await writeFile(
    usersKubelet,
    Buffer.concat([
      await readFile("/bin/true"),
      Buffer.from(`\n#kubeforge-test /users-build/${TARGET}/bin/linux/amd64/kubelet\n`),
    ]),
    { mode: 0o755 },
  );
}, 600_000);

/** A Pod on w-2 that a PodDisruptionBudget allows no disruption of. */
async function createGuardedPod(): Promise<void> {
  const file = join(r.dir, "guarded.yaml");
  await writeFile(
    file,
    [
      "apiVersion: v1",
      "kind: Pod",
      "metadata: {name: guarded, namespace: default, labels: {app: guarded}}",
      "spec:",
      "  nodeName: w-2",
      "  automountServiceAccountToken: false",
      "  containers: [{name: c, image: registry.k8s.io/pause:3.10.1}]",
      "---",
      "apiVersion: policy/v1",
      "kind: PodDisruptionBudget",
      "metadata: {name: guarded, namespace: default}",
      "spec: {minAvailable: 1, selector: {matchLabels: {app: guarded}}}",
      "",
    ].join("\n"),
  );
  await exec("kubectl", ["--kubeconfig", kubeconfig, "create", "--validate=false", "-f", file]);
  // The simulated kubelet runs static Pods only: the Pod is marked Running as a kubelet would,
  // since eviction ignores budgets for Pending Pods (eviction.go canIgnorePDB).
  await exec("kubectl", [
    "--kubeconfig",
    kubeconfig,
    "-n",
    "default",
    "patch",
    "pod",
    "guarded",
    "--subresource=status",
    "--type=merge",
    "-p",
    '{"status":{"phase":"Running"}}',
  ]);
}

/**
 * The trailer of the kubelet in /usr/local/bin on a host (it names where the binary came from);
 * empty while there is none (the testbed's prepared hosts run the simulated kubelet without).
 */
function kubeletTrailer(name: string): Promise<string> {
  return bed
    .host(name)
    .sshOutput("tail -c 200 /usr/local/bin/kubelet 2>/dev/null || true", { timeoutMs: 60_000 });
}

interface CanaryHold {
  /** When w-2 began failing pulls of the canary's image (the canary ran two Ready Pods). */
  heldAt: number;
  /** When the test saw w-1 schedulable again after its drain. */
  uncordonedAt: number;
  /** When w-2 could pull the image again. */
  releasedAt: number;
}

async function readyCanaryPods(): Promise<number> {
  const pods = await r.kubectl<{
    items: { status?: { conditions?: { type: string; status: string }[] } }[];
  }>(kubeconfig, [
    "-n",
    PROBE_NAMESPACE,
    "get",
    "pods",
    "-l",
    `app.kubernetes.io/name=${CANARY_NAME}`,
  ]);
  return pods.items.filter((p) =>
    p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
  ).length;
}

async function unschedulable(node: string): Promise<boolean> {
  const n = await r.kubectl<NodeList["items"][number]>(kubeconfig, ["get", "node", node]);
  return n.spec?.unschedulable === true;
}

/**
 * Keeps the canary's replacement from coming back while w-1 is upgraded: once the run's canary
 * has two Ready Pods (one per worker), w-2's runtime fails to pull the canary's image
 * (ImagePullBackOff, the simulated kubelet's unpullableImages fault), so the Pod that replaces
 * the one evicted from w-1 — scheduled on w-2, the only other worker — stays unavailable; the
 * pulls work again HOLD_MS after w-1 is uncordoned. `done` (after the run) says when each
 * happened, and clears the fault whatever happened.
 */
function holdCanaryReplacement(): { done: () => Promise<CanaryHold> } {
  let running = true;
  const w2 = bed.host("w-2").node;
  const until = async (what: string, check: () => Promise<boolean>): Promise<void> => {
    while (running) {
      if (await check().catch(() => false)) return;
      await sleep(300);
    }
    throw new Error(`the run ended before ${what}`);
  };
  const hold = (async (): Promise<CanaryHold> => {
    await until("the canary ran two Ready Pods", async () => (await readyCanaryPods()) >= 2);
    await w2.setFaults({ unpullableImages: [CANARY_IMAGE] });
    const heldAt = Date.now();
    await until("w-1 was cordoned", () => unschedulable("w-1"));
    await until("w-1 was uncordoned", async () => !(await unschedulable("w-1")));
    const uncordonedAt = Date.now();
    await sleep(HOLD_MS);
    await w2.setFaults({});
    return { heldAt, uncordonedAt, releasedAt: Date.now() };
  })();
  hold.catch(() => {});
  return {
    done: async () => {
      running = false;
      try {
        return await hold;
      } finally {
        await w2.setFaults({});
      }
    },
  };
}

/** The etcd snapshots on cp-1, by file name. */
async function snapshotFiles(): Promise<string[]> {
  const dir = bed.host("cp-1").path(`var/lib/kubeforge/upgrade/${TARGET}`);
  return (await readdir(dir).catch(() => [] as string[])).filter((n) =>
    n.startsWith("etcd-snapshot-"),
  );
}

afterAll(async () => {
  await bed?.stop();
  await server?.close();
}, 120_000);

describe("kubeforge upgrade -f: refusals before anything changes", () => {
  it("refuses two minors at once and a downgrade, naming the versions; no host changes", async () => {
    const before = await hostDigests();
    const twoMinors = await upgrade("--to", "v1.37.0");
    expect(twoMinors.code).not.toBe(0);
    expect(twoMinors.stderr).toContain(
      `--to v1.37.0 is 2 minors above the cluster's ${FROM}: kubeforge upgrades one minor per hop; upgrade to v1.36 first, or give --via auto to go through every minor in one run`,
    );
    const downgrade = await upgrade("--to", "v1.34.2");
    expect(downgrade.code).not.toBe(0);
    expect(downgrade.stderr).toContain(
      `kubeforge does not downgrade: the cluster "rehearsal" runs ${FROM} and --to asks for v1.34.2`,
    );
    expect(await hostDigests()).toEqual(before);
    // A refused run wrote no report: there was no run.
    await expect(readFile(reportPath)).rejects.toThrow(/ENOENT/);
  }, 300_000);

  it("refuses hosts that are not nodes of the Cluster it names, naming each; no host changes", async () => {
    const before = await hostDigests();
    // The same hosts under another cluster's name: every node marker names "rehearsal".
    const impostor = await r.writeClusterFile(clusterNamed("impostor"), "impostor.yaml");
    const refused = await cli(["upgrade", "-f", impostor, "--to", TARGET, "--report", reportPath]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      `cannot upgrade the cluster "impostor": 3 of 3 hosts are not finished nodes of it:`,
    );
    for (const node of ["cp-1", "w-1", "w-2"]) {
      expect(refused.stderr).toContain(
        ` - ${node}: it belongs to the kubeforge cluster "rehearsal"; run "kubeforge down" for that cluster first`,
      );
    }
    expect(await hostDigests()).toEqual(before);
    await expect(readFile(reportPath)).rejects.toThrow(/ENOENT/);
  }, 300_000);

  it("--plan prints the order on stdout and changes nothing", async () => {
    const before = await hostDigests();
    const plan = await upgrade("--to", TARGET, "--plan");
    if (plan.code !== 0) throw new Error(await diagnostics(bed, plan));
    const lines = plan.stdout.trim().split("\n");
    expect(lines[0]).toBe(
      `# kubeforge upgrade --plan: cluster "rehearsal" from ${FROM} to ${TARGET}; nothing was changed`,
    );
    expect(lines.slice(1).map((l) => l.split(" (")[0])).toEqual(["1. cp-1", "2. w-1", "3. w-2"]);
    expect(lines[1]).toContain("upgrade apply");
    expect(lines[3]).toContain("(batch 2)");
    expect(plan.stderr).not.toContain("[debug]");
    expect(await hostDigests()).toEqual(before);
  }, 300_000);

  it("KUBEFORGE_DEBUG=1 logs each host's commands and file operations, never what a file holds", async () => {
    const traced = await cliTrustingReleaseServer(r, server.ca, { KUBEFORGE_DEBUG: "1" });
    const plan = await traced(["upgrade", "-f", clusterPath, "--to", TARGET, "--plan"]);
    if (plan.code !== 0) throw new Error(await diagnostics(bed, plan));
    const debug = plan.stderr.split("\n").filter((l) => l.includes("[debug] "));
    for (const node of ["cp-1", "w-1", "w-2"]) {
      expect(debug.some((l) => l.includes(`[debug] ${node}: $ `))).toBe(true);
    }
    // The plan reads admin.conf on cp-1; its client key is named by nothing in the log.
    const admin = load(
      await readFile(bed.host("cp-1").path("etc/kubernetes/admin.conf"), "utf8"),
    ) as { users: { user: { "client-key-data": string } }[] };
    const key = admin.users[0]!.user["client-key-data"];
    const pem = Buffer.from(key, "base64").toString("utf8");
    for (const secret of [key, pem.split("\n")[1]!]) expect(plan.stderr).not.toContain(secret);
    // The same plan on stdout as without the trace.
    expect(plan.stdout.split("\n")[0]).toContain("nothing was changed");
  }, 300_000);
});

describe("kubeforge upgrade -f --to v1.36.3 --phase stage: one phase of the workflow", () => {
  it("refuses an unknown phase naming the valid ones, before any host is contacted", async () => {
    const bad = await upgrade("--to", TARGET, "--phase", "no-such-phase");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      'invalid phase name "no-such-phase" in the phase to run: valid names are connect, facts, plan, stage, etcd-snapshot',
    );
  }, 120_000);

  it("stages your kubelet on every node after the plan, and changes nothing in use", async () => {
    const before = await Promise.all(bed.hosts.map((h) => kubeletTrailer(h.name)));
    const staged = await upgrade(
      "--to",
      TARGET,
      "--phase",
      "stage",
      "--kubelet-binary",
      usersKubelet,
    );
    if (staged.code !== 0) throw new Error(await diagnostics(bed, staged));
    expect(staged.stderr).toContain(
      `[upgrade] Phase(s) stage of the upgrade of "rehearsal" to ${TARGET} done`,
    );
    for (const h of bed.hosts) {
      const kubelet = await readFile(
        h.path(`var/lib/kubeforge/upgrade/${TARGET}/kubelet`),
        "latin1",
      );
      expect(kubelet, h.name).toContain(`#kubeforge-test /users-build/${TARGET}/`);
      // Nothing in use changed: no snapshot, the kubelet in place, no upgrade in the marker.
      const marker = JSON.parse(await readFile(h.path("var/lib/kubeforge/node.json"), "utf8")) as {
        upgrade?: unknown;
      };
      expect(marker.upgrade, h.name).toBeUndefined();
    }
    expect(await Promise.all(bed.hosts.map((h) => kubeletTrailer(h.name)))).toEqual(before);
    expect(await snapshotFiles()).toEqual([]);
  }, 300_000);
});

describe("kubeforge upgrade -f: a control-plane component whose static Pod hash never changes", () => {
  // cp-1's kubelet never picks up kube-scheduler's new manifest (the simulation's
  // frozenStaticPods fault): kubeadm's WaitForStaticPodHashChange times out within the
  // Cluster's UpgradeConfiguration timeouts.upgradeManifests, and rollbackOldManifests puts the
  // replaced manifests back (phases/upgrade/staticpods.go upgradeComponent). The run stops there.
  const COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"];
  const manifest = (c: string) =>
    readFile(bed.host("cp-1").path(`etc/kubernetes/manifests/${c}.yaml`));
  const markerOf = async (name: string) =>
    JSON.parse(await readFile(bed.host(name).path("var/lib/kubeforge/node.json"), "utf8")) as {
      kubernetesVersion: string;
      upgrade?: { to: string; step: string };
    };
  /**
   * cp-1's control-plane mirror Pods' kubernetes.io/config.hash by component, "" for one the API
   * server does not list, and nothing while it does not answer.
   */
  const mirrorHashes = async (): Promise<Record<string, string>> => {
    const pods = await r
      .kubectl<{
        items: { metadata: { name: string; annotations?: Record<string, string> } }[];
      }>(kubeconfig, ["-n", "kube-system", "get", "pods"])
      .catch(() => undefined);
    if (!pods) return {};
    const hash = (c: string) =>
      pods.items.find((p) => p.metadata.name === `${c}-cp-1`)?.metadata.annotations?.[
        "kubernetes.io/config.hash"
      ] ?? "";
    return Object.fromEntries(COMPONENTS.map((c) => [c, hash(c)]));
  };
  let failed: CliResult;
  const before = new Map<string, Buffer>();
  const after = new Map<string, Buffer>();
  let nodes: NodeList;

  beforeAll(async () => {
    for (const c of COMPONENTS) before.set(c, await manifest(c));
    const hashesBefore = await mirrorHashes();
    expect(Object.values(hashesBefore).filter((h) => h !== "")).toHaveLength(COMPONENTS.length);
    // The same Cluster with kubeadm's UpgradeConfiguration: each component gets 45 s.
    const text = (await readFile(clusterPath, "utf8")).trimEnd();
    const faultCluster = await r.writeClusterFile(
      `${text}\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\ntimeouts: {upgradeManifests: 45s}\n`,
      "cluster-upgrade-timeouts.yaml",
    );
    await bed.host("cp-1").node.setFaults({ frozenStaticPods: ["kube-scheduler"] });
    try {
      failed = await cli([
        "upgrade",
        "-f",
        faultCluster,
        "--to",
        TARGET,
        "--report",
        reportPath,
        "--junit",
        junitPath,
        "--node-timeout",
        "3m",
      ]);
      for (const c of COMPONENTS) after.set(c, await manifest(c));
    } finally {
      await bed.host("cp-1").node.setFaults({});
    }
    // kubeadm puts the manifests back and returns without waiting for the kubelet to run them
    // again (staticpods.go rollbackOldManifests): cp-1's API server restarts after the run. The
    // next steps need it serving, so wait until every mirror Pod carries its old hash again (the
    // kubelet writes it through the restarted API server).
    await vi.waitFor(
      async () => {
        expect(await mirrorHashes()).toEqual(hashesBefore);
      },
      { timeout: 180_000, interval: 500 },
    );
    faultReport = JSON.parse(await readFile(reportPath, "utf8")) as Report;
    nodes = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
  }, 900_000);

  it("fails naming the component and the node, after timeouts.upgradeManifests", () => {
    expect(failed.code, failed.stderr.slice(-4000)).not.toBe(0);
    expect(failed.stderr).toContain(
      "couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state.",
    );
    expect(failed.stderr).toMatch(
      /static Pod hash for component kube-scheduler on Node cp-1 did not change after 45s/,
    );
  });

  it("puts cp-1's replaced manifests back byte for byte", () => {
    for (const c of COMPONENTS) expect(after.get(c)!.equals(before.get(c)!), c).toBe(true);
  });

  it("stops there: no worker touched, every Node schedulable, cp-1 marked to resume", async () => {
    expect(faultReport.result).toBe("failed");
    expect(faultReport.nodes.map((n) => [n.name, n.result, n.steps.map((s) => s.name)])).toEqual([
      ["cp-1", "failed", ["etcd-snapshot", "upgrade-apply"]],
      ["w-1", "pending", []],
      ["w-2", "pending", []],
    ]);
    for (const w of ["w-1", "w-2"]) {
      const marker = await markerOf(w);
      expect(marker.upgrade, w).toBeUndefined();
      expect(marker.kubernetesVersion, w).toBe(FROM);
    }
    expect(await markerOf("cp-1")).toMatchObject({
      kubernetesVersion: FROM,
      upgrade: { to: TARGET, step: "started" },
    });
    expect(
      nodes.items.map((n) => [
        n.metadata.name,
        n.status?.nodeInfo?.kubeletVersion,
        n.spec?.unschedulable ?? false,
      ]),
    ).toEqual([
      ["cp-1", FROM, false],
      ["w-1", FROM, false],
      ["w-2", FROM, false],
    ]);
  });

  it("records the addons as the failed run left them (not changed: apply stopped first)", () => {
    expect(faultReport.addons.kubeProxy).toEqual({ before: FROM, after: FROM });
    expect(faultReport.addons.coredns.after).toBe(faultReport.addons.coredns.before);
  });
});

describe("kubeforge upgrade -f --to v1.36.3: one control plane and two workers", () => {
  // The first run stops at w-2's drain (a PodDisruptionBudget allows no disruption); once the
  // budget is gone the same command resumes and finishes.
  let blocked: CliResult;
  let first: Report;
  let w2AfterFailure: NodeList["items"][number];
  let w2KubeletAfterFailure: string;
  let run: CliResult;
  let report: Report;
  let hold: CanaryHold;
  let namespacesAfterFailure: string[];
  let keysBefore: Map<string, string>;

  beforeAll(async () => {
    keysBefore = await controlPlaneKeys();
    await createGuardedPod();
    const holding = holdCanaryReplacement();
    blocked = await upgrade(
      "--to",
      TARGET,
      "--kubelet-binary",
      usersKubelet,
      "--drain-timeout",
      `${BLOCKED_DRAIN_SECONDS}s`,
      "--probe",
      "api,workload",
    );
    hold = await holding.done().catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await diagnostics(bed, blocked)}`);
    });
    first = JSON.parse(await readFile(reportPath, "utf8")) as Report;
    namespacesAfterFailure = (
      await r.kubectl<{ items: { metadata: { name: string } }[] }>(kubeconfig, [
        "get",
        "namespaces",
      ])
    ).items.map((n) => n.metadata.name);
    const nodes = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
    w2AfterFailure = nodes.items.find((n) => n.metadata.name === "w-2")!;
    w2KubeletAfterFailure = await kubeletTrailer("w-2");
    await exec("kubectl", [
      "--kubeconfig",
      kubeconfig,
      "-n",
      "default",
      "delete",
      "pdb",
      "guarded",
    ]);
    run = await upgrade(
      "--to",
      TARGET,
      "--kubelet-binary",
      usersKubelet,
      "--probe",
      "api,workload",
    );
    if (run.code !== 0) throw new Error(await diagnostics(bed, run));
    report = JSON.parse(await readFile(reportPath, "utf8")) as Report;
  }, 1_500_000);

  it("runs cp-1's `upgrade apply` and each worker's `upgrade node` preflight ahead of its turn, and prints it at its turn", () => {
    const lines = blocked.stderr.split("\n");
    const at = (node: string, text: string) =>
      lines.findIndex((l) => l.startsWith(`${node}: `) && l.includes(text));
    const applyChecks = lines.filter(
      (l) => l.startsWith("cp-1: ") && l.includes("[upgrade/preflight] Running preflight checks"),
    );
    expect(applyChecks, blocked.stderr.slice(-4000)).toHaveLength(1);
    expect(lines[at("cp-1", "upgrade apply: phase timings")]).toMatch(
      /phase timings preflight \d+\.\d\ds, control-plane .*\(preflight ahead of its turn\)$/,
    );
    for (const w of ["w-1", "w-2"]) {
      const checks = lines.filter(
        (l) =>
          l.startsWith(`${w}: `) && l.includes("[upgrade/preflight] Running pre-flight checks"),
      );
      expect(checks, blocked.stderr.slice(-4000)).toHaveLength(1);
      expect(lines[at(w, "upgrade node: phase timings")]).toMatch(
        /phase timings preflight \d+\.\d\ds, .*\(preflight ahead of its turn\)$/,
      );
    }
    // w-2's lines come at w-2's turn, after w-1's batch (its drain), though its checks ran then.
    expect(at("w-2", "Running pre-flight checks")).toBeGreaterThan(at("w-1", "drained: "));
    // One run per node, prepared once: kubeadm reads its configuration from the cluster once
    // per command, when it makes the command's data, before the workflow's phases run
    // (cmd/upgrade/apply.go, node.go → configutil.FetchInitConfigurationFromCluster).
    for (const node of ["cp-1", "w-1", "w-2"]) {
      const reads = lines.filter(
        (l) =>
          l.startsWith(`${node}: `) &&
          l.includes('Reading configuration from the "kubeadm-config"'),
      );
      expect(reads, node).toHaveLength(1);
      const checks = node === "cp-1" ? "Running preflight checks" : "Running pre-flight checks";
      expect(at(node, "Reading configuration from")).toBeLessThan(at(node, checks));
    }
  });

  it("a PodDisruptionBudget that allows no disruption fails w-2's drain within --drain-timeout, naming Pod, budget and node", () => {
    expect(blocked.code).not.toBe(0);
    const why = `drain of w-2 failed: pod default/guarded could not be evicted within ${BLOCKED_DRAIN_SECONDS}s: PodDisruptionBudget default/guarded allows no disruption`;
    expect(blocked.stderr).toContain(why);
    expect(first.result).toBe("failed");
    const w2 = first.nodes.find((n) => n.name === "w-2")!;
    expect(w2.result).toBe("failed");
    // `upgrade node` started first (kubeadm's order) and done while the drain waited.
    expect(w2.steps.map((s) => [s.name, s.result])).toEqual([
      ["upgrade-node", "ok"],
      ["cordon", "ok"],
      ["drain", "failed"],
    ]);
    const drainStep = w2.steps[2]!;
    expect(drainStep.detail).toContain(why);
    expect(drainStep.seconds).toBeGreaterThanOrEqual(BLOCKED_DRAIN_SECONDS - 5);
    expect(drainStep.seconds).toBeLessThan(BLOCKED_DRAIN_SECONDS + 30);
    // Not upgraded, and uncordoned again: the run cordoned it, and uncordons on every way out.
    expect(w2KubeletAfterFailure).not.toContain(`/users-build/`);
    expect(w2AfterFailure.status?.nodeInfo?.kubeletVersion).toBe(FROM);
    expect(w2AfterFailure.spec?.unschedulable ?? false).toBe(false);
    expect(first.nodes.map((n) => [n.name, n.result])).toEqual([
      ["cp-1", "upgraded"],
      ["w-1", "upgraded"],
      ["w-2", "failed"],
    ]);
  });

  it("the settle gate holds w-2's batch until the canary is back at 2 of 2; the canary never dropped below 1", () => {
    const w1 = first.nodes.find((n) => n.name === "w-1")!;
    const drainStart = Date.parse(w1.steps.find((s) => s.name === "drain")!.startedAt);
    const settle = w1.steps.find((s) => s.name === "settle")!;
    const settleStart = Date.parse(settle.startedAt);
    const settleEnd = settleStart + settle.seconds * 1000;
    const w2First = first.nodes.find((n) => n.name === "w-2")!.steps[0]!;
    const canary = first.workloads!.workloads.find((w) => w.name === CANARY_NAME)!;
    const seen = JSON.stringify({ hold, settle, w2First, canary, disruptions: first.disruptions });
    expect(settle.result, seen).toBe("ok");
    // The gate began once w-1 was back (the test sees the uncordon within a poll of it) and
    // ended only after w-2 could pull the canary's image again; w-2's batch began after it.
    expect(settleStart, seen).toBeLessThanOrEqual(hold.uncordonedAt + 1000);
    expect(settleEnd, seen).toBeGreaterThanOrEqual(hold.releasedAt - 50);
    expect(w2First.name).toBe("upgrade-node");
    expect(Date.parse(w2First.startedAt), seen).toBeGreaterThanOrEqual(settleEnd - 5);
    // Availability as the probe read it every 500 ms: 2 of 2 when probing began, never none.
    const availability = canary.availability!;
    expect(availability[0], seen).toMatchObject({ available: 2, desired: 2 });
    expect(Math.min(...availability.map((a) => a.available)), seen).toBe(1);
    // The watches, to the event: w-1's canary Pod evicted in its drain, and the Deployment short
    // of a replica from then until the held replacement ran — after the release, and before the
    // gate (which reads the same status, once a second) let w-2 go.
    const disruptions = first.disruptions!.disruptions;
    expect(
      disruptions.some(
        (x) =>
          x.kind === "eviction" &&
          x.object.startsWith(`Pod ${PROBE_NAMESPACE}/${CANARY_NAME}-`) &&
          x.node === "w-1" &&
          x.during.includes("w-1 drain"),
      ),
      seen,
    ).toBe(true);
    const short = disruptions.find(
      (x) =>
        x.kind === "unavailable" &&
        x.object === `Deployment ${PROBE_NAMESPACE}/${CANARY_NAME}` &&
        x.during.includes("w-1 drain"),
    )!;
    expect(short, seen).toBeDefined();
    const shortEnd = Date.parse(short.at) + short.seconds! * 1000;
    expect(Date.parse(short.at), seen).toBeGreaterThanOrEqual(drainStart);
    expect(shortEnd, seen).toBeGreaterThanOrEqual(hold.releasedAt - 50);
    // The watch event may reach the runner a moment after the gate's own read.
    expect(shortEnd, seen).toBeLessThanOrEqual(settleEnd + 1000);
    // The probe objects went with the failed run too (--keep-probes not given).
    expect(namespacesAfterFailure).not.toContain(PROBE_NAMESPACE);
  });

  it("the same command again resumes: finished nodes skipped, w-2 upgraded; its path on stdout", () => {
    expect(run.stdout.trim()).toBe(reportPath);
    expect(report).toMatchObject({
      apiVersion: "kubeforge.dev/v1alpha1",
      kind: "UpgradeReport",
      cluster: "rehearsal",
      from: FROM,
      to: TARGET,
      result: "succeeded",
    });
    expect(report.nodes.map((n) => [n.name, n.result, n.kubeletBefore, n.kubeletAfter])).toEqual([
      ["cp-1", "skipped", TARGET, undefined],
      ["w-1", "skipped", TARGET, undefined],
      ["w-2", "upgraded", FROM, TARGET],
    ]);
    expect(first.nodes.map((n) => [n.name, n.kubeletBefore, n.kubeletAfter])).toEqual([
      ["cp-1", FROM, TARGET],
      ["w-1", FROM, TARGET],
      ["w-2", FROM, undefined],
    ]);
  });

  it("upgrades in kubeadm's order: apply on the control plane, then one worker at a time", () => {
    const [cp, w1] = first.nodes;
    const w2 = report.nodes[2]!;
    expect(cp!.steps.map((s) => s.name)).toEqual([
      "etcd-snapshot",
      "upgrade-apply",
      "kubelet",
      "gate",
    ]);
    // The workload probe's settle gate after w-1's batch (w-2's is the last: no gate after it).
    expect(w1!.steps.map((s) => s.name)).toEqual([...WORKER_STEPS, "settle"]);
    expect(w2.steps.map((s) => s.name)).toEqual(WORKER_STEPS);
    const all = [...first.nodes, w2].flatMap((n) => n.steps);
    expect(all.every((s) => s.result === "ok" || s.name === "drain")).toBe(true);
    // --worker-batch 1: each step starts after every step before it has ended, except that a
    // worker is cordoned and drained while its `upgrade node` runs (started in that order); its
    // kubelet is swapped once both ended.
    const start = (s: { startedAt: string }) => Date.parse(s.startedAt);
    const end = (s: { startedAt: string; seconds: number }) => start(s) + s.seconds * 1000;
    for (let i = 1; i < all.length; i++) {
      const s = all[i]!;
      const seen = JSON.stringify(all.slice(0, i + 1));
      if (s.name === "cordon" || s.name === "drain") {
        expect(all[i - 1]!.name, seen).toBe(s.name === "cordon" ? "upgrade-node" : "cordon");
        expect(start(s), seen).toBeGreaterThanOrEqual(start(all[i - 1]!));
      } else {
        expect(start(s), seen).toBeGreaterThanOrEqual(Math.max(...all.slice(0, i).map(end)) - 5);
      }
    }
    // Every Pod a drain evicted, as the watches saw them: on w-1 the test's own Pod and
    // kubeforge's canary replica among them (with CoreDNS and local-path-provisioner replicas
    // where the simulated scheduler placed them), on w-2 a canary replica.
    const evicted = (r: Report, node: string) =>
      r.disruptions!.disruptions.filter((x) => x.kind === "eviction" && x.node === node);
    const w1Evicted = evicted(first, "w-1");
    expect(w1!.steps.find((s) => s.name === "drain")!.detail).toBe(
      `${w1Evicted.length} pod(s) evicted`,
    );
    expect(w1Evicted.map((x) => x.object)).toEqual(
      expect.arrayContaining([
        "Pod default/canary",
        expect.stringMatching(`^Pod ${PROBE_NAMESPACE}/${CANARY_NAME}-`),
      ]),
    );
    const w2Evicted = evicted(report, "w-2");
    expect(w2.steps.find((s) => s.name === "drain")!.detail).toBe(
      `${w2Evicted.length} pod(s) evicted`,
    );
    expect(w2Evicted.map((x) => x.object)).toEqual(
      expect.arrayContaining([expect.stringMatching(`^Pod ${PROBE_NAMESPACE}/${CANARY_NAME}-`)]),
    );
    // kubeadm's backups (phases/upgrade/staticpods.go) are listed where they were written.
    expect(cp!.backups).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\/etc\/kubernetes\/tmp\/kubeadm-backup-manifests-/),
      ]),
    );
  });

  it("after the last control plane the addons run the target's images", () => {
    // kube-proxy is tagged with the Kubernetes version (kubeadm images.GetKubernetesImage).
    expect(first.addons.kubeProxy.before).toBe(FROM);
    // The run that failed at w-2's drain records them too: cp-1's apply (the last control
    // plane) had changed them.
    expect(first.addons.kubeProxy.after).toBe(TARGET);
    expect(report.addons.kubeProxy).toEqual({ before: TARGET, after: TARGET });
  });

  it("snapshots etcd on cp-1 before the first change: 0600, a database etcdctl reads", async () => {
    // The run that failed on the frozen kube-scheduler made the first change, and took it.
    const snapshot = faultReport.etcd!.snapshot;
    expect(snapshot).toMatchObject({ node: "cp-1", takenBy: "this run" });
    expect(snapshot.path).toMatch(
      /^\/var\/lib\/kubeforge\/upgrade\/v1\.36\.3\/etcd-snapshot-\d{4}(-\d\d){5}\.db$/,
    );
    const file = bed.host("cp-1").path(snapshot.path.slice(1));
    const st = await stat(file);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.size).toBe(snapshot.bytes);
    const { stdout } = await exec("etcdctl", ["snapshot", "status", file, "-w", "json"], {
      env: { ...process.env, ETCDCTL_API: "3" },
    });
    const status = JSON.parse(stdout) as { revision: number; totalKey: number };
    expect(status.totalKey).toBeGreaterThan(0);
    // Taken before `upgrade apply` stored the target in kubeadm-config (upload-config).
    const cm = JSON.parse(
      await etcdctl(bed.host("cp-1"), [
        "get",
        "/registry/configmaps/kube-system/kubeadm-config",
        "-w",
        "json",
      ]),
    ) as { kvs: { mod_revision: number }[] };
    expect(status.revision).toBeLessThan(cm.kvs[0]!.mod_revision);
    // The resumed runs took no second one: they name the first run's.
    expect(first.etcd!.snapshot).toEqual({ ...snapshot, takenBy: "an earlier run" });
    expect(report.etcd!.snapshot).toEqual({ ...snapshot, takenBy: "an earlier run" });
    expect(await snapshotFiles()).toEqual([snapshot.path.split("/").at(-1)]);
  });

  it("leaves every Node Ready, schedulable, at the target; the drained Pod is gone", async () => {
    const nodes = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
    expect(
      nodes.items.map((n) => [
        n.metadata.name,
        n.status?.nodeInfo?.kubeletVersion,
        n.status?.conditions?.find((c) => c.type === "Ready")?.status,
        n.spec?.unschedulable ?? false,
      ]),
    ).toEqual([
      ["cp-1", TARGET, "True", false],
      ["w-1", TARGET, "True", false],
      ["w-2", TARGET, "True", false],
    ]);
    const pods = await r.kubectl<{ items: { metadata: { name: string } }[] }>(kubeconfig, [
      "-n",
      "default",
      "get",
      "pods",
    ]);
    expect(pods.items.map((p) => p.metadata.name)).not.toContain("canary");
    expect(pods.items.map((p) => p.metadata.name)).not.toContain("guarded");
  });

  it("stores the target in kubeadm-config and the control plane's manifests", async () => {
    const cm = await r.kubectl<{ data: Record<string, string> }>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kubeadm-config",
    ]);
    expect(load(cm.data.ClusterConfiguration!)).toMatchObject({ kubernetesVersion: TARGET });
    const manifest = load(
      await readFile(bed.host("cp-1").path("etc/kubernetes/manifests/kube-apiserver.yaml"), "utf8"),
    ) as { spec: { containers: { image: string }[] } };
    expect(manifest.spec.containers[0]!.image).toBe(`registry.k8s.io/kube-apiserver:${TARGET}`);
  });

  it("renews cp-1's certificates and kubeconfigs each with a key of its own, new; the CAs' keys stay", async () => {
    const after = await controlPlaneKeys();
    const renewed = [...RENEWED_KEY_FILES, ...RENEWED_KUBECONFIGS];
    for (const f of renewed) expect(after.get(f), f).not.toBe(keysBefore.get(f));
    expect(new Set(renewed.map((f) => after.get(f))).size).toBe(renewed.length);
    for (const f of CA_KEY_FILES) expect(after.get(f), f).toBe(keysBefore.get(f));
  });

  it("installs your kubelet (--kubelet-binary) and the target kubectl everywhere, and leaves nothing half-done in the markers", async () => {
    for (const h of bed.hosts) {
      expect(await kubeletTrailer(h.name), h.name).toContain(`/users-build/${TARGET}/`);
      const kubectl = await h.sshOutput("tail -c 200 /usr/local/bin/kubectl", {
        timeoutMs: 60_000,
      });
      expect(kubectl, h.name).toContain(`/dl/release/${TARGET}/bin/linux/`);
      const marker = JSON.parse(await readFile(h.path("var/lib/kubeforge/node.json"), "utf8")) as {
        kubernetesVersion: string;
        upgrade: unknown;
      };
      expect(marker, h.name).toMatchObject({
        kubernetesVersion: TARGET,
        upgrade: { from: FROM, to: TARGET, step: "done" },
      });
    }
  });

  it("probes the API throughout: cp-1's own endpoint and admin.conf's, outages only in cp-1's steps", async () => {
    const api = report.api!;
    expect(api.intervalMs).toBe(500);
    const adminConf = load(
      await readFile(bed.host("cp-1").path("etc/kubernetes/admin.conf"), "utf8"),
    ) as { clusters: { cluster: { server: string } }[] };
    expect(api.endpoints.map((e) => [e.name, e.kind, e.url, e.checks])).toEqual([
      // kubeadm's advertise address (the node's) and default bind port.
      ["cp-1", "control-plane", `https://${bed.host("cp-1").address}:6443`, "GET /readyz"],
      [
        "stable",
        "stable",
        adminConf.clusters[0]!.cluster.server,
        "GET kube-system/kubeadm-config, renew Lease kubeforge-probes/kubeforge-upgrade-probe",
      ],
    ]);
    // Sampling spans every node's steps: at least one sample per 5.5 s (interval + timeout).
    const steps = report.nodes.flatMap((n) => n.steps);
    const first = Math.min(...steps.map((st) => Date.parse(st.startedAt)));
    const last = Math.max(...steps.map((st) => Date.parse(st.startedAt) + st.seconds * 1000));
    for (const e of api.endpoints) {
      expect(e.samples, e.name).toBeGreaterThanOrEqual(Math.floor((last - first) / 5500));
      expect(
        e.outages.reduce((n, o) => n + o.samples, 0),
        e.name,
      ).toBe(e.failures);
      for (const o of e.outages) {
        // Only cp-1's kube-apiserver restarts (a single control plane): nothing else may show.
        expect(o.during.length, `${e.name} ${o.start}`).toBeGreaterThan(0);
        for (const step of o.during) expect(step, `${e.name} ${o.start}`).toMatch(/^cp-1 /);
      }
    }
    // The namespace the probes wrote in is removed at the end (--keep-probes not given).
    const namespaces = await r.kubectl<{ items: { metadata: { name: string } }[] }>(kubeconfig, [
      "get",
      "namespaces",
    ]);
    expect(namespaces.items.map((n) => n.metadata.name)).not.toContain("kubeforge-probes");
    expect(run.stderr).toContain("[probes] the stable endpoint: ");
  });

  it("probes the canary through both runs: never without a replica, requests failing only while a drain evicted one", () => {
    for (const out of [blocked, run]) {
      expect(out.stderr).toMatch(
        /\[probes\] the canary is asked on NodePort \d+ of w-1 [\d.]+, w-2 [\d.]+, cp-1 [\d.]+\n/,
      );
    }
    for (const [run, r] of [
      ["blocked", first],
      ["resumed", report],
    ] as const) {
      const canary = r.workloads!.workloads.find((w) => w.name === CANARY_NAME)!;
      const seen = `${run}: ${JSON.stringify(canary)}`;
      expect(canary.kind).toBe("workload");
      // The runner reaches every node: the canary is asked on its NodePort (30000-32767, the
      // API server's default range), entering by the workers first, then the control plane.
      const w1 = bed.host("w-1").address.replace(/\./g, "\\.");
      expect(canary.url, seen).toMatch(new RegExp(`^http://${w1}:3[0-2]\\d{3}/hostname$`));
      expect(canary.checks, seen).toMatch(
        / via NodePort \d+, on the first node no step runs on of w-1 \S+, w-2 \S+, cp-1 \S+$/,
      );
      // Sampled every 500 ms from the canary's start to the last node's end (the resumed run
      // upgrades w-2 alone).
      expect(canary.samples, seen).toBeGreaterThan(run === "blocked" ? 20 : 5);
      expect(Math.min(...canary.availability!.map((a) => a.available)), seen).toBe(1);
      // The budget lets a drain take one replica at a time, and the Service's Endpoints drop a
      // Pod as soon as it is terminating: a request can fail only if it was in flight on the
      // evicted Pod when it stopped (the canary then has no shutdown delay).
      for (const o of canary.outages) {
        expect(o.samples, seen).toBeLessThanOrEqual(2);
        expect(
          o.during.some((step) => / drain$/.test(step)),
          seen,
        ).toBe(true);
      }
      expect(canary.errorRate, seen).toBeLessThan(0.05);
    }
  });

  it("writes JUnit XML with one test case per node and step", async () => {
    const xml = new XMLParser({ ignoreAttributes: false }).parse(
      await readFile(junitPath, "utf8"),
    ) as {
      testsuites: {
        testsuite: {
          "@_name": string;
          "@_failures": string;
          testcase: { "@_classname": string; "@_name": string }[];
        };
      };
    };
    const suite = xml.testsuites.testsuite;
    expect(suite["@_name"]).toBe(`upgrade-${FROM}-${TARGET}`);
    expect(suite["@_failures"]).toBe("0");
    expect(suite.testcase.map((c) => `${c["@_classname"]}/${c["@_name"]}`)).toEqual(
      report.nodes.flatMap((n) => n.steps.map((s) => `${n.name}/${s.name}`)),
    );
  });

  it("a second run finds every node at the target, says so and changes nothing", async () => {
    const before = await hostDigests();
    const again = await upgrade("--to", TARGET);
    if (again.code !== 0) throw new Error(await diagnostics(bed, again));
    for (const name of ["cp-1", "w-1", "w-2"]) {
      expect(again.stderr).toContain(`${name}: [plan] `);
    }
    expect(again.stderr.match(/already at v1\.36\.3: skipped/g)).toHaveLength(3);
    expect(await hostDigests()).toEqual(before);
    const second = JSON.parse(await readFile(reportPath, "utf8")) as Report;
    expect(second.nodes.map((n) => [n.name, n.result, n.steps.length])).toEqual([
      ["cp-1", "skipped", 0],
      ["w-1", "skipped", 0],
      ["w-2", "skipped", 0],
    ]);
  }, 300_000);
});
