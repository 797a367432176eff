import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import {
  checkThresholds,
  type ApiTimeline,
  type EndpointTimeline,
  type Thresholds,
  type ThresholdOutcome,
  type Violation,
  type WorkloadsTimeline,
} from "./probes/timeline.js";
import type { EtcdSnapshot } from "./data.js";
import type { DisruptionReport } from "./disruptions.js";

// The rehearsal's evidence (kubeadm-upgrade.md §5.6): per node and per step, when it started,
// how long it took, how it ended and the backup folders it left — as `upgrade-report.json` (a
// kubeforge.dev/v1alpha1 UpgradeReport) and as JUnit XML, one test case per node × step, which
// CI test reporters show. Built in memory while the run goes; written whatever the outcome.
// It also knows which steps are running at any moment: the API probes tag their samples with it.

export type StepResult = "ok" | "failed" | "skipped";

export interface ReportStep {
  name: string;
  startedAt: string;
  seconds: number;
  result: StepResult;
  detail?: string;
  /** A chained run (--via): the target of the hop the step belongs to. */
  hop?: string;
}

/** One hop of a chained run (--via), in order; a hop the run did not reach stays pending. */
export interface ReportHop {
  from?: string;
  to: string;
  startedAt?: string;
  durationSeconds?: number;
  result: "succeeded" | "failed" | "pending";
  /** The etcd snapshot taken before this hop's first change. */
  etcdSnapshot?: EtcdSnapshot;
}

export interface ReportNode {
  name: string;
  role: ClusterNodeSpec["role"];
  kubeletBefore?: string;
  kubeletAfter?: string;
  result: "upgraded" | "skipped" | "failed" | "pending";
  steps: ReportStep[];
  backups: string[];
}

export interface AddonVersions {
  before?: string | undefined;
  after?: string | undefined;
}

export interface UpgradeReport {
  apiVersion: "kubeforge.dev/v1alpha1";
  kind: "UpgradeReport";
  cluster: string;
  from: string;
  to: string;
  /** thresholds-violated: the upgrade finished, and a threshold given was exceeded. */
  result: "succeeded" | "failed" | "thresholds-violated";
  startedAt: string;
  durationSeconds: number;
  /** The error that stopped the run. */
  error?: string;
  /** CoreDNS and kube-proxy image tags before and after the run. */
  addons: { coredns: AddonVersions; kubeProxy: AddonVersions };
  /** The etcd snapshot taken before the first change (absent: none, e.g. external etcd). */
  etcd?: { snapshot: EtcdSnapshot };
  nodes: ReportNode[];
  /** --via: every hop of the run, in order (each node's steps name their hop). */
  hops?: ReportHop[];
  /** What the API probes measured, per endpoint (absent with --probe none). */
  api?: ApiTimeline;
  /** What the workload probes measured, per workload (absent without the workload probe). */
  workloads?: WorkloadsTimeline;
  /** The lookup of kubernetes.default from the canary's Pods (--probe dns). */
  dns?: EndpointTimeline;
  /** The thresholds given (--max-api-downtime, --max-workload-*), as given. */
  thresholds?: {
    maxApiDowntime?: string;
    maxWorkloadErrorRate?: string;
    maxWorkloadDowntime?: string;
  };
  /** What the workloads went through, from watches (with the probes; disruptions.ts). */
  disruptions?: DisruptionReport;
  violations?: Violation[];
}

const round = (s: number) => Math.round(s * 1000) / 1000;

const messageOf = (e: unknown) =>
  e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e);

export class ReportRecorder {
  private readonly started: number;
  private readonly nodes = new Map<string, ReportNode>();
  private readonly running = new Map<symbol, string>();
  /** Each recorded step's place in the order steps started (steps of a node may overlap). */
  private readonly startOrder = new WeakMap<ReportStep, number>();
  private stepsStarted = 0;
  readonly addons: UpgradeReport["addons"] = { coredns: {}, kubeProxy: {} };
  from = "";
  to = "";
  api: ApiTimeline | undefined;
  workloads: WorkloadsTimeline | undefined;
  dns: EndpointTimeline | undefined;
  disruptions: DisruptionReport | undefined;
  thresholds: Thresholds = {};
  etcdSnapshot: EtcdSnapshot | undefined;
  private hops: (ReportHop & { started?: number })[] | undefined;
  private hop = -1;

