import { expect } from "vitest";
import { poll, PollTimeoutError } from "../../src/kube/poll.js";

/** How many attempts a poll makes whose attempts never succeed, until it times out. */
export async function attemptsUntilTimeout(intervalMs: number, timeoutMs: number): Promise<number> {
  let n = 0;
  const error = await poll(
    () => {
      n++;
      return Promise.resolve(undefined);
    },
    { intervalMs, timeoutMs, what: "x" },
  ).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(PollTimeoutError);
  return n;
}
