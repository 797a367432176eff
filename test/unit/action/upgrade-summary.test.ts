import { describe, expect, it } from "vitest";
import { summaryHTML, type SummaryInput } from "../../../src/action/summary.js";
import { nodeTimings } from "../../../src/action/upgrade-summary.js";
import type { ReportStep, UpgradeReport } from "../../../src/cluster/upgrade/report.js";
import { mermaidBlocks, readGantt } from "../../support/mermaid-gantt.js";

// What the action shows of an upgrade from its UpgradeReport: the node-timings output, the job
// summary's upgrade table and the chart's upgrade sections; a failed drain names the Pod and
// its budget where the reader looks first; a dry run shows the plan.

const t0 = Date.UTC(2026, 10, 27, 2, 0, 0);
const at = (s: number) => new Date(t0 + s * 1000).toISOString();
const ok = (name: string, start: number, seconds: number, detail?: string): ReportStep => ({
  name,
  startedAt: at(start),
  seconds,
  result: "ok",
  ...(detail ? { detail } : {}),
});
const BLOCKED =
  'cannot evict default/web-0: PodDisruptionBudget default/web allows no disruption ("Cannot evict pod as it would violate the pod\'s disruption budget.")';

const report: UpgradeReport = {
  apiVersion: "kubeforge.dev/v1alpha1",
  kind: "UpgradeReport",
  cluster: "ci",
  from: "v1.35.0",
  to: "v1.36.3",
  result: "failed",
  startedAt: at(0),
  durationSeconds: 125.5,
  error: BLOCKED,
  addons: { coredns: {}, kubeProxy: {} },
  nodes: [
    {
      name: "cp-1",
      role: "control-plane",
      kubeletBefore: "v1.35.0",
      kubeletAfter: "v1.36.3",
      result: "upgraded",
      steps: [ok("upgrade-apply", 10, 40), ok("kubelet", 50, 2), ok("gate", 52, 6.5)],
      backups: [],
    },
    {
      name: "w-1",
      role: "worker",
      kubeletBefore: "v1.35.0",
      kubeletAfter: "v1.36.3",
      result: "upgraded",
      steps: [
        ok("upgrade-node", 60, 5),
        ok("cordon", 65, 0.2),
        ok("drain", 65.2, 3, "1 pod(s) evicted"),
        ok("kubelet", 68.2, 1),
        ok("gate", 69.2, 4),
        ok("uncordon", 73.2, 0.3),
      ],
      backups: [],
    },
    {
      name: "w-2",
      role: "worker",
      kubeletBefore: "v1.35.0",
      result: "failed",
      steps: [
        ok("upgrade-node", 74, 0.05),
        ok("cordon", 74.05, 0.05),
        { name: "drain", startedAt: at(74.1), seconds: 60, result: "failed", detail: BLOCKED },
      ],
      backups: [],
    },
    {
      name: "w-3",
      role: "worker",
      kubeletBefore: "v1.35.0",
      result: "pending",
      steps: [],
      backups: [],
    },
  ],
};

const input: SummaryInput = {
  cluster: "ci",
  dryRun: false,
  kubernetesVersion: "v1.35.0",
  steps: [
    { title: "connect", startedAt: t0 - 30_000, ms: 1000, failed: false },
    { title: "init cp-1", startedAt: t0 - 29_000, ms: 20_000, failed: false },
    { title: "connect", startedAt: t0 + 1000, ms: 500, failed: false },
    { title: "upgrade apply cp-1", startedAt: t0 + 10_000, ms: 48_500, failed: false },
    { title: "upgrade workers", startedAt: t0 + 60_000, ms: 74_100, failed: true },
  ],
  upgrade: { report, firstStep: 2 },
  error: BLOCKED,
};

const row = (html: string, node: string) =>
  new RegExp(`<tr><td>${node}</td>(.*?)</tr>`)
    .exec(html)?.[1]
    ?.split(/<\/?td>/)
    .filter(Boolean);

describe("node-timings", () => {
  it("is each node's span from its first step's start to its last step's end", () => {
    expect(nodeTimings(report)).toEqual([
      { name: "cp-1", role: "control-plane", result: "upgraded", seconds: 48.5 },
      { name: "w-1", role: "worker", result: "upgraded", seconds: 13.5 },
      { name: "w-2", role: "worker", result: "failed", seconds: 60.1 },
      { name: "w-3", role: "worker", result: "pending", seconds: 0 },
    ]);
  });
});

