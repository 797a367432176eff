// The simulated API server logs a pause of its event loop (stall-log.ts), which tests read to
// tell a held simulation from an endpoint that went away.
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { holdEventLoop } from "../../support/hold-event-loop.js";
import { logStalls } from "../../support/sim/apiserver/stall-log.js";

describe("logStalls", () => {
  it("logs a pause of the event loop of 500 ms or more, with its length, once it ended", async () => {
    const lines: string[] = [];
    const stop = logStalls((l) => lines.push(l));
    try {
      await delay(150);
      holdEventLoop(800);
      await delay(250);
    } finally {
      stop();
    }
    const held = lines.map((l) => /^the event loop held the API server for (\d+) ms$/.exec(l));
    expect(held.length, lines.join("\n")).toBeGreaterThan(0);
    expect(held.every(Boolean), lines.join("\n")).toBe(true);
    expect(Math.max(...held.map((m) => Number(m![1])))).toBeGreaterThanOrEqual(600);
  });

  it("logs nothing once stopped", async () => {
    const lines: string[] = [];
    logStalls((l) => lines.push(l))();
    holdEventLoop(700);
    await delay(250);
    expect(lines).toEqual([]);
  });
});
