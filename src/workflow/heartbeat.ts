import { formatGoDuration } from "../config/duration.js";

// A line every so often while a long wait goes on, saying what is still pending, so that a
// log that would otherwise stay silent for minutes (the control plane coming up, nodes turning
// Ready, image pulls) does not look hung. The clock is a parameter: tests drive it by hand.

/** Between two heartbeat lines: within the 15–30 s a reader tolerates before wondering. */
export const HEARTBEAT_MS = 20_000;

/** Items named in one line; the rest are counted. */
const LISTED = 5;

export interface Clock {
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called. */
  every(ms: number, tick: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    // A heartbeat never keeps the process alive on its own.
    timer.unref();
    return () => clearInterval(timer);
  },
};

export interface HeartbeatOptions {
  /** The line's start: "[wait] Still waiting". */
  label: string;
  /** What is still pending now; nothing pending prints nothing. */
  pending: () => readonly string[];
  log: (line: string) => void;
  everyMs?: number;
  clock?: Clock;
}

/** "a, b, c, d, e and 3 more". */
function listed(items: readonly string[]): string {
  if (items.length <= LISTED) return items.join(", ");
  return `${items.slice(0, LISTED).join(", ")} and ${items.length - LISTED} more`;
}

/** Starts the heartbeat; the function returned stops it (call it in a finally). */
export function heartbeat(opts: HeartbeatOptions): () => void {
  const clock = opts.clock ?? systemClock;
  const start = clock.now();
  return clock.every(opts.everyMs ?? HEARTBEAT_MS, () => {
    const pending = opts.pending();
    if (pending.length === 0) return;
    // Whole seconds: "40s", "1m20s".
    const elapsed = formatGoDuration(Math.round((clock.now() - start) / 1000) * 1000);
    opts.log(`${opts.label} after ${elapsed}: ${listed(pending)}`);
  });
}

/** Runs `fn` with a heartbeat around it, stopped however `fn` ends. */
export async function withHeartbeat<T>(opts: HeartbeatOptions, fn: () => Promise<T>): Promise<T> {
  const stop = heartbeat(opts);
  try {
    return await fn();
  } finally {
    stop();
  }
}
