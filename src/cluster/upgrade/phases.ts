import { fleet } from "../../remote/fleet.js";
import type { Phase } from "../../workflow/phase.js";
import { connectPhase, factsPhase } from "../session-phases.js";
import { customKubeletOf } from "../up/prepare.js";
import type { ClusterUpgradeData, EtcdSnapshot, NodeStepKind, PlannedUpgradeNode } from "./data.js";

// `kubeforge upgrade -f cluster.yaml --to V` as a phase list on the workflow Runner, the second
// cluster workflow after `up` (DESIGN.md "Every workflow runs on the Runner"): connect, read and
// plan before anything changes (every refusal there), stage on every node in parallel, snapshot
// etcd on the first control plane, start the probes that measure what the upgrade does to the
// API (probes/, stopped by index.ts), then in kubeadm's order (kubeadm-upgrade.md §2, §5.4) the
// first control plane with `upgrade apply`, the other control planes one at a time with
// `upgrade node` after an etcd quorum check, the workers in batches (`upgrade node`, cordon,
// drain, kubelet, gate, uncordon), and a last check.
// Every node's steps are timed into the report; markers make a re-run resume.

async function planned(d: ClusterUpgradeData): Promise<PlannedUpgradeNode[]> {
  return (await d.settled()).plan.nodes;
}

const toChange = async (d: ClusterUpgradeData) =>
  (await planned(d)).filter((n) => n.action !== "skip");

/** One step of a node, timed into the report. */
function step<T>(
  d: ClusterUpgradeData,
  n: PlannedUpgradeNode,
  name: string,
  run: () => Promise<T>,
  detail?: (value: T) => string | undefined,
): Promise<T> {
  return d.report.step(n.name, n.role, name, run, detail);
}

/** A control plane: kubeadm's apply or node, the kubelet swap and restart, the gate. */
async function upgradeControlPlane(d: ClusterUpgradeData, n: PlannedUpgradeNode): Promise<void> {
  const kind = n.action as NodeStepKind;
  await d.work.mark(n.name, "started");
  // Its kubelet restarts after kubeadm's command: what that needs first goes on meanwhile.
  d.work.kubeletRestartAhead(n.name);
  if (kind === "node") await step(d, n, "etcd-quorum", () => d.work.etcdQuorum());
  // Clients of kubeforge's own endpoint move off this API server before its etcd and it restart.
  if ((await d.settled()).reading.nodeLocalProxy === true) {
    await step(d, n, "proxy-out", () => d.work.proxyOut(n.name));
  }
  try {
    await step(d, n, `upgrade-${kind}`, () => d.work.upgradeNode(n.name, kind));
    // The first worker batch's preflight runs while the last control plane's kubelet restarts.
    const controlPlanes = (await toChange(d)).filter((p) => p.role === "control-plane");
    if (controlPlanes.at(-1)?.name === n.name) {
      await d.work.preflightAhead(((await workerBatches(d))[0] ?? []).map((w) => w.name));
    }
    await step(d, n, "kubelet", () => d.work.swapKubelet(n.name));
    await step(d, n, "gate", () => d.work.gate(n.name));
  } finally {
    await d.work.proxyIn();
  }
  await d.work.mark(n.name, "done");
  d.report.node(n.name, n.role).result = "upgraded";
}

/** A worker's `upgrade node`, running while the worker is cordoned and drained. */
interface Upgrading {
  done: Promise<void>;
  /** Its error, once it failed. */
  failure?: { error: unknown };
}

/**
 * A worker of a batch the run cordoned already, whose `upgrade node` is running: it drains
 * meanwhile (unless `upgrade node` failed already), and its kubelet is swapped once both ended.
 */