  constructor(
    readonly cluster: string,
    private readonly now: () => number = Date.now,
  ) {
    this.started = now();
  }

  node(name: string, role: ClusterNodeSpec["role"]): ReportNode {
    let n = this.nodes.get(name);
    if (!n) {
      n = { name, role, result: "pending", steps: [], backups: [] };
      this.nodes.set(name, n);
    }
    return n;
  }

  /** A chained run's hops, by target: recorded from here on. */
  route(targets: readonly string[]): void {
    this.hops = targets.map((to) => ({ to, result: "pending" }));
  }

  /** Hop `i` (0-based) starts from `from`; its steps are tagged with its target. */
  startHop(i: number, from: string): void {
    this.hop = i;
    const h = this.hops?.[i];
    if (h && h.started === undefined) {
      h.started = this.now();
      h.from = from;
      h.startedAt = new Date(h.started).toISOString();
    }
  }

  /** Hop `i` finished. */
  endHop(i: number): void {
    const h = this.hops?.[i];
    if (h?.started === undefined) return;
    h.durationSeconds = round((this.now() - h.started) / 1000);
    h.result = "succeeded";
  }

  /** The etcd snapshot of this hop; the report's own is the first, taken before any change. */
  snapshotTaken(snapshot: EtcdSnapshot | undefined): void {
    this.etcdSnapshot ??= snapshot;
    const h = this.hops?.[this.hop];
    if (h && snapshot) h.etcdSnapshot = snapshot;
  }

  private hopsReport(failed: boolean): ReportHop[] {
    return (this.hops ?? []).map(({ started, ...h }) =>
      started !== undefined && h.durationSeconds === undefined
        ? {
            ...h,
            durationSeconds: round((this.now() - started) / 1000),
            result: failed ? "failed" : h.result,
          }
        : h,
    );
  }

  /** Runs one step of a node, timed and recorded; a failure is recorded and rethrown. */
  async step<T>(
    node: string,
    role: ClusterNodeSpec["role"],
    name: string,
    run: () => Promise<T>,
    detail?: (value: T) => string | undefined,
  ): Promise<T> {
    const n = this.node(node, role);
    const start = this.now();
    const order = this.stepsStarted++;
    const running = Symbol(name);
    this.running.set(running, `${node} ${name}`);
    const hop = this.hops?.[this.hop]?.to;
    const record = (result: StepResult, text?: string) => {
      const step: ReportStep = {
        name,
        startedAt: new Date(start).toISOString(),
        seconds: round((this.now() - start) / 1000),
        result,
        ...(text ? { detail: text } : {}),
        ...(hop ? { hop } : {}),
      };
      this.startOrder.set(step, order);
      // Listed in the order the steps started, whichever ended first.
      const after = n.steps.findIndex((s) => (this.startOrder.get(s) ?? -1) > order);
      n.steps.splice(after < 0 ? n.steps.length : after, 0, step);
    };
    try {
      const value = await run();
      record("ok", detail?.(value));
      return value;
    } catch (e) {
      record("failed", (e as Error).message.split("\n")[0]);
      n.result = "failed";
      throw e;
    } finally {
      this.running.delete(running);
    }
  }

  /** The steps running now, as "<node> <step>", in the order they started. */
  current(): string[] {
    return [...this.running.values()];
  }

  report(error?: unknown): UpgradeReport {
    const nodes = [...this.nodes.values()];
    const failed = error !== undefined || nodes.some((n) => n.result === "failed");
    const outcomes = checkThresholds(this.thresholds, this.api, this.workloads);
    const violations = outcomes.flatMap((c) => (c.violation ? [c.violation] : []));
    const given = Object.fromEntries(
      Object.entries(this.thresholds).map(([key, t]) => [key, (t as { text: string }).text]),
    );
    return {
      apiVersion: "kubeforge.dev/v1alpha1",
      kind: "UpgradeReport",
      cluster: this.cluster,
      from: this.from,
      to: this.to,
      result: failed ? "failed" : violations.length > 0 ? "thresholds-violated" : "succeeded",
      startedAt: new Date(this.started).toISOString(),
      durationSeconds: round((this.now() - this.started) / 1000),
      ...(error !== undefined ? { error: messageOf(error) } : {}),
      addons: this.addons,
      ...(this.etcdSnapshot ? { etcd: { snapshot: this.etcdSnapshot } } : {}),
      nodes,
      ...(this.hops ? { hops: this.hopsReport(failed) } : {}),
      ...(this.api ? { api: this.api } : {}),
      ...(this.workloads ? { workloads: this.workloads } : {}),
      ...(this.dns ? { dns: this.dns } : {}),
      ...(outcomes.length > 0 ? { thresholds: given, violations } : {}),
      ...(this.disruptions ? { disruptions: this.disruptions } : {}),
    };
  }
}

