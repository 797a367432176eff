import { describe, expect, it } from "vitest";
import { type Clock, heartbeat, withHeartbeat } from "../../../src/workflow/heartbeat.js";

// The heartbeat of long waits, on a clock the test moves by hand.

function manualClock() {
  let now = 1_000_000;
  const timers = new Set<{ every: number; next: number; tick: () => void }>();
  const clock: Clock = {
    now: () => now,
    every(ms, tick) {
      const t = { every: ms, next: now + ms, tick };
      timers.add(t);
      return () => timers.delete(t);
    },
  };
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      const due = [...timers].filter((t) => t.next <= until).sort((a, b) => a.next - b.next)[0];
      if (!due) break;
      now = due.next;
      due.next += due.every;
      due.tick();
    }
    now = until;
  };
  return { clock, advance, running: () => timers.size };
}

describe("heartbeat", () => {
  it("says every interval what is still pending, and nothing once nothing is", () => {
    const { clock, advance, running } = manualClock();
    const lines: string[] = [];
    let pending = ["node w-1: not registered", "deployment kube-system/coredns: not found"];
    const stop = heartbeat({
      label: "[wait] Still waiting",
      pending: () => pending,
      log: (l) => lines.push(l),
      clock,
    });
    advance(19_999);
    expect(lines).toEqual([]);
    advance(1);
    advance(20_000);
    pending = [];
    advance(20_000);
    pending = ["deployment kube-system/coredns: Available=False"];
    advance(20_000);
    expect(lines).toEqual([
      "[wait] Still waiting after 20s: node w-1: not registered, deployment kube-system/coredns: not found",
      "[wait] Still waiting after 40s: node w-1: not registered, deployment kube-system/coredns: not found",
      "[wait] Still waiting after 1m20s: deployment kube-system/coredns: Available=False",
    ]);
    stop();
    expect(running()).toBe(0);
    advance(60_000);
    expect(lines).toHaveLength(3);
  });

  it("names five items and counts the rest; the interval is the caller's", () => {
    const { clock, advance } = manualClock();
    const lines: string[] = [];
    const stop = heartbeat({
      label: "still pulling",
      pending: () => ["a", "b", "c", "d", "e", "f", "g"],
      log: (l) => lines.push(l),
      everyMs: 15_000,
      clock,
    });
    advance(15_000);
    stop();
    expect(lines).toEqual(["still pulling after 15s: a, b, c, d, e and 2 more"]);
  });

  it("withHeartbeat stops it however the work ends", async () => {
    const { clock, running } = manualClock();
    const opts = { label: "x", pending: () => ["y"], log: () => undefined, clock };
    await expect(withHeartbeat(opts, () => Promise.reject(new Error("boom")))).rejects.toThrow(
      "boom",
    );
    expect(running()).toBe(0);
    expect(await withHeartbeat(opts, () => Promise.resolve(7))).toBe(7);
    expect(running()).toBe(0);
  });
});
