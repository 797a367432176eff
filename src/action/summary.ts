import type { UpNode, UpResult } from "../cluster/up/index.js";
import type { UpgradeReport } from "../cluster/upgrade/report.js";
import { printable } from "../workflow/printable.js";
import { ganttChart, type GanttSection } from "./gantt.js";
import {
  apiOutageRows,
  outageSection,
  probedRequests,
  thresholdLines,
  workloadRows,
  upgradeRows,
  upgradeSections,
} from "./upgrade-summary.js";

// The job summary (GITHUB_STEP_SUMMARY), read after the run when the runner is gone: the
// cluster's version, nodes and roles, how long it took to be Ready, a chart of the phases over
// time, the error when the step failed. Long tables fold into <details>; paths on the runner are
// not shown (nobody can open them after the job), and the ones an error quotes are written from
// the runner's variables ($RUNNER_TEMP/...). Built as HTML text so that the main step can pass it
// through the reporter's redaction before writing; no secret is ever put in it.

export interface StepTiming {
  title: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  ms: number;
  failed: boolean;
}

/** The upgrade rehearsal after the build (upgrade-to). */
export interface UpgradeSummary {
  /** The run's report; absent when it stopped before its plan passed, and in a dry run. */
  report?: UpgradeReport;
  /** Dry run: the plan, as `kubeforge upgrade --plan` prints it. */
  plan?: string;
  /** The first of SummaryInput.steps that belongs to the upgrade (earlier ones built the cluster). */
  firstStep: number;
}

export interface SummaryInput {
  cluster: string;
  dryRun: boolean;
  kubernetesVersion?: string;
  apiServer?: string;
  nodes?: UpNode[];
  /**
   * Each node's kubelet version as the node reports it (a custom kubelet's own); absent in a dry
   * run (no kubelet runs yet), when the planned version is shown.
   */
  kubeletVersions?: ReadonlyMap<string, string>;
  /** The orchestrator's steps (log groups), in order. */
  steps: StepTiming[];
  /** Each node's init/join phases (UpResult.timings). */
  phases?: UpResult["timings"];
  /** From the step's start until the cluster was Ready (a real run that succeeded). */
  readyMs?: number;
  upgrade?: UpgradeSummary;
  /** Set when the step failed. */
  error?: string;
  /** The runner's environment: the paths an error quotes are written from its variables. */
  env?: NodeJS.ProcessEnv;
}

