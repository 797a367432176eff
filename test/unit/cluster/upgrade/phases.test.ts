import { describe, expect, it } from "vitest";
import type { ClusterUpgradeData } from "../../../../src/cluster/upgrade/data.js";
import { clusterUpgradePhases, onlyPhases } from "../../../../src/cluster/upgrade/phases.js";
import { ReportRecorder } from "../../../../src/cluster/upgrade/report.js";

// `kubeforge upgrade -f --phase <names>`: the plan first (its refusals apply to every run), the
// phases the named ones read, then the named ones, in the workflow's order.

describe("the cluster upgrade's phases", () => {
  it("run in kubeadm's order, the etcd snapshot and the probes before the first change, the addon check before the workers", () => {
    expect(clusterUpgradePhases().map((p) => p.name)).toEqual([
      "connect",
      "facts",
      "plan",
      "stage",
      "etcd-snapshot",
      "probes",
      "first-control-plane",
      "control-planes",
      "addons",
      "workers",
      "verify",
    ]);
  });
});

describe("onlyPhases", () => {
  it("runs the plan, then the phase asked for", () => {
    expect(onlyPhases(["etcd-snapshot"])).toEqual(["connect", "facts", "plan", "etcd-snapshot"]);
  });

  it("adds the staging a node phase reads, in the workflow's order whatever the order asked", () => {
    expect(onlyPhases(["workers", "first-control-plane"])).toEqual([
      "connect",
      "facts",
      "plan",
      "stage",
      "first-control-plane",
      "workers",
    ]);
  });

  it("keeps an unknown name for the Runner to refuse, naming the valid ones", () => {
    expect(onlyPhases(["nope"])).toEqual(["connect", "facts", "plan", "nope"]);
  });
});

describe("what runs ahead of the first control plane's turn", () => {
  const node = (name: string, role: string, action: string) => ({ name, role, action });
  /** A phase over a stand-in of the work, its calls logged in order. */
  async function run(phaseName: string, o: { action: string; selects: boolean }) {
    const events: string[] = [];
    const nodes = [node("cp-1", "control-plane", o.action), node("w-1", "worker", "node")];
    const data = {
      session: { firstControlPlane: { name: "cp-1" } },
      settled: () =>
        Promise.resolve({
          plan: { nodes },
          inventory: nodes.map((n) => ({ node: { name: n.name } })),
        }),
      selects: (phase: string) => o.selects && phase === "first-control-plane",
      work: {
        preflightAhead: (names: string[], kind: string) => {
          events.push(`preflight ahead of [${names.join(" ")}] ${kind}`);
          return Promise.resolve();
        },
        etcdSnapshot: () => {
          events.push("snapshot");
          return Promise.resolve(undefined);
        },
        stage: (inventory: { node: { name: string } }[]) => {
          events.push(`stage ${inventory.map((i) => i.node.name).join(" ")}`);
          return Promise.resolve();
        },
      },
      report: new ReportRecorder("ci"),
    } as unknown as ClusterUpgradeData;
    const phase = clusterUpgradePhases().find((p) => p.name === phaseName)!;
    await phase.run!(data, { path: phaseName, log: { info: () => {}, warn: () => {} } });
    return events;
  }

  it("starts the first control plane's `upgrade apply` preflight, then stages every node", async () => {
    expect(await run("stage", { action: "apply", selects: true })).toEqual([
      "preflight ahead of [cp-1] apply",
      "stage cp-1 w-1",
    ]);
  });

  it("starts them in the etcd-snapshot phase when stage did not (the work starts each once)", async () => {
    expect(await run("etcd-snapshot", { action: "apply", selects: true })).toEqual([
      "preflight ahead of [cp-1] apply",
      "snapshot",
    ]);
  });

  it("starts none when the run does not reach `upgrade apply` (--phase) or the node is at the target", async () => {
    expect(await run("etcd-snapshot", { action: "apply", selects: false })).toEqual(["snapshot"]);
    expect(await run("etcd-snapshot", { action: "skip", selects: true })).toEqual(["snapshot"]);
    expect(await run("stage", { action: "apply", selects: false })).toEqual(["stage cp-1 w-1"]);
  });
});
