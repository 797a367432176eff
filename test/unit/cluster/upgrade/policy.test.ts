import { describe, expect, it } from "vitest";
import type {
  ClusterReading,
  NodeReading,
  UpgradeOptions,
} from "../../../../src/cluster/upgrade/data.js";
import {
  atTarget,
  planUpgrade,
  refusals,
  renderUpgradePlan,
} from "../../../../src/cluster/upgrade/policy.js";

// The cluster-level upgrade's refusals and order (kubeadm-upgrade.md §5.3, §5.4): one minor per
// run and no downgrade as kubeadm's policy (phases/upgrade/policy.go: MaximumAllowedMinorVersion
// UpgradeSkew = 1, "Specified version to upgrade to ... is lower than the cluster version" for
// the control plane), pre-releases only with the allow flags (policy.go's
// "--allow-experimental-upgrades" / "--allow-release-candidate-upgrades"), kubeadm's documented
// node order (first control plane, the others, then workers).

const OPTIONS: UpgradeOptions = {
  to: "",
  workerBatch: 1,
  drainTimeoutMs: 1,
  nodeTimeoutMs: 1,
  allowExperimentalUpgrades: false,
  allowRCUpgrades: false,
};

const node = (
  name: string,
  role: NodeReading["role"],
  v: string,
  extra: Partial<NodeReading> = {},
) =>
  ({
    name,
    role,
    kubeletVersion: v,
    ready: true,
    ...(role === "control-plane" ? { apiServerVersion: v } : {}),
    ...extra,
  }) satisfies NodeReading;

function reading(nodes: NodeReading[], clusterVersion = "v1.35.2"): ClusterReading {
  return { clusterVersion, nodes, etcdProblem: undefined, addons: {} };
}

const healthy = reading([
  node("cp-1", "control-plane", "v1.35.2"),
  node("w-1", "worker", "v1.35.2"),
  node("w-2", "worker", "v1.35.2"),
  node("w-3", "worker", "v1.35.2"),
]);

describe("refusals", () => {
  it("lets one minor up, a patch up, and the version the cluster runs (a resumed run) through", () => {
    expect(refusals("ci", healthy, "v1.36.3", OPTIONS)).toEqual([]);
    expect(refusals("ci", healthy, "v1.35.9", OPTIONS)).toEqual([]);
    expect(refusals("ci", healthy, "v1.35.2", OPTIONS)).toEqual([]);
  });

  it("refuses a downgrade, of a minor or of a patch, naming both versions", () => {
    expect(refusals("ci", healthy, "v1.34.9", OPTIONS)).toEqual([
      'kubeforge does not downgrade: the cluster "ci" runs v1.35.2 and --to asks for v1.34.9; run "kubeforge down" and "up" at v1.34.9 instead',
    ]);
    expect(refusals("ci", healthy, "v1.35.1", OPTIONS)[0]).toMatch(/^kubeforge does not downgrade/);
  });

  it("refuses more than one minor, naming the next one", () => {
    expect(refusals("ci", healthy, "v1.37.0", OPTIONS)).toEqual([
      "--to v1.37.0 is 2 minors above the cluster's v1.35.2: kubeforge upgrades one minor per hop; upgrade to v1.36 first, or give --via auto to go through every minor in one run",
    ]);
  });

  it("refuses pre-releases unless allowed: rc with either flag, alpha and beta only as experimental", () => {
    expect(refusals("ci", healthy, "v1.36.0-rc.1", OPTIONS)).toEqual([
      "--to v1.36.0-rc.1 is a release candidate: pass --allow-release-candidate-upgrades to upgrade to it",
    ]);
    expect(refusals("ci", healthy, "v1.36.0-rc.1", { ...OPTIONS, allowRCUpgrades: true })).toEqual(
      [],
    );
    expect(
      refusals("ci", healthy, "v1.36.0-beta.0", { ...OPTIONS, allowRCUpgrades: true }),
    ).toEqual([
      "--to v1.36.0-beta.0 is a pre-release: pass --allow-experimental-upgrades to upgrade to it",
    ]);
    expect(
      refusals("ci", healthy, "v1.36.0-alpha.1", { ...OPTIONS, allowExperimentalUpgrades: true }),
    ).toEqual([]);
  });

  it("refuses an unhealthy etcd and a NotReady control plane, naming them", () => {
    const sick = reading([
      node("cp-1", "control-plane", "v1.35.2"),
      node("cp-2", "control-plane", "v1.35.2", { ready: false }),
      node("w-1", "worker", "v1.35.2", { ready: false }),
    ]);
    sick.etcdProblem = "etcd member https://10.0.0.2:2379 is not healthy";
    expect(refusals("ci", sick, "v1.36.3", OPTIONS)).toEqual([
      "etcd is not healthy: etcd member https://10.0.0.2:2379 is not healthy",
      "control plane cp-2 is NotReady: a cluster is upgraded only with every control plane Ready",
    ]);
  });

  it("refuses another target on a cluster a run left half-way, naming both versions", () => {
    const half = reading(
      [
        node("cp-1", "control-plane", "v1.36.3", {
          marker: { from: "v1.35.2", to: "v1.36.3", step: "done" },
        }),
        node("w-1", "worker", "v1.35.2", {
          marker: { from: "v1.35.2", to: "v1.36.3", step: "started" },
        }),
      ],
      "v1.36.3",
    );
    expect(refusals("ci", half, "v1.36.4", OPTIONS)).toEqual([
      'the cluster is half-upgraded towards v1.36.3 (cp-1 v1.36.3, w-1 v1.35.2): run "kubeforge upgrade --to v1.36.3" to finish it before asking for v1.36.4',
    ]);
    expect(refusals("ci", half, "v1.36.3", OPTIONS)).toEqual([]);
  });

  it("takes control planes at two versions for a half-done upgrade, markers or not", () => {
    const mixed = reading(
      [node("cp-1", "control-plane", "v1.36.3"), node("cp-2", "control-plane", "v1.35.2")],
      "v1.36.3",
    );
    expect(refusals("ci", mixed, "v1.37.0", OPTIONS)[0]).toMatch(
      /^the cluster is half-upgraded towards v1\.36\.3 \(cp-1 v1\.36\.3, cp-2 v1\.35\.2\)/,
    );
    expect(refusals("ci", mixed, "v1.36.3", OPTIONS)).toEqual([]);
  });

  it("takes kubelets a minor behind alone for skew, not for a half-done upgrade", () => {
    const skewed = reading([
      node("cp-1", "control-plane", "v1.35.2"),
      node("w-1", "worker", "v1.34.5"),
    ]);
    expect(refusals("ci", skewed, "v1.36.3", OPTIONS)).toEqual([]);
  });
});