/** Tables longer than this fold into <details>. */
const FOLD_ROWS = 10;
/** Nodes charted one section each; the phase table has them all. */
const CHARTED_NODES = 6;

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** HTML-escaped and inert (workflow/printable.ts): a summary quotes node names and errors. */
export function escapeHTML(text: string): string {
  return printable(text).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** The runner's folders a message may quote, by the variable a reader knows them by. */
const RUNNER_FOLDERS = ["RUNNER_TEMP", "RUNNER_TOOL_CACHE", "GITHUB_WORKSPACE", "HOME"] as const;

/** `text` with the runner's own folders written as $RUNNER_TEMP, $GITHUB_WORKSPACE, ... */
export function withoutRunnerPaths(text: string, env: NodeJS.ProcessEnv): string {
  const folders = RUNNER_FOLDERS.map((name) => ({ name, path: env[name]?.replace(/\/+$/, "") }))
    .filter((f): f is { name: (typeof RUNNER_FOLDERS)[number]; path: string } => !!f.path)
    // Nested folders (RUNNER_TEMP under HOME): the longer one first.
    .sort((a, b) => b.path.length - a.path.length);
  let out = text;
  for (const f of folders) out = out.split(f.path).join(`$${f.name}`);
  return out;
}

/** "850 ms", "12.3 s", "2 min 05 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function table(header: string[], rows: string[][]): string {
  const cells = (tag: string, row: string[]) =>
    `<tr>${row.map((c) => `<${tag}>${escapeHTML(c)}</${tag}>`).join("")}</tr>`;
  return `<table>${cells("th", header)}${rows.map((r) => cells("td", r)).join("")}</table>\n`;
}

/** A table of facts: each row names itself (no header row). */
function factTable(rows: [string, string][]): string {
  const tr = ([k, v]: [string, string]) =>
    `<tr><th>${escapeHTML(k)}</th><td>${escapeHTML(v)}</td></tr>`;
  return `<table>${rows.map(tr).join("")}</table>\n`;
}

/** `html` as it is, or folded under `title` when it has more than FOLD_ROWS rows. */
function foldable(title: string, rows: number, html: string, fold = rows > FOLD_ROWS): string {
  return fold ? `<details><summary>${escapeHTML(title)}</summary>\n\n${html}</details>\n` : html;
}

function describeAction(action: UpNode["action"], dryRun: boolean): string {
  if (action === "none") return dryRun ? "nothing to do" : "already part of the cluster";
  return dryRun ? `would ${action}` : action;
}

function kubeletColumn(s: SummaryInput, node: string): string {
  if (!s.kubeletVersions) return s.kubernetesVersion ?? "";
  return s.kubeletVersions.get(node) ?? "not reported";
}

/** "1 control plane, 2 workers". */
function roles(nodes: readonly UpNode[]): string {
  const count = (role: UpNode["role"]) => nodes.filter((n) => n.role === role).length;
  const cps = count("control-plane");
  const workers = count("worker");
  const parts = [`${cps} control plane${cps === 1 ? "" : "s"}`];
  if (workers > 0) parts.push(`${workers} worker${workers === 1 ? "" : "s"}`);
  return parts.join(", ");
}

function facts(s: SummaryInput): string {
  const rows: [string, string][] = [];
  if (s.kubernetesVersion) rows.push(["Kubernetes", s.kubernetesVersion]);
  if (s.nodes && s.nodes.length > 0) rows.push(["Nodes", roles(s.nodes)]);
  if (s.readyMs !== undefined) rows.push(["Ready after", duration(s.readyMs)]);
  const report = s.upgrade?.report;
  if (report) {
    rows.push([
      "Upgrade",
      `${report.from} → ${report.to}, ${report.result} in ${duration(report.durationSeconds * 1000)}`,
    ]);
  }
  if (s.apiServer) rows.push(["API server", s.apiServer]);
  return rows.length > 0 ? factTable(rows) : "";
}

function nodeTable(s: SummaryInput): string {
  if (!s.nodes || s.nodes.length === 0) return "";
  const html = table(
    ["Node", "Role", "Address", "Kubelet", "This run"],
    s.nodes.map((n) => [
      n.name,
      n.role,
      n.address,
      kubeletColumn(s, n.name),
      describeAction(n.action, s.dryRun),
    ]),
  );
  return foldable(`${s.nodes.length} nodes`, s.nodes.length, html);
}

/** The orchestrator's steps, then each node's phases (the first CHARTED_NODES nodes). */
function chart(s: SummaryInput): string {
  const task = (t: StepTiming) => ({
    name: t.title,
    startedAt: t.startedAt,
    ms: t.ms,
    failed: t.failed,
  });
  const split = s.upgrade?.firstStep ?? s.steps.length;
  const sections: GanttSection[] = [{ name: "cluster", tasks: s.steps.slice(0, split).map(task) }];
  const nodes = [...new Set((s.phases ?? []).map((p) => p.node))];
  for (const node of nodes.slice(0, CHARTED_NODES)) {
    sections.push({
      name: node,
      tasks: s.phases!.filter((p) => p.node === node).map((p) => ({ ...p, name: p.phase })),
    });
  }
  if (s.upgrade) {
    sections.push({ name: "upgrade", tasks: s.steps.slice(split).map(task) });
    if (s.upgrade.report) {
      sections.push(...upgradeSections(s.upgrade.report, CHARTED_NODES));
      sections.push(...outageSection(s.upgrade.report));
    }
  }
  const gantt = ganttChart(`Cluster ${s.cluster}, phases over time`, sections);
  // Markdown inside an HTML summary: the fence needs blank lines around it.
  return gantt === "" ? "" : `\n${gantt}\n`;
}

/** The upgrade: per node, from → to, how long, the drain; or, in a dry run, the plan. */
function upgradeTable(s: SummaryInput): string {
  if (s.upgrade?.plan !== undefined) {
    return `<p>The upgrade it would run:</p>\n<pre>${escapeHTML(s.upgrade.plan)}</pre>\n`;
  }
  const report = s.upgrade?.report;
  if (!report || report.nodes.length === 0) return "";
  const html = table(
    ["Node", "Role", "Kubelet", "Took", "Drain", "Result"],
    upgradeRows(report, duration),
  );
  return (
    foldable(`Upgrade of ${report.nodes.length} nodes`, report.nodes.length, html) +
    apiOutageTable(report) +
    workloadTable(report) +
    thresholdParagraphs(report)
  );
}

/** What the API probes saw during the upgrade, per endpoint and outage, and the thresholds. */
function apiOutageTable(report: UpgradeReport): string {
  const rows = apiOutageRows(report, (ms) => new Date(ms).toISOString().slice(11, 23));
  if (rows.length === 0) return "";
  const outages = (report.api?.endpoints ?? []).reduce((n, e) => n + e.outages.length, 0);
  const html = table(
    ["API endpoint", "Samples", "Failed", "Outage at (UTC)", "Lasted", "During", "First error"],
    rows,
  );
  return foldable(`API outages during the upgrade: ${outages}`, outages, html);
}

/** What the workload probes saw: one row per workload. */
function workloadTable(report: UpgradeReport): string {
  const rows = workloadRows(report);
  if (rows.length === 0) return "";
  const failed = probedRequests(report).reduce((n, p) => n + p.t.failures, 0);
  const html = table(
    [
      "Workload",
      "Requests",
      "Failed",
      "Error rate",
      "Longest outage",
      "During",
      "Fewest available",
    ],
    rows,
  );
  const what = report.dns ? "Workload and DNS requests" : "Workload requests";
  return foldable(`${what} failed during the upgrade: ${failed}`, failed, html);
}

function thresholdParagraphs(report: UpgradeReport): string {
  return thresholdLines(report)
    .map(
      (l) => `<p>Threshold ${escapeHTML(l)}</p>
`,
    )
    .join("");
}

function timeTables(s: SummaryInput): string {
  const parts: string[] = [];
  if (s.steps.length > 0) {
    parts.push(
      table(
        ["Step", "Time"],
        s.steps.map((t) => [t.title, `${seconds(t.ms)}${t.failed ? " (failed)" : ""}`]),
      ),
    );
  }
  if (s.phases && s.phases.length > 0) {
    parts.push(
      table(
        ["Node", "Phase", "Time"],
        s.phases.map((p) => [p.node, p.phase, seconds(p.ms)]),
      ),
    );
  }
  return parts.length > 0 ? foldable("Step and phase times", 0, parts.join(""), true) : "";
}

function status(s: SummaryInput): string {
  // The upgrade finished and the cluster is ready: the step failed on a threshold alone.
  if (s.upgrade?.report?.result === "thresholds-violated")
    return "ready, upgrade thresholds exceeded";
  if (s.error) return "failed";
  if (s.dryRun) return "dry run, nothing was changed";
  return "ready";
}

export function summaryHTML(s: SummaryInput): string {
  const env = s.env ?? {};
  const out = [`<h3>kubeforge: cluster ${escapeHTML(s.cluster)} (${status(s)})</h3>\n`];
  if (s.error) {
    out.push(
      `<pre>${escapeHTML(withoutRunnerPaths(s.error, env))}</pre>\n`,
      "<p>The post step collects each node's logs and uploads them as an artifact (see its summary below).</p>\n",
    );
  }
  out.push(facts(s), nodeTable(s), upgradeTable(s), chart(s), timeTables(s));
  out.push(
    s.dryRun
      ? "<p>The plan and the rendered init are on the runner: see the step's <code>plan</code> and <code>plan-dir</code> outputs.</p>\n"
      : "",
    "<p>admin.conf is the step's <code>kubeconfig</code> output (and KUBECONFIG in later steps); the join token, certificate key and admin.conf's content are step outputs, not shown here.</p>\n",
  );
  return out.join("");
}

export interface DiagnosticsSummary {
  cluster: string;
  /** Why the post step collected them ("the main step failed (in join)"). */
  reason: string;
  /** The uploaded artifact; absent when it was not uploaded. */
  artifact?: { name: string; url?: string; bytes?: number };
  /** Why there is no artifact, when there is none. */
  notUploaded?: string;
  files: number;
}

/** The post step's summary: where the diagnostics it collected are. */
export function diagnosticsHTML(d: DiagnosticsSummary, env: NodeJS.ProcessEnv): string {
  const out = [`<h3>kubeforge: diagnostics of cluster ${escapeHTML(d.cluster)}</h3>\n`];
  out.push(`<p>Collected because ${escapeHTML(d.reason)}: ${d.files} files.</p>\n`);
  if (d.artifact) {
    const name = escapeHTML(d.artifact.name);
    const size =
      d.artifact.bytes !== undefined ? ` (${Math.ceil(d.artifact.bytes / 1024)} KiB)` : "";
    out.push(
      d.artifact.url
        ? `<p>Artifact: <a href="${escapeHTML(d.artifact.url)}">${name}</a>${size}</p>\n`
        : `<p>Artifact: ${name}${size}, among the run's artifacts</p>\n`,
    );
  } else {
    out.push(
      `<p>Not uploaded as an artifact: ${escapeHTML(withoutRunnerPaths(d.notUploaded ?? "", env))}</p>\n`,
    );
  }
  return out.join("");
}

/**
 * An artifact's page, as actions/upload-artifact builds its `artifact-url` output:
 * <server>/<owner>/<repo>/actions/runs/<run id>/artifacts/<artifact id>.
 */
export function artifactURL(id: number | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: run } = env;
  if (id === undefined || !server || !repo || !run) return undefined;
  return `${server.replace(/\/+$/, "")}/${repo}/actions/runs/${run}/artifacts/${id}`;
}