async function upgradeWorker(
  d: ClusterUpgradeData,
  n: PlannedUpgradeNode,
  upgrading: Upgrading,
): Promise<void> {
  if (upgrading.failure) throw upgrading.failure.error;
  d.work.kubeletRestartAhead(n.name);
  await step(
    d,
    n,
    "drain",
    () => d.work.drain(n.name),
    (evicted) => `${evicted} pod(s) evicted`,
  );
  await upgrading.done;
  await step(d, n, "kubelet", () => d.work.swapKubelet(n.name));
  await step(d, n, "gate", () => d.work.gate(n.name));
  await step(d, n, "uncordon", () => d.work.uncordon(n.name));
  await d.work.mark(n.name, "done");
  d.report.node(n.name, n.role).result = "upgraded";
}

/**
 * A batch of workers. Each starts `upgrade node` first, as kubeadm documents; it only writes the
 * kubelet's configuration, which the running kubelet reads at its restart, so it runs while the
 * node is cordoned and drained (kubespray and k0sctl drain before it). The whole batch is
 * cordoned before any of it drains: evicted Pods land elsewhere. The next batch's preflight runs
 * while this one restarts its kubelets.
 */
async function upgradeBatch(
  d: ClusterUpgradeData,
  batch: PlannedUpgradeNode[],
  next: PlannedUpgradeNode[],
): Promise<void> {
  const each = (op: (n: PlannedUpgradeNode) => Promise<void>) =>
    fleet(batch, (n) => n.name, op, { concurrency: batch.length });
  const upgrading = new Map<string, Upgrading>();
  let ahead: Promise<void> | undefined;
  try {
    await each(async (n) => {
      await d.work.mark(n.name, "started");
      const u: Upgrading = {
        done: step(d, n, "upgrade-node", () => d.work.upgradeNode(n.name, "node")),
      };
      u.done.catch((error: unknown) => (u.failure = { error }));
      upgrading.set(n.name, u);
      await step(d, n, "cordon", () => d.work.cordon(n.name));
    });
    // The next batch's preflight starts once this batch's `upgrade node` ended, not to slow it.
    const upgraded = Promise.allSettled([...upgrading.values()].map((u) => u.done));
    ahead = upgraded.then(() => d.work.preflightAhead(next.map((w) => w.name)));
    ahead.catch(() => {}); // one that could not start runs at its node's turn
    await each((n) => upgradeWorker(d, n, upgrading.get(n.name)!));
  } finally {
    // Nothing of the batch goes on running once it failed.
    await Promise.allSettled([...[...upgrading.values()].map((u) => u.done), ahead]);
  }
}

const connect = connectPhase<ClusterUpgradeData>();

// The plan's reading of the cluster starts with the inspection (settled() waits for it before
// it refuses or plans anything); the plan phase takes its outcome.
const facts: Phase<ClusterUpgradeData> = {
  ...factsPhase<ClusterUpgradeData>("Inspect every host; its node marker must name this cluster"),
  run: async (d) => {
    d.settled().catch(() => {});
    await d.session.inventory();
  },
};

const plan: Phase<ClusterUpgradeData> = {
  name: "plan",
  short:
    "Read what the cluster runs, resolve --to, refuse what cannot be upgraded, settle the order",
  run: async (d) => {
    const { spec } = d.session;
    const custom = spec.nodes.filter((n) => customKubeletOf(spec, n) !== undefined);
    if (d.options.kubeletBinary === undefined && custom.length > 0) {
      // The Cluster's kubeletBinary is the build `up` installed, of the version before.
      d.reporter.warn(
        `[plan] the Cluster names a kubeletBinary for ${custom.map((n) => n.name).join(", ")}: the upgrade installs the released kubelet of the target there; give --kubelet-binary (the action: upgrade-kubelet-binary) to install your build of it`,
      );
    }
    for (const n of await planned(d)) {
      d.session.nodeReporter(n.name).info(`[plan] ${n.role}: ${n.action} — ${n.note}`);
      const node = d.report.node(n.name, n.role);
      // A node an earlier hop of this run upgraded stays "upgraded".
      if (n.action === "skip" && node.result === "pending") node.result = "skipped";
    }
  },
};

/** The node `upgrade apply` runs on in this run, if any. */
const applyNode = async (d: ClusterUpgradeData) =>
  (await planned(d)).find((n) => n.action === "apply");