/** What a run that finished and exceeded thresholds fails with: each violation on a line. */
export function thresholdsError(r: UpgradeReport, reportPath: string): Error {
  const violations = r.violations ?? [];
  return new Error(
    `the upgrade finished, and ${violations.length === 1 ? "a threshold was" : "thresholds were"} exceeded (the report is ${reportPath}):\n${violations.map((v) => ` - ${v.message}`).join("\n")}`,
  );
}

const escapeXML = (s: string) =>
  s.replace(
    /[<>&"']/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c]!,
  );

/** The report's threshold fields and the flags that set them. */
const THRESHOLD_NAMES = {
  maxApiDowntime: "max-api-downtime",
  maxWorkloadErrorRate: "max-workload-error-rate",
  maxWorkloadDowntime: "max-workload-downtime",
} as const;

/** Each threshold the report records, with its violation when it was exceeded. */
export function thresholdOutcomes(r: UpgradeReport): ThresholdOutcome[] {
  return Object.entries(THRESHOLD_NAMES).flatMap(([key, threshold]) => {
    const limit = r.thresholds?.[key as keyof typeof THRESHOLD_NAMES];
    if (limit === undefined) return [];
    const violation = r.violations?.find((v) => v.threshold === threshold);
    return [{ threshold, limit, ...(violation ? { violation } : {}) }];
  });
}

/** One test case per threshold given (classname "thresholds"), failed when it was exceeded. */
function thresholdCases(r: UpgradeReport): { node: string; step: ReportStep }[] {
  return thresholdOutcomes(r).map(({ threshold, limit, violation }) => ({
    node: "thresholds",
    step: {
      name: `${threshold} ${limit}`,
      startedAt: r.startedAt,
      seconds: 0,
      result: violation ? "failed" : "ok",
      ...(violation ? { detail: violation.message } : {}),
    },
  }));
}

/**
 * JUnit XML: one testsuite for the hop, one testcase per node × step (classname: the node) and
 * one per threshold given.
 */
export function junitXML(r: UpgradeReport): string {
  const cases = r.nodes.flatMap((n) => n.steps.map((s) => ({ node: n.name, step: s })));
  // A run stopped outside any node's step (a refusal, the last check) is a failure of its own.
  if (r.error !== undefined && !cases.some((c) => c.step.result === "failed")) {
    cases.push({
      node: r.cluster,
      step: {
        name: "upgrade",
        startedAt: r.startedAt,
        seconds: 0,
        result: "failed",
        detail: r.error,
      },
    });
  }
  cases.push(...thresholdCases(r));
  const failures = cases.filter((c) => c.step.result === "failed").length;
  const skipped = cases.filter((c) => c.step.result === "skipped").length;
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="kubeforge upgrade" tests="${cases.length}" failures="${failures}" time="${r.durationSeconds}">`,
    `  <testsuite name="upgrade-${escapeXML(r.from)}-${escapeXML(r.to)}" tests="${cases.length}" failures="${failures}" skipped="${skipped}" time="${r.durationSeconds}" timestamp="${r.startedAt}">`,
  ];
  for (const { node, step } of cases) {
    // A chained run's steps repeat per hop: the hop's target tells them apart.
    const name = step.hop ? `${step.hop} ${step.name}` : step.name;
    const open = `    <testcase classname="${escapeXML(node)}" name="${escapeXML(name)}" time="${step.seconds}"`;
    if (step.result === "ok") lines.push(`${open}/>`);
    else if (step.result === "skipped") lines.push(`${open}><skipped/></testcase>`);
    else {
      lines.push(`${open}><failure message="${escapeXML(step.detail ?? "failed")}"/></testcase>`);
    }
  }
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}
