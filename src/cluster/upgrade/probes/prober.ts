import { setTimeout as delay } from "node:timers/promises";
import { endpointTimeline, type ApiTimeline, type EndpointKind, type Sample } from "./timeline.js";

// The sampler behind the API probes: one loop per endpoint, each starting a probe every
// interval (or at once when the previous probe took longer), bounded by a timeout, every sample
// timestamped and tagged with the node steps running at that moment. The loops are independent,
// so an endpoint that hangs does not thin out another's samples. A sample whose timeout fired
// much too late is discarded and counted: the runner stalled then, not the endpoint. Clock and checks are injected:
// unit tests drive time and failures; the real checks are api-targets.ts.

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
}

export const realClock: ProbeClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    delay(ms, undefined, signal ? { signal } : {}).catch(() => {
      // Aborted: the prober is stopping.
    }),
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
 * How late a sample's timeout may fire before the sample is discarded: a timer that late means
 * the runner itself stalled (its event loop blocked, the machine overloaded), so the missing
 * answer says nothing about the endpoint.
 */
export const STALL_MS = 1000;

/** A sample whose timeout fired STALL_MS or more late. */
class RunnerStalled extends Error {}

const firstLine = (e: unknown) =>
  (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 300);

export class ApiProber {
  private readonly clock: ProbeClock;
  private readonly stopping = new AbortController();
  private readonly samples = new Map<ProbeTarget, Sample[]>();
  private readonly stalled = new Map<ProbeTarget, number>();
  private loops: Promise<void>[] = [];

  constructor(
    private readonly targets: readonly ProbeTarget[],
    private readonly opts: ProberOptions,
  ) {
    this.clock = opts.clock ?? realClock;
  }

  /** Starts sampling every target; stop() ends it. */
  start(): void {
    this.loops = this.targets.map((t) => this.loop(t));
  }

  /**
   * One sample: the check, failed when it throws or outlasts the timeout; undefined when the
   * timeout fired so late that the runner, not the endpoint, was not answering.
   */
  private async sample(t: ProbeTarget): Promise<Sample | undefined> {
    const at = this.clock.now();
    const during = [...this.opts.during()];
    const attempt = new AbortController();
    // Ended by its own end or by stop(): neither the check nor its timer outlives the sample.
    const signal = AbortSignal.any([attempt.signal, this.stopping.signal]);
    let timer: Promise<never> | undefined;
    try {
      timer = this.clock.sleep(this.opts.timeoutMs, signal).then(() => {
        if (this.clock.now() - at - this.opts.timeoutMs >= STALL_MS) throw new RunnerStalled();
        throw new Error(`no answer within ${this.opts.timeoutMs} ms`);
      });
      await Promise.race([t.check(signal), timer]);
      return { at, ok: true, during };
    } catch (e) {
      if (e instanceof RunnerStalled) return undefined;
      return { at, ok: false, error: firstLine(e), during };
    } finally {
      attempt.abort();
      timer?.catch(() => {});
    }
  }

  private async loop(t: ProbeTarget): Promise<void> {
    const samples: Sample[] = [];
    this.samples.set(t, samples);
    const { signal } = this.stopping;
    while (!signal.aborted) {
      const started = this.clock.now();
      const s = await this.sample(t);
      // A sample stop() interrupted says nothing about the endpoint.
      if (signal.aborted) break;
      if (s) samples.push(s);
      else this.stalled.set(t, (this.stalled.get(t) ?? 0) + 1);
      const wait = started + this.opts.intervalMs - this.clock.now();
      if (wait > 0) await this.clock.sleep(wait, signal);
    }
  }

  /** Ends sampling; the timeline of every endpoint up to now. */
  async stop(): Promise<ApiTimeline> {
    const end = this.clock.now();
    this.stopping.abort();
    await Promise.all(this.loops);
    return {
      intervalMs: this.opts.intervalMs,
      endpoints: this.targets.map((t) =>
        endpointTimeline(
          { ...t, samples: this.samples.get(t) ?? [], stalled: this.stalled.get(t) ?? 0 },
          end,
        ),
      ),
    };
  }
}
