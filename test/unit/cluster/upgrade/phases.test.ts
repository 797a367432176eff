import { describe, expect, it } from "vitest";
import type { ClusterUpgradeData } from "../../../../src/cluster/upgrade/data.js";
import { clusterUpgradePhases, onlyPhases } from "../../../../src/cluster/upgrade/phases.js";
import { ReportRecorder } from "../../../../src/cluster/upgrade/report.js";
import type { PreflightsAhead } from "../../../../src/cluster/upgrade/preflight-ahead.js";
import { HostUpgradeWork } from "../../../../src/cluster/upgrade/work.js";

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

describe("the stage and etcd-snapshot phases", () => {
  const node = (name: string, role: string, action: string) => ({ name, role, action });
  /** `phases` run in order over a stand-in of the work that stages each node, calls logged. */
  async function run(o: {
    action: string;
    selected: string[];
    phases: string[];
    /** The run probes the API (`--probe api`, the default). */
    probing?: boolean;
  }): Promise<{ events: string[]; snapshotCalls: number; report: ReportRecorder }> {
    const events: string[] = [];
    let probesStarted: Promise<void> | undefined;
    const taken = { node: "cp-1", path: "/s.db", bytes: 1, takenBy: "this run" };
    let snapshot: Promise<typeof taken> | undefined;
    let snapshotCalls = 0;
    const data = {
      session: { firstControlPlane: { name: "cp-1" } },
      settled: () =>
        Promise.resolve({
          plan: {
            nodes: [
              node("cp-1", "control-plane", o.action),
              node("w-1", "worker", "node"),
              node("w-2", "worker", "node"),
            ],
          },
          inventory: ["cp-1", "w-1", "w-2"].map((name) => ({ node: { name } })),
        }),
      selects: (phase: string) => o.selected.includes(phase),
      dryRun: false,
      options: o.probing ? { apiProbes: { intervalMs: 500 } } : {},
      // As index.ts's probeControl: started once, whoever asks.
      probes: {
        start: () => {
          events.push("probes start asked");
          probesStarted ??= (async () => {
            await new Promise((r) => setTimeout(r, 1));
            events.push("probes started");
          })();
          return probesStarted;
        },
      },
      work: {
        stage: async () => {
          await new Promise((r) => setTimeout(r, 5));
          events.push("staged");
        },
        preflightAhead: (names: string[], kind: string) => {
          events.push(`preflight ahead of [${names.join(" ")}] ${kind}`);
          return Promise.resolve();
        },
        // As the work does: taken once, whoever asks.
        etcdSnapshot: (timed: (take: () => Promise<typeof taken>) => Promise<typeof taken>) => {
          snapshotCalls++;
          snapshot ??= timed(() => {
            events.push("snapshot");
            return Promise.resolve(taken);
          });
          return snapshot;
        },
      },
      report: new ReportRecorder("ci"),
    } as unknown as ClusterUpgradeData;
    for (const name of o.phases) {
      const phase = clusterUpgradePhases().find((p) => p.name === name)!;
      await phase.run!(data, { path: name, log: { info: () => {}, warn: () => {} } });
      events.push(`${name} done`);
    }
    return { events, snapshotCalls, report: data.report };
  }

  const all = ["stage", "etcd-snapshot", "first-control-plane"];

  it("take etcd's snapshot and run the first control plane's preflight beside the staging", async () => {
    const { events, snapshotCalls } = await run({
      action: "apply",
      selected: all,
      phases: ["stage", "etcd-snapshot"],
    });
    // Both started before the staging ended; the phase after it starts nothing twice.
    expect(events.slice(0, 2).sort()).toEqual(["preflight ahead of [cp-1] apply", "snapshot"]);
    expect(events.slice(2)).toEqual([
      "staged",
      "stage done",
      "preflight ahead of [cp-1] apply",
      "etcd-snapshot done",
    ]);
    // The phase asked for the snapshot the staging started (the work takes it once).
    expect(snapshotCalls).toBe(2);
  });

  it("the snapshot phase alone (--phase etcd-snapshot) starts the preflight, then takes the snapshot", async () => {
    const { events } = await run({ action: "apply", selected: all, phases: ["etcd-snapshot"] });
    expect(events).toEqual(["preflight ahead of [cp-1] apply", "snapshot", "etcd-snapshot done"]);
  });

  it("record the snapshot in the report as soon as it is taken, before its phase", async () => {
    const { report } = await run({ action: "apply", selected: all, phases: ["stage"] });
    expect(report.report().etcd?.snapshot?.path).toBe("/s.db");
    const none = await run({ action: "apply", selected: ["stage"], phases: ["stage"] });
    expect(none.report.report().etcd).toBeUndefined();
  });

  it("start the probes beside the staging, before any change; their phase waits for that start", async () => {
    const { events } = await run({
      action: "apply",
      selected: [...all, "probes"],
      phases: ["stage", "etcd-snapshot", "probes"],
      probing: true,
    });
    // Started before the staging ended (it takes 5 ms, the start 1 ms).
    expect(events.indexOf("probes started")).toBeLessThan(events.indexOf("staged"));
    expect(events.slice(events.indexOf("etcd-snapshot done"))).toEqual([
      "etcd-snapshot done",
      "probes start asked",
      "probes done",
    ]);
    expect(events.filter((e) => e === "probes started")).toHaveLength(1);
  });

  it("start no probes beside the staging of a run without them, nor of one that stops before them", async () => {
    const without = await run({
      action: "apply",
      selected: [...all, "probes"],
      phases: ["stage"],
      probing: false,
    });
    expect(without.events).not.toContain("probes start asked");
    const staged = await run({ action: "apply", selected: all, phases: ["stage"], probing: true });
    expect(staged.events).not.toContain("probes start asked");
  });

  it("start nothing of a phase the run does not reach (--phase stage), nor a preflight of a node at the target", async () => {
    expect((await run({ action: "apply", selected: ["stage"], phases: ["stage"] })).events).toEqual(
      ["staged", "stage done"],
    );
    expect(
      (await run({ action: "skip", selected: all, phases: ["stage", "etcd-snapshot"] })).events,
    ).toEqual(["snapshot", "staged", "stage done", "etcd-snapshot done"]);
  });
});

