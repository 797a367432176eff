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

describe("the etcd-snapshot phase", () => {
  const node = (name: string, action: string) => ({ name, role: "control-plane", action });
  /** The phase over a stand-in of the work, its calls logged in order. */
  async function run(o: { action: string; selects: boolean }): Promise<string[]> {
    const events: string[] = [];
    const data = {
      session: { firstControlPlane: { name: "cp-1" } },
      settled: () => Promise.resolve({ plan: { nodes: [node("cp-1", o.action)] } }),
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
      },
      report: new ReportRecorder("ci"),
    } as unknown as ClusterUpgradeData;
    const phase = clusterUpgradePhases().find((p) => p.name === "etcd-snapshot")!;
    await phase.run!(data, { path: "etcd-snapshot", log: { info: () => {}, warn: () => {} } });
    return events;
  }

  it("starts the first control plane's `upgrade apply` preflight, then takes the snapshot", async () => {
    expect(await run({ action: "apply", selects: true })).toEqual([
      "preflight ahead of [cp-1] apply",
      "snapshot",
    ]);
  });

  it("starts none when the run does not reach `upgrade apply` (--phase) or the node is at the target", async () => {
    expect(await run({ action: "apply", selects: false })).toEqual(["snapshot"]);
    expect(await run({ action: "skip", selects: true })).toEqual(["snapshot"]);
  });
});
