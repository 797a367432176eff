import {
  thresholdOutcomes,
  type ReportNode,
  type UpgradeReport,
} from "../cluster/upgrade/report.js";
import { DNS_LOOKUP_NAME } from "../cluster/upgrade/probes/dns-target.js";
import {
  errorRate,
  type AvailabilityChange,
  type EndpointTimeline,
} from "../cluster/upgrade/probes/timeline.js";
import type { GanttSection } from "./gantt.js";

// What the action shows of an upgrade rehearsal, from its UpgradeReport: the node-timings output,
// the rows of the job summary's upgrade table and the chart's sections. Pure: report in, data
// out; summary.ts renders it.

/** One node in the node-timings output. */
export interface NodeTiming {
  name: string;
  role: ReportNode["role"];
  result: ReportNode["result"];
  /** From the start of the node's first step to the end of its last (0 when it had none). */
  seconds: number;
}

/** The node's span: its first step's start and its last step's end, in epoch milliseconds. */
function span(n: ReportNode): { start: number; end: number } | undefined {
  if (n.steps.length === 0) return undefined;
  const start = Math.min(...n.steps.map((s) => Date.parse(s.startedAt)));
  const end = Math.max(...n.steps.map((s) => Date.parse(s.startedAt) + s.seconds * 1000));
  return { start, end };
}

/** Per node, how long its upgrade took (the node-timings output), in the order of the report. */
export function nodeTimings(r: UpgradeReport): NodeTiming[] {
  return r.nodes.map((n) => {
    const s = span(n);
    return {
      name: n.name,
      role: n.role,
      result: n.result,
      seconds: s ? Math.round(s.end - s.start) / 1000 : 0,
    };
  });
}

/** "upgraded", or the failed step and why. */
function nodeResult(n: ReportNode): string {
  if (n.result !== "failed") return n.result;
  const failed = n.steps.find((s) => s.result === "failed");
  return failed ? `failed in ${failed.name}${failed.detail ? `: ${failed.detail}` : ""}` : "failed";
}

/** The drain column: what the drain step did; control planes are not drained. */
function drainResult(n: ReportNode): string {
  const drain = n.steps.find((s) => s.name === "drain");
  if (!drain) return n.role === "control-plane" ? "not drained" : "—";
  if (drain.result === "failed") return `failed: ${drain.detail ?? "no detail"}`;
  return drain.detail ?? drain.result;
}

/**
 * The upgrade table's rows: node, role, from → to, duration, drain, result. `formatMs` writes a
 * duration as the rest of the summary does.
 */
export function upgradeRows(r: UpgradeReport, formatMs: (ms: number) => string): string[][] {
  const timings = new Map(nodeTimings(r).map((t) => [t.name, t]));
  return r.nodes.map((n) => {
    const after = n.kubeletAfter ?? (n.result === "skipped" ? n.kubeletBefore : undefined);
    const seconds = timings.get(n.name)!.seconds;
    return [
      n.name,
      n.role,
      `${n.kubeletBefore ?? "?"} → ${after ?? "?"}`,
      n.steps.length > 0 ? formatMs(seconds * 1000) : "—",
      drainResult(n),
      nodeResult(n),
    ];
  });
}

/** One chart section per node that ran steps (at most `max`), its steps as tasks. */
export function upgradeSections(r: UpgradeReport, max: number): GanttSection[] {
  return r.nodes
    .filter((n) => n.steps.length > 0)
    .slice(0, max)
    .map((n) => ({
      name: `upgrade ${n.name}`,
      tasks: n.steps.map((s) => ({
        name: s.name,
        startedAt: Date.parse(s.startedAt),
        ms: s.seconds * 1000,
        failed: s.result === "failed",
      })),
    }));
}

/**
 * The API outage table's rows: endpoint, samples, failed, then one row per outage (its start,
 * seconds, the steps it fell in, what the first failed probe said); an endpoint without outage
 * gets one row saying so. `clock` writes a time of day as the reader's summary does.
 */
export function apiOutageRows(r: UpgradeReport, clock: (ms: number) => string): string[][] {
  return (r.api?.endpoints ?? []).flatMap((e) => {
    const head = [`${e.name} (${e.url})`, String(e.samples), String(e.failures)];
    if (e.outages.length === 0) return [[...head, "—", "0 s", "no outage", ""]];
    return e.outages.map((o) => [
      ...head,
      clock(Date.parse(o.start)),
      `${o.seconds} s`,
      o.during.length > 0 ? o.during.join(", ") : "between steps",
      o.error,
    ]);
  });
}

/** What the workload table shows a row of: each probed workload, then the DNS lookup. */
export function probedRequests(
  r: UpgradeReport,
): { name: string; t: EndpointTimeline; availability: AvailabilityChange[] }[] {
  return [
    ...(r.workloads?.workloads ?? []).map((w) => ({
      name: w.name,
      t: w,
      availability: w.availability ?? [],
    })),
    // --probe dns: a row of its own, with no replicas to count.
    ...(r.dns ? [{ name: `DNS: ${DNS_LOOKUP_NAME}`, t: r.dns, availability: [] }] : []),
  ];
}

/**
 * The workload table's rows: workload, samples, failed, error rate, longest outage and the steps
 * it fell in, the fewest replicas available (of desired) while probed.
 */
export function workloadRows(r: UpgradeReport): string[][] {
  return probedRequests(r).map(({ name, t, availability }) => {
    const longest = t.outages.reduce<(typeof t.outages)[number] | undefined>(
      (a, o) => (a === undefined || o.seconds > a.seconds ? o : a),
      undefined,
    );
    const fewest = availability.reduce<AvailabilityChange | undefined>(
      (a, c) => (a === undefined || c.available < a.available ? c : a),
      undefined,
    );
    return [
      name,
      String(t.samples),
      String(t.failures),
      `${Math.round(errorRate(t.samples, t.failures) * 10_000) / 100}%`,
      longest ? `${longest.seconds} s` : "0 s",
      longest
        ? longest.during.length > 0
          ? longest.during.join(", ")
          : "between steps"
        : "no outage",
      fewest ? `${fewest.available} of ${fewest.desired}` : "—",
    ];
  });
}

/** The thresholds given, each with how it ended. */
export function thresholdLines(r: UpgradeReport): string[] {
  return thresholdOutcomes(r).map(({ threshold, limit, violation }) =>
    violation ? `exceeded: ${violation.message}` : `held: ${threshold} ${limit}`,
  );
}

/** Chart sections of the API and of the workload outages, one task per outage (marked), when there were any. */
export function outageSection(r: UpgradeReport): GanttSection[] {
  const section = (name: string, timelines: readonly EndpointTimeline[]): GanttSection[] => {
    const tasks = timelines.flatMap((e) =>
      e.outages.map((o) => ({
        name: `${e.name} down`,
        startedAt: Date.parse(o.start),
        ms: o.seconds * 1000,
        failed: true,
      })),
    );
    return tasks.length > 0 ? [{ name, tasks }] : [];
  };
  return [
    ...section("API outages", r.api?.endpoints ?? []),
    ...section("Workload outages", r.workloads?.workloads ?? []),
    ...section("DNS outages", r.dns ? [r.dns] : []),
  ];
}
