import semver from "semver";
import { parseSemantic } from "../../config/upgrade-policy.js";
import type {
  ClusterReading,
  NodeReading,
  PlannedUpgradeNode,
  UpgradeOptions,
  UpgradePlan,
} from "./data.js";

// The cluster-level upgrade's plan and its refusals, pure: what the cluster runs (read.ts) and
// the resolved target in, the order of the nodes or one sentence per reason to refuse out. A
// refusal is decided before any host changes (kubeadm-upgrade.md §5.3): a downgrade, more than
// one minor, a pre-release without the allow flag, an unhealthy etcd, a NotReady control plane,
// a cluster half-upgraded towards another target. kubeadm's own policy (one minor, no
// control-plane downgrade: phases/upgrade/policy.go) then runs again on the first control plane.

/** Whether a node runs the target: its kubelet and, on a control plane, its API server. */
export function atTarget(n: NodeReading, target: string): boolean {
  return (
    n.kubeletVersion === target &&
    (n.role !== "control-plane" || n.apiServerVersion === target) &&
    n.marker?.step !== "started"
  );
}

/**
 * A downgrade or a jump of more than one minor, from `from` to `to`, as one sentence naming
 * `asker` (the flag or input that asked for `to`) and `viaName` (the one that chains hops);
 * undefined when the hop is allowed.
 */
export function versionRefusal(
  cluster: string,
  from: string,
  to: string,
  asker = "--to",
  viaName = "--via",
): string | undefined {
  const have = parseSemantic(from);
  const want = parseSemantic(to)!;
  if (!have)
    return `the cluster "${cluster}" records no exact version (kubeadm-config says "${from}")`;
  if (semver.lt(want, have)) {
    return `kubeforge does not downgrade: the cluster "${cluster}" runs ${from} and ${asker} asks for ${to}; run "kubeforge down" and "up" at ${to} instead`;
  }
  const minors = semver.minor(want) - semver.minor(have);
  if (semver.major(want) !== semver.major(have) || minors > 1) {
    return `${asker} ${to} is ${minors} minors above the cluster's ${from}: kubeforge upgrades one minor per hop; upgrade to v${semver.major(have)}.${semver.minor(have) + 1} first, or give ${viaName} auto to go through every minor in one run`;
  }
  return undefined;
}

function preReleaseRefusal(to: string, o: UpgradeOptions): string | undefined {
  const pre = semver.prerelease(to);
  if (!pre || o.allowExperimentalUpgrades) return undefined;
  // kubeadm's policy: release candidates pass with either flag, alpha and beta only with
  // --allow-experimental-upgrades.
  if (String(pre[0]) === "rc" && o.allowRCUpgrades) return undefined;
  return String(pre[0]) === "rc"
    ? `--to ${to} is a release candidate: pass --allow-release-candidate-upgrades to upgrade to it`
    : `--to ${to} is a pre-release: pass --allow-experimental-upgrades to upgrade to it`;
}

/**
 * A run that stopped half-way towards one version is finished at that version first: another
 * target now would leave nodes two versions apart.
 */
function halfUpgradedRefusal(r: ClusterReading, to: string): string | undefined {
  const towards = new Set(
    r.nodes.flatMap((n) => (n.marker && n.marker.step !== "done" ? [n.marker.to] : [])),
  );
  // kubeadm-config moved on (apply ran) while a control plane still runs an older API server:
  // mid-upgrade. Older kubelets alone are within kubeadm's skew policy (3 minors).
  if (
    r.nodes.some(
      (n) =>
        n.role === "control-plane" &&
        n.apiServerVersion !== undefined &&
        n.apiServerVersion !== r.clusterVersion,
    )
  ) {
    towards.add(r.clusterVersion);
  }
  for (const m of r.nodes.flatMap((n) => (n.marker ? [n.marker] : []))) {
    if (m.step === "done" && m.to !== to && r.nodes.some((n) => n.kubeletVersion !== m.to)) {
      towards.add(m.to);
    }
  }
  towards.delete(to);
  if (towards.size === 0) return undefined;
  const other = [...towards][0]!;
  const at = r.nodes.map((n) => `${n.name} ${n.kubeletVersion ?? "unregistered"}`).join(", ");
  return `the cluster is half-upgraded towards ${other} (${at}): run "kubeforge upgrade --to ${other}" to finish it before asking for ${to}`;
}

