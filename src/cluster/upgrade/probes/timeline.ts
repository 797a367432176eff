// What the API probes measured, as the report shows it (kubeadm-upgrade.md §5.5, §5.6): per
// endpoint the samples, the failures and the outages — a run of consecutive failed samples, from
// the first failed sample's start to the start of the next sample that succeeded (or the end of
// probing) — each attributed to the node steps that were running while it lasted. Pure: samples
// in, figures out; the thresholds (--max-api-downtime) are checked here too.

/** One probe of one endpoint. */
export interface Sample {
  /** When the probe started, in milliseconds since the epoch. */
  at: number;
  ok: boolean;
  /** Why it failed: the first line of the error. */
  error?: string;
  /** The node steps running when it started ("cp-1 upgrade-apply"). */
  during: readonly string[];
}

export interface Outage {
  start: string;
  seconds: number;
  /** Failed samples in it. */
  samples: number;
  /** The node steps running while it lasted; empty: between steps. */
  during: string[];
  /** What the first failed sample of it said. */
  error: string;
}

/**
 * How an endpoint is reached: a control plane's own address, admin.conf's server, or a workload
 * (the canary, a user's) probed from the runner.
 */
export type EndpointKind = "control-plane" | "stable" | "workload" | "dns";

export interface EndpointTimeline {
  /** The control plane's name, or "stable" for admin.conf's server. */
  name: string;
  kind: EndpointKind;
  url: string;
  /** What one sample does, for readers. */
  checks: string;
  samples: number;
  failures: number;
  /**
   * Samples discarded because their timeout fired a second or more late: the runner stalled
   * (overloaded), so they say nothing about the endpoint. Absent when none.
   */
  stalledSamples?: number;
  /**
   * Samples discarded because the path to the endpoint was down — the API server proxying a
   * workload's request was restarting, or its etcd was — so they say nothing about the
   * endpoint (that outage is the API timeline's). Absent when none.
   */
  unmeasuredSamples?: number;
  longestOutageSeconds: number;
  totalOutageSeconds: number;
  outages: Outage[];
}

export interface ApiTimeline {
  intervalMs: number;
  endpoints: EndpointTimeline[];
}

export interface EndpointSamples {
  name: string;
  kind: EndpointKind;
  url: string;
  checks: string;
  samples: readonly Sample[];
  /** Samples the prober discarded because the runner stalled. */
  stalled?: number;
  /** Samples the prober discarded because the path to the endpoint was down. */
  unmeasured?: number;
}

const round = (s: number) => Math.round(s * 1000) / 1000;

/** Outages of one endpoint; `end` closes an outage no successful sample ended. */
export function outagesOf(samples: readonly Sample[], end: number): Outage[] {
  const outages: Outage[] = [];
  let run: Sample[] = [];
  const close = (until: number) => {
    if (run.length === 0) return;
    const during = [...new Set(run.flatMap((s) => s.during))];
    outages.push({
      start: new Date(run[0]!.at).toISOString(),
      seconds: round((until - run[0]!.at) / 1000),
      samples: run.length,
      during,
      error: run[0]!.error ?? "failed",
    });
    run = [];
  };
  for (const s of samples) {
    if (s.ok) close(s.at);
    else run.push(s);
  }
  close(Math.max(end, run[run.length - 1]?.at ?? end));
  return outages;
}

export function endpointTimeline(e: EndpointSamples, end: number): EndpointTimeline {
  const outages = outagesOf(e.samples, end);
  return {
    name: e.name,
    kind: e.kind,
    url: e.url,
    checks: e.checks,
    samples: e.samples.length,
    failures: e.samples.filter((s) => !s.ok).length,
    ...(e.stalled ? { stalledSamples: e.stalled } : {}),
    ...(e.unmeasured ? { unmeasuredSamples: e.unmeasured } : {}),
    longestOutageSeconds: Math.max(0, ...outages.map((o) => o.seconds)),
    totalOutageSeconds: round(outages.reduce((sum, o) => sum + o.seconds, 0)),
    outages,
  };
}

/** "cp-1's endpoint", "the stable endpoint", "the workload kubeforge-canary" or "DNS". */
export function endpointLabel(e: Pick<EndpointTimeline, "name" | "kind">): string {
  if (e.kind === "workload") return `the workload ${e.name}`;
  if (e.kind === "dns") return "DNS in the cluster";
  return e.kind === "stable" ? "the stable endpoint" : `${e.name}'s endpoint`;
}

/** "24.5 s on cp-1's endpoint during cp-1 upgrade-apply". */
export function describeOutage(e: Pick<EndpointTimeline, "name" | "kind">, o: Outage): string {
  const during = o.during.length > 0 ? `during ${o.during.join(", ")}` : "between steps";
  return `${o.seconds} s on ${endpointLabel(e)} ${during}`;
}

/** When a workload's available replicas changed (the first entry: when probing started). */
export interface AvailabilityChange {
  at: string;
  available: number;
  desired: number;
}

