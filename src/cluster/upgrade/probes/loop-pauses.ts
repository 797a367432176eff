// The runner's own stalls, seen from inside: a timer every 100 ms notes each pause of this
// process's event loop (a blocked loop, or a machine too loaded to give it a core). A probe
// sample that got no answer while the runner was held says nothing about the endpoint: the
// answer may have waited, unread, for the loop.

/** Pauses noted while the watch runs. */
export interface RunnerPauses {
  /** The longest pause overlapping [from, to] (epoch ms), the one in progress included. */
  longestWithin(from: number, to: number): number;
  stop(): void;
}

const EVERY_MS = 100;
/** Pauses older than this are forgotten: no sample lasts that long. */
const KEEP_MS = 10 * 60_000;

interface Pause {
  from: number;
  to: number;
  ms: number;
}

export function watchLoopPauses(now: () => number = Date.now): RunnerPauses {
  const pauses: Pause[] = [];
  let last = now();
  const timer = setInterval(() => {
    const t = now();
    const held = t - last - EVERY_MS;
    if (held >= EVERY_MS) pauses.push({ from: last, to: t, ms: held });
    while (pauses.length > 0 && pauses[0]!.to < t - KEEP_MS) pauses.shift();
    last = t;
  }, EVERY_MS);
  timer.unref();
  return {
    longestWithin(from, to) {
      let longest = 0;
      for (const p of pauses) if (p.to >= from && p.from <= to) longest = Math.max(longest, p.ms);
      // A pause the timer has not run since (the caller runs right after it ended).
      const current = now() - last - EVERY_MS;
      return last <= to ? Math.max(longest, current) : longest;
    },
    stop: () => clearInterval(timer),
  };
}
