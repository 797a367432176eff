import type { UpNode, UpResult } from "../cluster/up/index.js";
import { printable } from "../workflow/printable.js";

// The job summary (GITHUB_STEP_SUMMARY): the cluster's nodes, roles, version and addresses, how
// long each step and each node's phases took. Built as HTML text so that the main step can pass
// it through the reporter's redaction before writing; no secret is ever put in it.

export interface StepTiming {
  title: string;
  ms: number;
  failed: boolean;
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
  /** Files on the runner worth pointing at (admin.conf, the plan, kubeforge's log). */
  files: { label: string; path: string }[];
  /** Set when the step failed. */
  error?: string;
}

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

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function table(header: string[], rows: string[][]): string {
  const cells = (tag: string, row: string[]) =>
    `<tr>${row.map((c) => `<${tag}>${escapeHTML(c)}</${tag}>`).join("")}</tr>`;
  return `<table>${cells("th", header)}${rows.map((r) => cells("td", r)).join("")}</table>\n`;
}

function describeAction(action: UpNode["action"], dryRun: boolean): string {
  if (action === "none") return dryRun ? "nothing to do" : "already part of the cluster";
  return dryRun ? `would ${action}` : action;
}

function kubeletColumn(s: SummaryInput, node: string): string {
  if (!s.kubeletVersions) return s.kubernetesVersion ?? "";
  return s.kubeletVersions.get(node) ?? "not reported";
}

export function summaryHTML(s: SummaryInput): string {
  const out: string[] = [];
  const status = s.error ? "failed" : s.dryRun ? "dry run, nothing was changed" : "ready";
  out.push(`<h3>kubeforge: cluster ${escapeHTML(s.cluster)} (${status})</h3>\n`);
  if (s.error) out.push(`<pre>${escapeHTML(s.error)}</pre>\n`);
  const facts: string[][] = [];
  if (s.kubernetesVersion) facts.push(["Kubernetes", s.kubernetesVersion]);
  if (s.apiServer) facts.push(["API server", s.apiServer]);
  for (const f of s.files) facts.push([f.label, f.path]);
  if (facts.length > 0) out.push(table(["", ""], facts));
  if (s.nodes && s.nodes.length > 0) {
    out.push(
      table(
        ["Node", "Role", "Address", "Kubelet", "This run"],
        s.nodes.map((n) => [
          n.name,
          n.role,
          n.address,
          kubeletColumn(s, n.name),
          describeAction(n.action, s.dryRun),
        ]),
      ),
    );
  }
  if (s.steps.length > 0) {
    out.push(
      "<h4>Steps</h4>\n",
      table(
        ["Step", "Time"],
        s.steps.map((t) => [t.title, `${seconds(t.ms)}${t.failed ? " (failed)" : ""}`]),
      ),
    );
  }
  if (s.phases && s.phases.length > 0) {
    out.push(
      "<h4>Phases per node</h4>\n",
      table(
        ["Node", "Phase", "Time"],
        s.phases.map((p) => [p.node, p.phase, seconds(p.ms)]),
      ),
    );
  }
  out.push(
    "<p>The join token, certificate key and admin.conf are step outputs; they are not shown here.</p>\n",
  );
  return out.join("");
}
