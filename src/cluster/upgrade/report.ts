import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import type { EtcdSnapshot } from "./data.js";

// The rehearsal's evidence (kubeadm-upgrade.md §5.6): per node and per step, when it started,
// how long it took, how it ended and the backup folders it left — as `upgrade-report.json` (a
// kubeforge.dev/v1alpha1 UpgradeReport) and as JUnit XML, one test case per node × step, which
// CI test reporters show. Built in memory while the run goes; written whatever the outcome.

export type StepResult = "ok" | "failed" | "skipped";

export interface ReportStep {
  name: string;
  startedAt: string;
  seconds: number;
  result: StepResult;
  detail?: string;
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
  result: "succeeded" | "failed";
  startedAt: string;
  durationSeconds: number;
  /** The error that stopped the run. */
  error?: string;
  /** CoreDNS and kube-proxy image tags before and after the run. */
  addons: { coredns: AddonVersions; kubeProxy: AddonVersions };
  /** The etcd snapshot taken before the first change (absent: none, e.g. external etcd). */
  etcd?: { snapshot: EtcdSnapshot };
  nodes: ReportNode[];
}

const round = (s: number) => Math.round(s * 1000) / 1000;

const messageOf = (e: unknown) =>
  e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e);

export class ReportRecorder {
  private readonly started: number;
  private readonly nodes = new Map<string, ReportNode>();
  readonly addons: UpgradeReport["addons"] = { coredns: {}, kubeProxy: {} };
  from = "";
  to = "";
  etcdSnapshot: EtcdSnapshot | undefined;

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
    const record = (result: StepResult, text?: string) =>
      n.steps.push({
        name,
        startedAt: new Date(start).toISOString(),
        seconds: round((this.now() - start) / 1000),
        result,
        ...(text ? { detail: text } : {}),
      });
    try {
      const value = await run();
      record("ok", detail?.(value));
      return value;
    } catch (e) {
      record("failed", (e as Error).message.split("\n")[0]);
      n.result = "failed";
      throw e;
    }
  }

  report(error?: unknown): UpgradeReport {
    const nodes = [...this.nodes.values()];
    return {
      apiVersion: "kubeforge.dev/v1alpha1",
      kind: "UpgradeReport",
      cluster: this.cluster,
      from: this.from,
      to: this.to,
      result:
        error === undefined && nodes.every((n) => n.result !== "failed") ? "succeeded" : "failed",
      startedAt: new Date(this.started).toISOString(),
      durationSeconds: round((this.now() - this.started) / 1000),
      ...(error !== undefined ? { error: messageOf(error) } : {}),
      addons: this.addons,
      ...(this.etcdSnapshot ? { etcd: { snapshot: this.etcdSnapshot } } : {}),
      nodes,
    };
  }
}

const escapeXML = (s: string) =>
  s.replace(
    /[<>&"']/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c]!,
  );

/** JUnit XML: one testsuite for the hop, one testcase per node × step (classname: the node). */
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
  const failures = cases.filter((c) => c.step.result === "failed").length;
  const skipped = cases.filter((c) => c.step.result === "skipped").length;
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="kubeforge upgrade" tests="${cases.length}" failures="${failures}" time="${r.durationSeconds}">`,
    `  <testsuite name="upgrade-${escapeXML(r.from)}-${escapeXML(r.to)}" tests="${cases.length}" failures="${failures}" skipped="${skipped}" time="${r.durationSeconds}" timestamp="${r.startedAt}">`,
  ];
  for (const { node, step } of cases) {
    const open = `    <testcase classname="${escapeXML(node)}" name="${escapeXML(step.name)}" time="${step.seconds}"`;
    if (step.result === "ok") lines.push(`${open}/>`);
    else if (step.result === "skipped") lines.push(`${open}><skipped/></testcase>`);
    else {
      lines.push(`${open}><failure message="${escapeXML(step.detail ?? "failed")}"/></testcase>`);
    }
  }
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}
