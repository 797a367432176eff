import { describe, expect, it } from "vitest";
import type {
  ClusterUpgradeData,
  PlannedUpgradeNode,
} from "../../../../src/cluster/upgrade/data.js";
import { clusterUpgradePhases } from "../../../../src/cluster/upgrade/phases.js";
import { ReportRecorder } from "../../../../src/cluster/upgrade/report.js";

// The workers phase of `kubeforge upgrade -f`: per batch, each worker's `upgrade node` starts
// first and runs while the batch is cordoned and drained; a worker's kubelet is swapped only
// once both its `upgrade node` and its drain ended; a worker whose `upgrade node` failed before
// its drain is not drained, and nothing of a failed batch is left running.

const worker = (name: string, batch: number): PlannedUpgradeNode => ({
  name,
  role: "worker",
  action: "node",
  batch,
  note: "",
});

/** A deferred: a promise and the hands that settle it. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The workers phase over a stand-in of the work: each call is logged; `upgradeNode` waits. */
function harness(nodes: PlannedUpgradeNode[]) {
  const events: string[] = [];
  const upgrades = new Map(nodes.map((n) => [n.name, deferred()]));
  const drains = new Map(nodes.map((n) => [n.name, deferred()]));
  const logged =
    (what: string, wait?: Map<string, ReturnType<typeof deferred>>) =>
    async (name: string): Promise<number> => {
      events.push(`${name} ${what}`);
      await wait?.get(name)!.promise;
      events.push(`${name} ${what} done`);
      return 0;
    };
  const work = {
    mark: () => Promise.resolve(),
    upgradeNode: logged("upgrade-node", upgrades),
    cordon: logged("cordon"),
    preflightAhead: (names: string[]) => {
      events.push(`preflight ahead of [${names.join(" ")}]`);
      return Promise.resolve();
    },
    drain: logged("drain", drains),
    kubeletRestartAhead: (name: string) => {
      events.push(`${name} kubelet restart ahead`);
    },
    swapKubelet: logged("kubelet"),
    gate: logged("gate"),
    uncordon: logged("uncordon"),
  };
  const report = new ReportRecorder("ci");
  const data = {
    settled: () => Promise.resolve({ plan: { nodes } }),
    work,
    report,
    options: {},
  } as unknown as ClusterUpgradeData;
  const phase = clusterUpgradePhases().find((p) => p.name === "workers")!;
  const run = phase.run!(data, { path: "workers", log: { info: () => {}, warn: () => {} } });
  run.catch(() => {});
  return { events, upgrades, drains, report, run };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("the workers phase", () => {
  it("drains a worker while its `upgrade node` runs, and swaps its kubelet once both ended", async () => {
    const h = harness([worker("w-1", 1), worker("w-2", 2)]);
    await tick();
    // What the kubelet's restart needs first starts as the drain does.
    expect(h.events).toEqual([
      "w-1 upgrade-node",
      "w-1 cordon",
      "w-1 cordon done",
      "w-1 kubelet restart ahead",
      "w-1 drain",
    ]);
    h.drains.get("w-1")!.resolve();
    await tick();
    // Drained, but `upgrade node` still runs: the kubelet waits for it.
    expect(h.events.at(-1)).toBe("w-1 drain done");
    h.upgrades.get("w-1")!.resolve();
    await tick();
    h.drains.get("w-2")!.resolve();
    await tick();
    h.upgrades.get("w-2")!.resolve();
    await h.run;
    // The next batch's preflight starts once this batch's `upgrade node` ended.
    const at = (e: string) => h.events.indexOf(e);
    expect(at("preflight ahead of [w-2]")).toBeGreaterThan(at("w-1 upgrade-node done"));
    expect(at("preflight ahead of [w-2]")).toBeLessThan(at("w-2 upgrade-node"));
    expect(
      h.events
        .slice(at("w-1 upgrade-node done"))
        .filter((e) => !e.startsWith("preflight") && !e.endsWith("restart ahead")),
    ).toEqual([
      "w-1 upgrade-node done",
      "w-1 kubelet",
      "w-1 kubelet done",
      "w-1 gate",
      "w-1 gate done",
      "w-1 uncordon",
      "w-1 uncordon done",
      "w-2 upgrade-node",
      "w-2 cordon",
      "w-2 cordon done",
      "w-2 drain",
      "w-2 drain done",
      "w-2 upgrade-node done",
      "w-2 kubelet",
      "w-2 kubelet done",
      "w-2 gate",
      "w-2 gate done",
      "w-2 uncordon",
      "w-2 uncordon done",
    ]);
    expect(h.report.report().nodes[0]!.steps.map((s) => s.name)).toEqual([
      "upgrade-node",
      "cordon",
      "drain",
      "kubelet",
      "gate",
      "uncordon",
    ]);
  });

  it("does not drain a worker whose `upgrade node` failed first; the batch's others go on, and the run fails once nothing runs", async () => {
    const h = harness([worker("w-1", 1), worker("w-2", 1), worker("w-3", 2)]);
    h.upgrades.get("w-1")!.reject(new Error("kubelet-config: cannot write"));
    await tick();
    expect(h.events).not.toContain("w-1 drain");
    expect(h.events).not.toContain("w-1 kubelet restart ahead");
    expect(h.events).toContain("w-2 drain");
    h.drains.get("w-2")!.resolve();
    await tick();
    // w-2's `upgrade node` still runs: the phase has not failed yet.
    let failed = false;
    h.run.catch(() => (failed = true));
    await tick();
    expect(failed).toBe(false);
    h.upgrades.get("w-2")!.resolve();
    await expect(h.run).rejects.toThrow("kubelet-config: cannot write");
    expect(h.events).toContain("w-2 uncordon done");
    // The next batch never started; w-1 is recorded as failed at its `upgrade node`.
    expect(h.events.some((e) => e.startsWith("w-3"))).toBe(false);
    const w1 = h.report.report(new Error("x")).nodes.find((n) => n.name === "w-1")!;
    expect(w1.result).toBe("failed");
    expect(w1.steps.map((s) => [s.name, s.result])).toEqual([
      ["upgrade-node", "failed"],
      ["cordon", "ok"],
    ]);
  });

  it("fails a worker whose `upgrade node` failed during its drain, after the drain, without swapping its kubelet", async () => {
    const h = harness([worker("w-1", 1)]);
    await tick();
    h.upgrades.get("w-1")!.reject(new Error("upgrade node failed"));
    await tick();
    expect(h.events).toContain("w-1 drain");
    expect(h.events).not.toContain("w-1 drain done");
    h.drains.get("w-1")!.resolve();
    await expect(h.run).rejects.toThrow("upgrade node failed");
    expect(h.events).not.toContain("w-1 kubelet");
  });
});