describe("the job summary of an upgrade", () => {
  const html = summaryHTML(input);

  it("has a row per node: role, kubelet before → after, time, drain, result", () => {
    expect(html).toContain(
      "<tr><th>Node</th><th>Role</th><th>Kubelet</th><th>Took</th><th>Drain</th><th>Result</th></tr>",
    );
    expect(row(html, "cp-1")).toEqual([
      "control-plane",
      "v1.35.0 → v1.36.3",
      "48.5 s",
      "not drained",
      "upgraded",
    ]);
    expect(row(html, "w-1")).toEqual([
      "worker",
      "v1.35.0 → v1.36.3",
      "13.5 s",
      "1 pod(s) evicted",
      "upgraded",
    ]);
    // The blocked drain names the Pod and its budget, escaped.
    const escaped = BLOCKED.replace(/"/g, "&quot;").replace(/'/g, "&#39;");
    expect(row(html, "w-2")).toEqual([
      "worker",
      "v1.35.0 → ?",
      "1 min 00 s",
      `failed: ${escaped}`,
      `failed in drain: ${escaped}`,
    ]);
    expect(row(html, "w-3")).toEqual(["worker", "v1.35.0 → ?", "—", "—", "pending"]);
    expect(html).toContain(
      "<tr><th>Upgrade</th><td>v1.35.0 → v1.36.3, failed in 2 min 06 s</td></tr>",
    );
  });

  it("charts the build, the upgrade's steps, and each upgraded node's steps", () => {
    const gantt = readGantt(mermaidBlocks(html)[0]!);
    expect(gantt.sections).toEqual([
      "cluster",
      "upgrade",
      "upgrade cp-1",
      "upgrade w-1",
      "upgrade w-2",
    ]);
    const names = (section: string) =>
      gantt.tasks.filter((t) => t.section === section).map((t) => t.name);
    expect(names("cluster")).toEqual(["connect", "init cp-1"]);
    expect(names("upgrade")).toEqual(["connect", "upgrade apply cp-1", "upgrade workers"]);
    expect(names("upgrade cp-1")).toEqual(["upgrade-apply", "kubelet", "gate"]);
    const drain = gantt.tasks.find((t) => t.section === "upgrade w-2" && t.name === "drain")!;
    expect(drain).toEqual({
      section: "upgrade w-2",
      name: "drain",
      tags: ["crit"],
      start: t0 + 74_100,
      end: t0 + 134_100,
    });
  });

  it("tables the API outages with the step each fell in, and marks them in the chart", () => {
    const probed: UpgradeReport = {
      ...report,
      result: "thresholds-violated",
      error: undefined,
      thresholds: { maxApiDowntime: "5s" },
      violations: [
        {
          threshold: "max-api-downtime",
          limit: "5s",
          measured: "7.5s",
          message:
            "max-api-downtime 5s: the longest outage was 7.5 s on the stable endpoint during cp-1 upgrade-apply",
        },
      ],
      api: {
        intervalMs: 500,
        endpoints: [
          {
            name: "cp-1",
            kind: "control-plane",
            url: "https://10.0.0.11:6443",
            checks: "GET /readyz",
            samples: 250,
            failures: 15,
            longestOutageSeconds: 7.5,
            totalOutageSeconds: 7.5,
            outages: [
              {
                start: at(20),
                seconds: 7.5,
                samples: 15,
                during: ["cp-1 upgrade-apply"],
                error: "connect ECONNREFUSED 10.0.0.11:6443",
              },
            ],
          },
          {
            name: "stable",
            kind: "stable",
            url: "https://10.0.0.11:6443",
            checks: "read, write",
            samples: 250,
            failures: 0,
            longestOutageSeconds: 0,
            totalOutageSeconds: 0,
            outages: [],
          },
        ],
      },
    };
    const html = summaryHTML({
      ...input,
      error: undefined,
      upgrade: { report: probed, firstStep: 2 },
    });
    expect(html).toContain(
      "<tr><th>API endpoint</th><th>Samples</th><th>Failed</th><th>Outage at (UTC)</th><th>Lasted</th><th>During</th><th>First error</th></tr>",
    );
    expect(html).toContain(
      "<tr><td>cp-1 (https://10.0.0.11:6443)</td><td>250</td><td>15</td><td>02:00:20.000</td><td>7.5 s</td><td>cp-1 upgrade-apply</td><td>connect ECONNREFUSED 10.0.0.11:6443</td></tr>",
    );
    expect(html).toContain(
      "<tr><td>stable (https://10.0.0.11:6443)</td><td>250</td><td>0</td><td>—</td><td>0 s</td><td>no outage</td><td></td></tr>",
    );
    expect(html).toContain(
      "<p>Threshold exceeded: max-api-downtime 5s: the longest outage was 7.5 s on the stable endpoint during cp-1 upgrade-apply</p>",
    );
    const gantt = readGantt(mermaidBlocks(html)[0]!);
    expect(gantt.sections.at(-1)).toBe("API outages");
    expect(gantt.tasks.filter((t) => t.section === "API outages")).toEqual([
      {
        section: "API outages",
        name: "cp-1 down",
        tags: ["crit"],
        start: t0 + 20_000,
        end: t0 + 27_500,
      },
    ]);
    // The step fails on the threshold, the cluster upgraded and ready: the title says both.
    const violated = summaryHTML({
      ...input,
      error: "the upgrade finished, and a threshold was exceeded",
      upgrade: { report: probed, firstStep: 2 },
    });
    expect(violated).toContain(
      "<h3>kubeforge: cluster ci (ready, upgrade thresholds exceeded)</h3>",
    );
    // A run that failed on its own says so.
    expect(summaryHTML(input)).toContain("<h3>kubeforge: cluster ci (failed)</h3>");
    // Without probes: neither the table nor the section.
    const plain = summaryHTML(input);
    expect(plain).not.toContain("API endpoint");
    expect(readGantt(mermaidBlocks(plain)[0]!).sections).not.toContain("API outages");
  });

  it("shows the workload row: requests, failed, error rate, longest outage and its step, fewest available; its outage in the chart", () => {
    const t0 = Date.parse(at(0));
    const probed: UpgradeReport = {
      ...report,
      result: "thresholds-violated",
      error: undefined,
      workloads: {
        intervalMs: 500,
        workloads: [
          {
            name: "kubeforge-canary",
            kind: "workload",
            url: "/api/v1/namespaces/kubeforge-probes/services/kubeforge-canary:http/proxy/hostname",
            checks: "GET",
            samples: 400,
            failures: 3,
            errorRate: 0.0075,
            longestOutageSeconds: 1.5,
            totalOutageSeconds: 1.5,
            outages: [
              { start: at(61), seconds: 1.5, samples: 3, during: ["w-1 drain"], error: "503" },
            ],
            availability: [
              { at: at(0), available: 2, desired: 2 },
              { at: at(61), available: 1, desired: 2 },
              { at: at(70), available: 2, desired: 2 },
            ],
          },
        ],
      },
    };
    const html = summaryHTML({
      ...input,
      error: undefined,
      upgrade: { report: probed, firstStep: 2 },
    });
    expect(html).toContain(
      "<tr><td>kubeforge-canary</td><td>400</td><td>3</td><td>0.75%</td><td>1.5 s</td><td>w-1 drain</td><td>1 of 2</td></tr>",
    );
    const gantt = readGantt(mermaidBlocks(html)[0]!);
    expect(gantt.tasks.filter((t) => t.section === "Workload outages")).toEqual([
      {
        section: "Workload outages",
        name: "kubeforge-canary down",
        tags: ["crit"],
        start: t0 + 61_000,
        end: t0 + 62_500,
      },
    ]);

    // --probe dns: its own row (no replicas), its outages in a section of their own.
    const withDns: UpgradeReport = {
      ...probed,
      dns: {
        name: "dns",
        kind: "dns",
        url: "/api/v1/namespaces/kubeforge-probes/services/kubeforge-canary:http/proxy/shell",
        checks: "dig",
        samples: 400,
        failures: 2,
        longestOutageSeconds: 1,
        totalOutageSeconds: 1,
        outages: [
          {
            start: at(90),
            seconds: 1,
            samples: 2,
            during: ["cp-1 upgrade-apply"],
            error:
              "the lookup of kubernetes.default failed (exit status 9): ;; no servers could be reached",
          },
        ],
      },
    };
    const dnsHtml = summaryHTML({
      ...input,
      error: undefined,
      upgrade: { report: withDns, firstStep: 2 },
    });
    expect(dnsHtml).toContain(
      "<tr><td>DNS: kubernetes.default</td><td>400</td><td>2</td><td>0.5%</td><td>1 s</td><td>cp-1 upgrade-apply</td><td>—</td></tr>",
    );
    expect(
      readGantt(mermaidBlocks(dnsHtml)[0]!).tasks.filter((t) => t.section === "DNS outages"),
    ).toEqual([
      {
        section: "DNS outages",
        name: "dns down",
        tags: ["crit"],
        start: t0 + 90_000,
        end: t0 + 91_000,
      },
    ]);
  });

  it("a dry run shows the plan the upgrade would follow, and no table", () => {
    const plan =
      '# kubeforge upgrade --plan: cluster "ci" from v1.35.0 to v1.36.3; nothing was changed\n1. cp-1 (control-plane): upgrade apply, kubelet, gate — v1.35.0 → v1.36.3\n';
    const dry = summaryHTML({
      ...input,
      dryRun: true,
      error: undefined,
      upgrade: { plan, firstStep: 2 },
    });
    expect(dry).toContain(`<pre>${plan.replace(/"/g, "&quot;")}</pre>`);
    expect(dry).not.toContain("<th>Drain</th>");
  });

  it("without upgrade-to, no upgrade section at all", () => {
    const plain = summaryHTML({ ...input, upgrade: undefined, error: undefined });
    expect(plain).not.toContain("Upgrade");
    expect(readGantt(mermaidBlocks(plain)[0]!).sections).toEqual(["cluster"]);
  });
});
