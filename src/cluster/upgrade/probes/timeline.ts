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

/** How an endpoint is reached: a control plane's own address, or admin.conf's server. */
export type EndpointKind = "control-plane" | "stable";

export interface EndpointTimeline {
  /** The control plane's name, or "stable" for admin.conf's server. */
  name: string;
  kind: EndpointKind;
  url: string;
  /** What one sample does, for readers. */
  checks: string;
  samples: number;
  failures: number;
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
    longestOutageSeconds: Math.max(0, ...outages.map((o) => o.seconds)),
    totalOutageSeconds: round(outages.reduce((sum, o) => sum + o.seconds, 0)),
    outages,
  };
}

/** "cp-1's endpoint" or "the stable endpoint". */
export function endpointLabel(e: Pick<EndpointTimeline, "name" | "kind">): string {
  return e.kind === "stable" ? "the stable endpoint" : `${e.name}'s endpoint`;
}

/** "24.5 s on cp-1's endpoint during cp-1 upgrade-apply". */
export function describeOutage(e: Pick<EndpointTimeline, "name" | "kind">, o: Outage): string {
  const during = o.during.length > 0 ? `during ${o.during.join(", ")}` : "between steps";
  return `${o.seconds} s on ${endpointLabel(e)} ${during}`;
}

/** The opt-in thresholds; none given: report only. */
export interface Thresholds {
  /** --max-api-downtime: the longest outage allowed through the stable endpoint. */
  maxApiDowntime?: { text: string; ms: number };
}

export interface Violation {
  /** The flag's name without dashes: "max-api-downtime". */
  threshold: string;
  limit: string;
  measured: string;
  message: string;
}

/** The stable endpoint's timeline; a run without it has measured nothing through admin.conf. */
export function stableTimeline(api: ApiTimeline | undefined): EndpointTimeline | undefined {
  return api?.endpoints.find((e) => e.kind === "stable");
}

/** Every threshold given, checked against what was measured. */
export function checkThresholds(
  thresholds: Thresholds,
  api: ApiTimeline | undefined,
): { threshold: string; limit: string; violation?: Violation }[] {
  const results: { threshold: string; limit: string; violation?: Violation }[] = [];
  if (thresholds.maxApiDowntime) {
    const { text, ms } = thresholds.maxApiDowntime;
    const stable = stableTimeline(api);
    const longest = stable?.outages.reduce<Outage | undefined>(
      (a, o) => (a === undefined || o.seconds > a.seconds ? o : a),
      undefined,
    );
    const base = { threshold: "max-api-downtime", limit: text };
    if (!stable) {
      const message = `max-api-downtime ${text}: nothing was measured through the stable endpoint`;
      results.push({ ...base, violation: { ...base, measured: "nothing", message } });
    } else if (longest && longest.seconds * 1000 > ms) {
      const message = `max-api-downtime ${text}: the longest outage was ${describeOutage(stable, longest)}`;
      results.push({ ...base, violation: { ...base, measured: `${longest.seconds}s`, message } });
    } else results.push(base);
  }
  return results;
}