describe("HostUpgradeWork.etcdSnapshot", () => {
  it("takes the snapshot once: a second call, timed or not, gets the first call's taking", () => {
    // The taking waits for a plan that never comes: only who started it matters here.
    const work = new HostUpgradeWork({
      settled: () => new Promise(() => {}),
    } as unknown as ConstructorParameters<typeof HostUpgradeWork>[0]);
    let timed = 0;
    const first = work.etcdSnapshot((take) => {
      timed++;
      return take();
    });
    const second = work.etcdSnapshot((take) => {
      timed++;
      return take();
    });
    expect(second).toBe(first);
    expect(work.etcdSnapshot()).toBe(first);
    expect(timed).toBe(1);
  });
});

describe("HostUpgradeWork.proxyOut", () => {
  it("waits for a preflight run ahead before it takes the server out of the proxies", async () => {
    const work = new HostUpgradeWork({
      dryRun: false,
      settled: () => Promise.resolve({ reading: { nodeLocalProxy: false } }),
    } as unknown as ConstructorParameters<typeof HostUpgradeWork>[0]);
    // A preflight started ahead on cp-1 whose reads are still in flight.
    let finish: () => void = () => {};
    const reads = new Promise<void>((resolve) => (finish = resolve));
    const { preflights } = work as unknown as { preflights: PreflightsAhead<undefined> };
    const quiet = {
      info() {},
      warn() {},
      mask() {},
      group: <T>(_: string, f: () => Promise<T>) => f(),
    };
    preflights.start("cp-1", quiet, async () => {
      await reads;
      return { timings: [], rest: undefined };
    });
    let out = false;
    const taking = work.proxyOut("cp-1").then(() => (out = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(out).toBe(false);
    finish();
    await taking;
    expect(out).toBe(true);
  });
});