/** A workload's figures: its endpoint timeline, the share of failed requests, its replicas. */
export interface WorkloadTimeline extends EndpointTimeline {
  /** failures / samples, 0 without samples (four decimals). */
  errorRate: number;
  /** Available replicas over time, as changes (workloads kubeforge reads a Deployment of). */
  availability?: AvailabilityChange[];
}

export interface WorkloadsTimeline {
  intervalMs: number;
  workloads: WorkloadTimeline[];
}

export function errorRate(samples: number, failures: number): number {
  return samples === 0 ? 0 : Math.round((failures / samples) * 10_000) / 10_000;
}

export function workloadTimeline(
  e: EndpointTimeline,
  availability?: readonly AvailabilityChange[],
): WorkloadTimeline {
  return {
    ...e,
    errorRate: errorRate(e.samples, e.failures),
    ...(availability ? { availability: [...availability] } : {}),
  };
}

/** The opt-in thresholds; none given: report only. */
export interface Thresholds {
  /** --max-api-downtime: the longest outage allowed through the stable endpoint. */
  maxApiDowntime?: { text: string; ms: number };
  /** --max-workload-error-rate: the share of failed requests allowed per workload (0–1). */
  maxWorkloadErrorRate?: { text: string; rate: number };
  /** --max-workload-downtime: the longest outage allowed per workload. */
  maxWorkloadDowntime?: { text: string; ms: number };
}

export interface Violation {
  /** The flag's name without dashes: "max-api-downtime". */
  threshold: string;
  limit: string;
  measured: string;
  message: string;
}

export interface ThresholdOutcome {
  threshold: string;
  limit: string;
  violation?: Violation;
}

/** The stable endpoint's timeline; a run without it has measured nothing through admin.conf. */
export function stableTimeline(api: ApiTimeline | undefined): EndpointTimeline | undefined {
  return api?.endpoints.find((e) => e.kind === "stable");
}

const longestOf = (outages: readonly Outage[]) =>
  outages.reduce<Outage | undefined>(
    (a, o) => (a === undefined || o.seconds > a.seconds ? o : a),
    undefined,
  );

function apiDowntime(limit: { text: string; ms: number }, api?: ApiTimeline): ThresholdOutcome {
  const { text, ms } = limit;
  const stable = stableTimeline(api);
  const longest = longestOf(stable?.outages ?? []);
  const base = { threshold: "max-api-downtime", limit: text };
  if (!stable) {
    const message = `max-api-downtime ${text}: nothing was measured through the stable endpoint`;
    return { ...base, violation: { ...base, measured: "nothing", message } };
  }
  if (longest && longest.seconds * 1000 > ms) {
    const message = `max-api-downtime ${text}: the longest outage was ${describeOutage(stable, longest)}`;
    return { ...base, violation: { ...base, measured: `${longest.seconds}s`, message } };
  }
  return base;
}

/**
 * A per-workload threshold: every workload holds it, or the violation names each that did not
 * ("measured" is the worst figure).
 */
function perWorkload(
  threshold: string,
  limit: string,
  workloads: WorkloadsTimeline | undefined,
  exceeded: (w: WorkloadTimeline) => { figure: number; text: string; says: string } | undefined,
): ThresholdOutcome {
  const base = { threshold, limit };
  if (!workloads || workloads.workloads.length === 0) {
    const message = `${threshold} ${limit}: no workload was probed`;
    return { ...base, violation: { ...base, measured: "nothing", message } };
  }
  const over = workloads.workloads.flatMap((w) => {
    const x = exceeded(w);
    return x ? [x] : [];
  });
  if (over.length === 0) return base;
  const worst = over.reduce((a, b) => (b.figure > a.figure ? b : a));
  const message = `${threshold} ${limit}: ${over.map((x) => x.says).join("; ")}`;
  return { ...base, violation: { ...base, measured: worst.text, message } };
}

/** Every threshold given, checked against what was measured. */
export function checkThresholds(
  thresholds: Thresholds,
  api: ApiTimeline | undefined,
  workloads?: WorkloadsTimeline,
): ThresholdOutcome[] {
  const results: ThresholdOutcome[] = [];
  if (thresholds.maxApiDowntime) results.push(apiDowntime(thresholds.maxApiDowntime, api));
  const rate = thresholds.maxWorkloadErrorRate;
  if (rate) {
    results.push(
      perWorkload("max-workload-error-rate", rate.text, workloads, (w) =>
        w.errorRate > rate.rate
          ? {
              figure: w.errorRate,
              text: String(w.errorRate),
              says: `${endpointLabel(w)} failed ${w.failures} of ${w.samples} requests (error rate ${w.errorRate})`,
            }
          : undefined,
      ),
    );
  }
  const down = thresholds.maxWorkloadDowntime;
  if (down) {
    results.push(
      perWorkload("max-workload-downtime", down.text, workloads, (w) => {
        const longest = longestOf(w.outages);
        return longest && longest.seconds * 1000 > down.ms
          ? {
              figure: longest.seconds,
              text: `${longest.seconds}s`,
              says: `the longest outage was ${describeOutage(w, longest)}`,
            }
          : undefined;
      }),
    );
  }
  return results;
}