describe("planUpgrade", () => {
  it("orders the first control plane (apply), the others (node), then workers in batches", () => {
    const cluster = reading([
      node("cp-1", "control-plane", "v1.35.2"),
      node("cp-2", "control-plane", "v1.35.2"),
      ...healthy.nodes.filter((n) => n.role === "worker"),
    ]);
    const plan = planUpgrade("ci", cluster, "v1.36.3", 2);
    expect(plan.nodes.map((n) => [n.name, n.action, n.batch])).toEqual([
      ["cp-1", "apply", 0],
      ["cp-2", "node", 0],
      ["w-1", "node", 1],
      ["w-2", "node", 1],
      ["w-3", "node", 2],
    ]);
    expect(renderUpgradePlan(plan)).toContain(
      "5. w-3 (worker): upgrade node, cordon, drain, kubelet, gate, uncordon (batch 2)",
    );
  });

  it("skips nodes at the target, resumes one a run stopped on", () => {
    const done = node("cp-1", "control-plane", "v1.36.3");
    const stopped = node("w-1", "worker", "v1.36.3", {
      marker: { from: "v1.35.2", to: "v1.36.3", step: "started" },
    });
    expect(atTarget(done, "v1.36.3")).toBe(true);
    expect(atTarget(stopped, "v1.36.3")).toBe(false);
    // A control plane whose kubelet moved but whose API server did not is not done.
    expect(atTarget({ ...done, apiServerVersion: "v1.35.2" }, "v1.36.3")).toBe(false);
    const plan = planUpgrade("ci", reading([done, stopped], "v1.36.3"), "v1.36.3", 1);
    expect(plan.nodes.map((n) => [n.name, n.action, n.note])).toEqual([
      ["cp-1", "skip", "already at v1.36.3: skipped"],
      ["w-1", "node", "v1.36.3 → v1.36.3 (resumed: a run stopped here)"],
    ]);
    // The resumed run is still the hop from the version its first run started at.
    expect([plan.from, plan.to]).toEqual(["v1.35.2", "v1.36.3"]);
    // A run that finds everything done changes nothing: the cluster's version is where it starts.
    const finished = { ...stopped, marker: { ...stopped.marker!, step: "done" as const } };
    expect(planUpgrade("ci", reading([done, finished], "v1.36.3"), "v1.36.3", 1).from).toBe(
      "v1.36.3",
    );
  });
});
