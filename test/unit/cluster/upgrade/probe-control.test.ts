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

function setup(startGate: Promise<void>, watchGate: Promise<void> = Promise.resolve()) {
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
    async () => {
      events.push("watch");
      await watchGate;
      events.push("watching");
      return watcher;
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
    expect(events).toEqual(["watch", "start", "watching", "started"]);
  });

  it("starts the workloads' watch beside the probes, and is started once both are", async () => {
    const probesGate = deferred();
    const watchGate = deferred();
    const { events, control } = setup(probesGate.promise, watchGate.promise);
    let done = false;
    const started = control.start().then(() => (done = true));
    probesGate.resolve();
    await new Promise((r) => setTimeout(r, 5));
    // The probes' start did not wait for the watch, and the whole start waits for it.
    expect(events).toEqual(["watch", "start", "started"]);
    expect(done).toBe(false);
    watchGate.resolve();
    await started;
    expect(events).toEqual(["watch", "start", "started", "watching"]);
  });

  it("stops only after a start under way ended, so what it made is stopped too", async () => {
    const gate = deferred();
    const { events, control, report } = setup(gate.promise);
    void control.start();
    const stopped = control.stop();
    await new Promise((r) => setTimeout(r, 5));
    expect(events).toEqual(["watch", "start", "watching"]);
    gate.resolve();
    await stopped;
    expect(events).toEqual(["watch", "start", "watching", "started", "watch stopped", "stop"]);
    expect(report.disruptions).toEqual({ workloads: [] });
  });

  it("still stops after a start that failed (it may have made objects before failing), and the watch begun beside it", async () => {
    const gate = deferred();
    const { events, control } = setup(gate.promise);
    const started = control.start();
    started.catch(() => {});
    gate.reject(new Error("the API server is gone"));
    await expect(started).rejects.toThrow("the API server is gone");
    await control.stop();
    expect(events).toEqual(["watch", "start", "watching", "watch stopped", "stop"]);
  });

  it("stops nothing it never started", async () => {
    const { events, control } = setup(Promise.resolve());
    await control.stop();
    expect(events).toEqual(["stop"]);
  });
});
