// The runner's pause watch (probes/loop-pauses.ts) on a real event loop: a blocked loop is seen
// as a pause of about its length, in the window around it and not outside it.
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { holdEventLoop } from "../../../support/hold-event-loop.js";
import { watchLoopPauses } from "../../../../src/cluster/upgrade/probes/loop-pauses.js";

describe("watchLoopPauses", () => {
  it("sees a held event loop as a pause of about its length, within the window around it", async () => {
    const pauses = watchLoopPauses();
    try {
      await delay(250);
      const before = Date.now();
      holdEventLoop(1200);
      const after = Date.now();
      // Asked right after, before the watch's timer ran again: the pause in progress counts.
      expect(pauses.longestWithin(before, after)).toBeGreaterThanOrEqual(1000);
      await delay(250);
      expect(pauses.longestWithin(before, after)).toBeGreaterThanOrEqual(1000);
      expect(pauses.longestWithin(before, after)).toBeLessThan(1200 + 2000);
      // A window that ended before the pause began does not see it.
      expect(pauses.longestWithin(before - 60_000, before - 30_000)).toBeLessThan(1000);
    } finally {
      pauses.stop();
    }
  });
});
