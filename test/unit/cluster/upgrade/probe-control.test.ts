import { describe, expect, it } from "vitest";
import type { DisruptionWatcher } from "../../../../src/cluster/upgrade/disruptions.js";
import { probeControl } from "../../../../src/cluster/upgrade/index.js";

// The probes start beside the staging: a run that fails meanwhile stops them while their start
// may still be under way, and nothing it makes may outlive the run.

function deferred() {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function setup(startGate: Promise<void>) {
  const events: string[] = [];
  const watcher = {
    stop: () => {
      events.push("watch stopped");
      return { workloads: [] };
    },
  } as unknown as DisruptionWatcher;
  const report: { disruptions?: unknown } = {};
  const control = probeControl(
    {
      start: async () => {
        events.push("start");
        await startGate;
        events.push("started");
      },
      stop: () => {
        events.push("stop");
        return Promise.resolve({});
      },
      settle: () => Promise.resolve(),
    },
    () => {
      events.push("watch");
      return Promise.resolve(watcher);
    },
    report as Parameters<typeof probeControl>[2],
  );
  return { events, control, report };
}

describe("probeControl", () => {
  it("starts the probes once, whoever asks, and each asker waits for that start", async () => {
    const gate = deferred();
    const { events, control } = setup(gate.promise);
    const first = control.start();
    const second = control.start();
    gate.resolve();
    await Promise.all([first, second]);
    expect(events).toEqual(["start", "started", "watch"]);
  });

  it("stops only after a start under way ended, so what it made is stopped too", async () => {
    const gate = deferred();
    const { events, control, report } = setup(gate.promise);
    void control.start();
    const stopped = control.stop();
    await new Promise((r) => setTimeout(r, 5));
    expect(events).toEqual(["start"]);
    gate.resolve();
    await stopped;
    expect(events).toEqual(["start", "started", "watch", "watch stopped", "stop"]);
    expect(report.disruptions).toEqual({ workloads: [] });
  });

  it("still stops after a start that failed (it may have made objects before failing)", async () => {
    const gate = deferred();
    const { events, control } = setup(gate.promise);
    const started = control.start();
    started.catch(() => {});
    gate.reject(new Error("the API server is gone"));
    await expect(started).rejects.toThrow("the API server is gone");
    await control.stop();
    expect(events).toEqual(["start", "stop"]);
  });

  it("stops nothing it never started", async () => {
    const { events, control } = setup(Promise.resolve());
    await control.stop();
    expect(events).toEqual(["stop"]);
  });
});
