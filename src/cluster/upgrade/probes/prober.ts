import { setTimeout as delay } from "node:timers/promises";
import { watchLoopPauses, type RunnerPauses } from "./loop-pauses.js";
import { endpointTimeline, type ApiTimeline, type EndpointKind, type Sample } from "./timeline.js";

// The sampler behind the API probes: one loop per endpoint, each starting a probe every
// interval (or at once when the previous probe took longer), bounded by a timeout, every sample
// timestamped and tagged with the node steps running at that moment. The loops are independent,
// so an endpoint that hangs does not thin out another's samples. A sample that timed out while
// the runner itself was held (its timer fired much too late, or its event loop paused that long
// meanwhile) is discarded and counted: the runner stalled then, not the endpoint; so is one
// whose check could not reach its target because the path to it was down (a workload reached
// through the API server's proxy while that API server restarts). Clock and checks are
// injected: unit tests drive time and failures; the real checks are api-targets.ts.

/** One endpoint and what a sample of it does; `check` resolves when the endpoint is up. */
export interface ProbeTarget {
  name: string;
  kind: EndpointKind;
  url: string;
  checks: string;
  check(signal: AbortSignal): Promise<void>;
}

export interface ProbeClock {
  now(): number;
  /** Resolves after ms, or at once when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Starts noting the runner's event loop pauses (absent: only a late timer shows a stall). */
  watchPauses?(): RunnerPauses;
}

export const realClock: ProbeClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    delay(ms, undefined, signal ? { signal } : {}).catch(() => {
      // Aborted: the prober is stopping.
    }),
  watchPauses: () => watchLoopPauses(),
};

export interface ProberOptions {
  intervalMs: number;
  /** Bound on one probe: a probe still running then is a failed sample. */
  timeoutMs: number;
  /** The node steps running now ("cp-1 upgrade-apply"): ReportRecorder.running. */
  during: () => readonly string[];
  clock?: ProbeClock;
}

/**
 * How long the runner may have been held during a sample that timed out — its timeout firing
 * that late, or its event loop pausing that long meanwhile — before the sample is discarded: the
 * runner itself stalled (its event loop blocked, the machine overloaded), so the missing answer
 * says nothing about the endpoint.
 */
export const STALL_MS = 1000;

/** A sample that timed out while the runner was held STALL_MS or more. */
class RunnerStalled extends Error {}

/**
 * Thrown by a check that could not reach its target because something on the way was down — the
 * API server that proxies a request to a workload — so the sample says nothing about the target:
 * it is discarded and counted (unmeasuredSamples), not failed.
 */
export class PathUnavailable extends Error {}

/** Why a sample was discarded. */
type Discarded = "stalled" | "unmeasured";

const firstLine = (e: unknown) =>
  (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 300);

export class ApiProber {
  private readonly clock: ProbeClock;
  private readonly stopping = new AbortController();
  private readonly samples = new Map<ProbeTarget, Sample[]>();
  private readonly discarded = new Map<ProbeTarget, Record<Discarded, number>>();
  private loops: Promise<void>[] = [];
  private pauses?: RunnerPauses;

  constructor(
    private readonly targets: readonly ProbeTarget[],
    private readonly opts: ProberOptions,
  ) {
    this.clock = opts.clock ?? realClock;
  }

  /** Starts sampling every target; stop() ends it. */
  start(): void {
    this.pauses = this.clock.watchPauses?.();
    this.loops = this.targets.map((t) => this.loop(t));
  }

  /**
   * One sample: the check, failed when it throws or outlasts the timeout; discarded when the
   * timeout fired so late that the runner, not the endpoint, was not answering, or when the check
   * could not reach the endpoint (PathUnavailable).
   */
  private async sample(t: ProbeTarget): Promise<Sample | Discarded> {
    const at = this.clock.now();
    const during = [...this.opts.during()];
    const attempt = new AbortController();
    // Ended by its own end or by stop(): neither the check nor its timer outlives the sample.
    const signal = AbortSignal.any([attempt.signal, this.stopping.signal]);
    let timer: Promise<never> | undefined;
    try {
      timer = this.clock.sleep(this.opts.timeoutMs, signal).then(() => {
        // Woken by the sample's own end (or stop()): the race is over, nothing to judge.
        if (signal.aborted) throw new Error("the sample ended");
        const now = this.clock.now();
        const late = now - at - this.opts.timeoutMs;
        const held = this.pauses?.longestWithin(at, now) ?? 0;
        if (Math.max(late, held) >= STALL_MS) throw new RunnerStalled();
        throw new Error(`no answer within ${this.opts.timeoutMs} ms`);
      });
      await Promise.race([t.check(signal), timer]);
      return { at, ok: true, during };
    } catch (e) {
      if (e instanceof RunnerStalled) return "stalled";
      if (e instanceof PathUnavailable) return "unmeasured";
      return { at, ok: false, error: firstLine(e), during };
    } finally {
      attempt.abort();
      timer?.catch(() => {});
    }
  }

  private async loop(t: ProbeTarget): Promise<void> {
    const samples: Sample[] = [];
    this.samples.set(t, samples);
    const discarded = { stalled: 0, unmeasured: 0 };
    this.discarded.set(t, discarded);
    const { signal } = this.stopping;
    while (!signal.aborted) {
      const started = this.clock.now();
      const s = await this.sample(t);
      // A sample stop() interrupted says nothing about the endpoint.
      if (signal.aborted) break;
      if (typeof s === "string") discarded[s]++;
      else samples.push(s);
      const wait = started + this.opts.intervalMs - this.clock.now();
      if (wait > 0) await this.clock.sleep(wait, signal);
    }
  }

  /** Ends sampling; the timeline of every endpoint up to now. */
  async stop(): Promise<ApiTimeline> {
    const end = this.clock.now();
    this.stopping.abort();
    await Promise.all(this.loops);
    this.pauses?.stop();
    return {
      intervalMs: this.opts.intervalMs,
      endpoints: this.targets.map((t) =>
        endpointTimeline(
          {
            ...t,
            samples: this.samples.get(t) ?? [],
            stalled: this.discarded.get(t)?.stalled ?? 0,
            unmeasured: this.discarded.get(t)?.unmeasured ?? 0,
          },
          end,
        ),
      ),
    };
  }
}
