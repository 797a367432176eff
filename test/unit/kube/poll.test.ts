import { describe, expect, it } from "vitest";
import { poll, PollTimeoutError } from "../../../src/kube/poll.js";
import { attemptsUntilTimeout } from "../../support/poll-attempts.js";

describe("poll", () => {
  it("retries until an attempt returns a value, at the interval", async () => {
    const times: number[] = [];
    const value = await poll(
      () => {
        times.push(Date.now());
        if (times.length < 3) return Promise.reject(new Error("not yet"));
        return Promise.resolve("ready");
      },
      { intervalMs: 20, timeoutMs: 2000, what: "the thing" },
    );
    expect(value).toBe("ready");
    expect(times).toHaveLength(3);
    expect(times[2]! - times[0]!).toBeGreaterThanOrEqual(38);
  });

  it("treats undefined as not done yet, without an error", async () => {
    let n = 0;
    expect(
      await poll(() => Promise.resolve(++n === 2 ? n : undefined), {
        intervalMs: 5,
        timeoutMs: 1000,
        what: "x",
      }),
    ).toBe(2);
  });

  it("times out saying what it waited for, for how long, and the last error (kept as cause)", async () => {
    let n = 0;
    const start = Date.now();
    const error = await poll(() => Promise.reject(new Error(`attempt ${++n} failed`)), {
      intervalMs: 20,
      timeoutMs: 100,
      what: "the Node cp-1 to exist",
    }).catch((e: unknown) => e);
    expect(Date.now() - start).toBeGreaterThanOrEqual(95);
    expect(error).toBeInstanceOf(PollTimeoutError);
    expect((error as Error).message).toBe(
      `timed out after 100ms waiting for the Node cp-1 to exist: attempt ${n} failed`,
    );
    expect(((error as Error).cause as Error).message).toBe(`attempt ${n} failed`);
    // Tried again until the timeout (how often depends on the machine's load: at least twice).
    expect(n).toBeGreaterThanOrEqual(2);
  });

  it("makes no attempt at the deadline itself, as Go's loop (its context is checked first)", async () => {
    // apimachinery wait/loop.go: the deadline's context is made before the ticker, and each
    // round checks ctx.Err() before the condition, so a tick at the deadline ends the poll.
    expect(await attemptsUntilTimeout(200, 200)).toBe(1);
    // Ticks at 0, 40 and 80 ms; the one at 120 falls on the deadline. A loaded machine may
    // start them late, never add one.
    const n = await attemptsUntilTimeout(40, 120);
    expect(n).toBeGreaterThanOrEqual(1);
    expect(n).toBeLessThanOrEqual(3);
  });

  it("formats the timeout as a Go duration", async () => {
    const error = (await poll(() => Promise.resolve(undefined), {
      intervalMs: 1000,
      timeoutMs: 1,
      what: "x",
    }).catch((e: unknown) => e)) as PollTimeoutError;
    expect(error.message).toBe("timed out after 1ms waiting for x");
    expect(new PollTimeoutError("the API", 240_000, undefined).message).toBe(
      "timed out after 4m0s waiting for the API",
    );
  });

  it("rethrows at once what retryIf refuses", async () => {
    let n = 0;
    const fatal = new Error("forbidden");
    await expect(
      poll(
        () => {
          n++;
          return Promise.reject(fatal);
        },
        { intervalMs: 5, timeoutMs: 1000, what: "x", retryIf: (e) => e !== fatal },
      ),
    ).rejects.toBe(fatal);
    expect(n).toBe(1);
  });

  it("stops when the signal aborts, saying what it waited for, the reason as the cause", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("interrupted")), 30);
    const err = (await poll(() => Promise.resolve(undefined), {
      intervalMs: 10,
      timeoutMs: 5000,
      what: "the Node cp-1 to exist",
      signal: controller.signal,
    }).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe("stopped waiting for the Node cp-1 to exist");
    expect((err.cause as Error).message).toBe("interrupted");
  });
});