/** Every reason to refuse the run, each one sentence; empty: go. */
export function refusals(
  cluster: string,
  r: ClusterReading,
  to: string,
  o: UpgradeOptions,
): string[] {
  const out: string[] = [];
  const resuming = r.clusterVersion === to;
  const version = resuming ? undefined : versionRefusal(cluster, r.clusterVersion, to);
  if (version) out.push(version);
  const pre = preReleaseRefusal(to, o);
  if (pre) out.push(pre);
  const half = halfUpgradedRefusal(r, to);
  if (half) out.push(half);
  if (r.etcdProblem) out.push(`etcd is not healthy: ${r.etcdProblem}`);
  for (const n of r.nodes) {
    if (n.role === "control-plane" && !n.ready) {
      out.push(
        `control plane ${n.name} is NotReady: a cluster is upgraded only with every control plane Ready`,
      );
    }
  }
  return out;
}

/** The nodes in kubeadm's order: the first control plane, the others, then workers in batches. */
export function planUpgrade(
  cluster: string,
  r: ClusterReading,
  to: string,
  workerBatch: number,
): UpgradePlan {
  const controlPlanes = r.nodes.filter((n) => n.role === "control-plane");
  const workers = r.nodes.filter((n) => n.role === "worker");
  const planned = (n: NodeReading, action: PlannedUpgradeNode["action"], batch: number) => {
    const skip = atTarget(n, to);
    return {
      name: n.name,
      role: n.role,
      action: skip ? ("skip" as const) : action,
      batch,
      note: skip
        ? `already at ${to}: skipped`
        : `${n.kubeletVersion ?? "?"} → ${to}${n.marker?.step === "started" ? " (resumed: a run stopped here)" : ""}`,
    };
  };
  const nodes: PlannedUpgradeNode[] = controlPlanes.map((n, i) =>
    planned(n, i === 0 ? "apply" : "node", 0),
  );
  workers.forEach((n, i) => nodes.push(planned(n, "node", Math.floor(i / workerBatch) + 1)));
  // A resumed upgrade is still the hop its first run started: kubeadm-config says the target
  // already, the markers say where from.
  const started = r.nodes.find((n) => n.marker?.to === to)?.marker?.from;
  const resuming = started !== undefined && nodes.some((n) => n.action !== "skip");
  return { cluster, from: resuming ? started : r.clusterVersion, to, nodes };
}

/** The plan for people (`--plan` prints it on stdout). */
export function renderUpgradePlan(plan: UpgradePlan): string {
  const lines = [
    `# kubeforge upgrade --plan: cluster "${plan.cluster}" from ${plan.from} to ${plan.to}${plan.ciBuild ? " (a CI build)" : ""}; nothing was changed`,
  ];
  if (plan.hops && plan.hops.length > 1) {
    // The later hops' plans are settled when they start, from what the cluster runs then.
    lines.push(`# hops (--via): ${[plan.from, ...plan.hops].join(" → ")}; this is the first`);
  }
  plan.nodes.forEach((n, i) => {
    const step =
      n.action === "skip"
        ? "skip"
        : n.role === "control-plane"
          ? `upgrade ${n.action}, kubelet, gate`
          : `upgrade node, cordon, drain, kubelet, gate, uncordon (batch ${n.batch})`;
    lines.push(`${i + 1}. ${n.name} (${n.role}): ${step} — ${n.note}`);
  });
  return `${lines.join("\n")}\n`;
}