/** Starts the first control plane's `upgrade apply` preflight ahead of its turn (it only reads). */
async function applyPreflightAhead(d: ClusterUpgradeData): Promise<void> {
  const first = await applyNode(d);
  if (first && d.selects("first-control-plane")) {
    await d.work.preflightAhead([first.name], "apply");
  }
}

/**
 * etcd's snapshot, taken once per hop whoever asks first (the staging, beside it, or its own
 * phase); timed as a step of the first control plane when that node changes in this run, and
 * in the report as soon as it is taken (a run whose staging then fails names it too).
 */
async function snapshotOnce(d: ClusterUpgradeData): Promise<EtcdSnapshot | undefined> {
  const first = (await planned(d)).find((n) => n.name === d.session.firstControlPlane.name);
  return d.work.etcdSnapshot((take) => {
    const recorded = async () => {
      const snapshot = await take();
      d.report.snapshotTaken(snapshot);
      return snapshot;
    };
    return first && first.action !== "skip"
      ? step(d, first, "etcd-snapshot", recorded, (s) =>
          s ? `${s.path} (${s.bytes} bytes, taken by ${s.takenBy})` : "none taken",
        )
      : recorded();
  });
}

/** Whether this run probes the API and the workloads while it changes nodes. */
const probing = async (d: ClusterUpgradeData) =>
  !d.dryRun &&
  (d.options.apiProbes !== undefined || d.options.workloadProbes !== undefined) &&
  (await toChange(d)).length > 0;

const stage: Phase<ClusterUpgradeData> = {
  name: "stage",
  short: "Download the target kubelet and kubectl, stage them and pre-pull images on every node",
  runIf: async (d) => (await toChange(d)).length > 0,
  run: async (d) => {
    const names = new Set((await toChange(d)).map((n) => n.name));
    const inventory = (await d.settled()).inventory.filter((i) => names.has(i.node.name));
    // What only reads goes on beside the staging, nothing changing before all of it ended:
    // etcd's snapshot, and the first control plane's `upgrade apply` prepared and its preflight
    // run (an image its check finds missing is pulled beside the staging's pull of it, which
    // the runtime fetches once).
    if (d.selects("etcd-snapshot")) snapshotOnce(d).catch(() => {}); // awaited by its phase
    // The probes change nothing the cluster runs (they add their own namespace, Lease and
    // workload): they start here too, sampling from before the first change, and index.ts stops
    // them and removes what they made whatever happens.
    if (d.selects("probes") && (await probing(d))) d.probes.start().catch(() => {});
    applyPreflightAhead(d).catch(() => {}); // taken at the node's turn
    await d.work.stage(inventory);
  },
};

const probes: Phase<ClusterUpgradeData> = {
  name: "probes",
  short:
    "Start the probes: every control plane's /readyz, a read and a write through admin.conf's server, the canary workload",
  runIf: probing,
  // Started beside the staging, unless it did not run (--phase probes).
  run: (d) => d.probes.start(),
};

const etcdSnapshot: Phase<ClusterUpgradeData> = {
  name: "etcd-snapshot",
  short: "Snapshot etcd on the first control plane before any node changes (kept there, 0600)",
  group: (d) => `etcd snapshot ${d.session.firstControlPlane.name}`,
  runIf: async (d) => (await toChange(d)).length > 0,
  run: async (d) => {
    // Both started beside the staging, unless it did not run (--phase etcd-snapshot).
    await applyPreflightAhead(d);
    await snapshotOnce(d);
  },
};

const firstControlPlane: Phase<ClusterUpgradeData> = {
  name: "first-control-plane",
  short: "`upgrade apply` on the first control plane, its kubelet, Node Ready at the target",
  dependencies: ["stage"],
  group: (d) =>
    `${d.dryRun ? "render upgrade apply" : "upgrade apply"} ${d.session.firstControlPlane.name}`,
  runIf: async (d) => (await applyNode(d)) !== undefined,
  run: async (d) => {
    const n = (await applyNode(d))!;
    if (d.dryRun) {
      await d.work.upgradeNode(n.name, "apply");
      return;
    }
    await d.session.onNode(n.name, () => upgradeControlPlane(d, n));
  },
};

