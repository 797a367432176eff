import type * as timers from "node:timers/promises";
import { describe, expect, it, vi } from "vitest";
import { attemptsUntilTimeout } from "../../support/poll-attempts.js";

// A timer counts from the event loop's cached time, which may already lag Date.now() by a
// millisecond, so it can fire a millisecond early by the wall clock. Here every delay fires one
// millisecond early: apimachinery's loop (wait/loop.go: "we don't invoke condition more than
// timeout / interval times", plus the immediate one) still makes no more attempts than its
// ticks allow.
vi.mock("node:timers/promises", async (importOriginal) => {
  const real = await importOriginal<typeof timers>();
  return {
    ...real,
    setTimeout: (ms: number, value?: unknown, opts?: { signal?: AbortSignal }) =>
      real.setTimeout(Math.max(0, ms - 1), value, opts),
  };
});

describe("poll with timers that fire a millisecond early", () => {
  it("attempts on the ticks at 0, 40 and 80 ms of a 120 ms poll, not a fourth", async () => {
    expect(await attemptsUntilTimeout(40, 120)).toBeLessThanOrEqual(3);
  });

  it("attempts on the ticks at 0, 50, 100 and 150 ms of a 200 ms poll, not a fifth", async () => {
    expect(await attemptsUntilTimeout(50, 200)).toBeLessThanOrEqual(4);
  });
});
