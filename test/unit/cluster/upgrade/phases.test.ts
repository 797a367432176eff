import { describe, expect, it } from "vitest";
import { clusterUpgradePhases, onlyPhases } from "../../../../src/cluster/upgrade/phases.js";

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
