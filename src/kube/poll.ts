import { setTimeout as delay } from "node:timers/promises";
import { formatGoDuration } from "../config/duration.js";
import { cancellable } from "../remote/interruption.js";

// kubeadm's retry loop: wait.PollUntilContextTimeout(ctx, interval, timeout, immediate=true, cond)
// (k8s.io/apimachinery/pkg/util/wait). The condition runs at once, then every interval until it
// reports done or the timeout passes; an attempt in progress is never interrupted. kubeadm keeps
// the last error of the condition and returns it after the timeout; we say what was awaited,
// for how long, and keep that error as the cause.

/** kubeadm's constants.KubernetesAPICallRetryInterval. */
export const API_CALL_RETRY_INTERVAL_MS = 500;

export interface PollOptions {
  /**
   * The ticks attempts start on, counted from the poll's start; an attempt that outlasts a tick
   * is followed at once, then the ticks go on (Go's non-sliding ticker). Default 500 ms.
   */
  intervalMs?: number;
  timeoutMs: number;
  /** What is awaited, for the timeout message: "the Node cp-1 to exist". */
  what: string;
  signal?: AbortSignal;
  /**
   * Whether an error thrown by an attempt is worth another try. Default: every error is retried
   * (as kubeadm's conditions do); a false answer rethrows the error at once.
   */
  retryIf?: (error: unknown) => boolean;
}

/** The timeout of a poll; `cause` is the last attempt's error, if any. */
export class PollTimeoutError extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly lastError: unknown,
  ) {
    const last =
      lastError === undefined
        ? ""
        : `: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`;
    super(
      `timed out after ${formatGoDuration(timeoutMs)} waiting for ${what}${last}`,
      lastError === undefined ? undefined : { cause: lastError },
    );
    this.name = "PollTimeoutError";
  }
}

/** A poll given up because its signal aborted (the caller's, or the run interrupted). */
export class PollStoppedError extends Error {
  constructor(what: string, reason: unknown) {
    super(`stopped waiting for ${what}`, { cause: reason });
    this.name = "PollStoppedError";
  }
}

/**
 * Runs `attempt` until it returns a value other than undefined. An attempt that throws is
 * retried (unless `retryIf` says otherwise) and its error remembered; an attempt that returns
 * undefined is simply not done yet. Throws PollTimeoutError once `timeoutMs` has passed, and
 * PollStoppedError at once when cancelled.
 */
export async function poll<T>(
  attempt: () => Promise<T | undefined>,
  opts: PollOptions,
): Promise<T> {
  const interval = opts.intervalMs ?? API_CALL_RETRY_INTERVAL_MS;
  const start = Date.now();
  const deadline = start + opts.timeoutMs;
  // The caller's signal, and the run's interruption (Ctrl-C, a cancelled job): a wait of
  // minutes must not keep an interrupted run alive.
  const signal = cancellable(opts.signal);
  const stopped = () => new PollStoppedError(opts.what, signal.reason);
  let lastError: unknown;
  const timedOut = () => new PollTimeoutError(opts.what, opts.timeoutMs, lastError);
  // When the tick the last attempt started on was taken.
  let taken = start;
  for (;;) {
    if (signal.aborted) throw stopped();
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (e) {
      if (opts.retryIf && !opts.retryIf(e)) throw e;
      lastError = e;
    }
    const now = Date.now();
    if (now >= deadline) throw timedOut();
    // Go's ticker ticks at start + k·interval and keeps one tick while the condition runs. The
    // schedule, not the clock a timer fired by, counts the attempts: a timer may fire a
    // millisecond early by Date.now(), and that must not add one.
    const due = start + (Math.floor((taken - start) / interval) + 1) * interval;
    if (due >= deadline) {
      // Go's poll gives up when the deadline falls before the next tick, and on a tie too: its
      // loop checks the context before each attempt, and the deadline was set first.
      await delay(deadline - now, undefined, { signal }).catch(() => Promise.reject(stopped()));
      throw timedOut();
    }
    if (due > now) {
      await delay(due - now, undefined, { signal }).catch(() => Promise.reject(stopped()));
      taken = due;
    } else {
      taken = now; // the tick kept while the attempt ran
    }
  }
}