const otherControlPlanes = async (d: ClusterUpgradeData) =>
  (await toChange(d)).filter((n) => n.role === "control-plane" && n.action === "node");

const controlPlanes: Phase<ClusterUpgradeData> = {
  name: "control-planes",
  short: "The other control planes, one at a time: etcd quorum, `upgrade node`, kubelet, gate",
  dependencies: ["stage"],
  group: false,
  runIf: async (d) => (await otherControlPlanes(d)).length > 0,
  run: async (d) => {
    for (const n of await otherControlPlanes(d)) {
      await d.session.nodeGroup("upgrade node", n.name, () => upgradeControlPlane(d, n));
    }
  },
};

const addons: Phase<ClusterUpgradeData> = {
  name: "addons",
  short:
    "After the last control plane: CoreDNS and kube-proxy at the images kubeadm's target installs",
  group: false,
  runIf: async (d) => (await toChange(d)).length > 0,
  run: (d) => d.work.addonsAtTarget(),
};

const workerBatches = async (d: ClusterUpgradeData) => {
  const batches = new Map<number, PlannedUpgradeNode[]>();
  for (const n of await toChange(d)) {
    if (n.role === "worker") batches.set(n.batch, [...(batches.get(n.batch) ?? []), n]);
  }
  return [...batches.values()];
};

const workers: Phase<ClusterUpgradeData> = {
  name: "workers",
  short:
    "The workers in batches of --worker-batch: `upgrade node`, cordon, drain, kubelet, gate, uncordon",
  dependencies: ["stage"],
  group: () => "upgrade workers",
  runIf: async (d) => (await workerBatches(d)).length > 0,
  run: async (d) => {
    const batches = await workerBatches(d);
    for (const [i, batch] of batches.entries()) {
      await upgradeBatch(d, batch, batches[i + 1] ?? []);
      // The settle gate: the next batch waits until this one's workloads are back.
      if (d.options.workloadProbes && i < batches.length - 1) {
        const settled = d.probes.settle(batch.map((n) => n.name));
        settled.catch(() => {});
        await fleet(
          batch,
          (n) => n.name,
          (n) => step(d, n, "settle", () => settled),
          {
            concurrency: batch.length,
          },
        );
      }
    }
  },
};

const verify: Phase<ClusterUpgradeData> = {
  name: "verify",
  short: "Every Node Ready at the target, kubeadm-config at the target",
  run: async (d) => {
    // A run stopped inside a control plane's step left it out of the proxies' rotation.
    await d.work.proxyIn();
    const admin = await d.session.adminClient();
    await d.work.verify(admin);
  },
};

export function clusterUpgradePhases(): Phase<ClusterUpgradeData>[] {
  return [
    connect,
    facts,
    plan,
    stage,
    etcdSnapshot,
    probes,
    firstControlPlane,
    controlPlanes,
    addons,
    workers,
    verify,
  ];
}

/** What `--plan` runs: it connects, reads and plans. */
export const PLAN_PHASES = ["connect", "facts", "plan"];
/**
 * What `--phase <names>` runs, as kubeadm's `phase` subcommands run one phase: the plan (every
 * refusal still applies), the phases the named ones read (stage: it copies nothing twice), and
 * the named ones, in the workflow's order. An unknown name is left to the Runner to refuse.
 */
export function onlyPhases(names: readonly string[]): string[] {
  const all = clusterUpgradePhases();
  const wanted = new Set([...PLAN_PHASES, ...names]);
  for (const p of all) {
    if (wanted.has(p.name)) for (const d of p.dependencies ?? []) wanted.add(d);
  }
  const known = all.map((p) => p.name);
  return [...known.filter((n) => wanted.has(n)), ...[...wanted].filter((n) => !known.includes(n))];
}

/** What `--dry-run` runs: the plan, and the first control plane's `upgrade apply` rendered. */
export const DRY_RUN_PHASES = [...PLAN_PHASES, "first-control-plane"];
