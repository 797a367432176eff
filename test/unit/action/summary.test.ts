import { describe, expect, it } from "vitest";
import {
  artifactURL,
  diagnosticsHTML,
  summaryHTML,
  type SummaryInput,
} from "../../../src/action/summary.js";
import { mermaidBlocks, readGantt } from "../../support/mermaid-gantt.js";

// The job summary's node table: the kubelet each node reports (a custom kubelet's own version,
// not the cluster's), the planned version in a dry run.

const base: SummaryInput = {
  cluster: "ci",
  dryRun: false,
  kubernetesVersion: "v1.35.0",
  apiServer: "https://10.0.0.1:6443",
  nodes: [
    { name: "cp-1", role: "control-plane", address: "10.0.0.1", action: "init" },
    { name: "w-1", role: "worker", address: "10.0.0.2", action: "join" },
    { name: "w-2", role: "worker", address: "10.0.0.3", action: "join" },
  ],
  steps: [],
};

const row = (html: string, node: string) =>
  new RegExp(`<tr><td>${node}</td>(.*?)</tr>`)
    .exec(html)?.[1]
    ?.split(/<\/?td>/)
    .filter(Boolean);

describe("summaryHTML", () => {
  it("shows each node's own kubelet version", () => {
    const html = summaryHTML({
      ...base,
      kubeletVersions: new Map([
        ["cp-1", "v1.35.0"],
        ["w-1", "v1.36.0-alpha.1.42+0123456789abcd"],
      ]),
    });
    expect(html).toContain("<th>Kubelet</th>");
    expect(row(html, "cp-1")).toEqual(["control-plane", "10.0.0.1", "v1.35.0", "init"]);
    expect(row(html, "w-1")).toEqual([
      "worker",
      "10.0.0.2",
      "v1.36.0-alpha.1.42+0123456789abcd",
      "join",
    ]);
    // A node that reported none is not given the cluster's version.
    expect(row(html, "w-2")).toEqual(["worker", "10.0.0.3", "not reported", "join"]);
  });

  it("a dry run shows the version the plan would install", () => {
    const html = summaryHTML({ ...base, dryRun: true });
    expect(row(html, "w-1")).toEqual(["worker", "10.0.0.2", "v1.35.0", "would join"]);
  });
});

describe("the summary a reader opens after a red run", () => {
  const t0 = Date.UTC(2026, 10, 27, 7, 0, 0);
  const failed: SummaryInput = {
    ...base,
    nodes: base.nodes!,
    steps: [
      { title: "connect", startedAt: t0 + 5, ms: 900, failed: false },
      { title: "init cp-1", startedAt: t0 + 1000, ms: 20_000, failed: false },
      { title: "join workers", startedAt: t0 + 21_000, ms: 4_000, failed: true },
    ],
    phases: [
      { node: "cp-1", phase: "preflight", startedAt: t0 + 1000, ms: 1200 },
      { node: "cp-1", phase: "certs", startedAt: t0 + 2200, ms: 800.4 },
    ],
    error:
      "failed on 1 of 2 hosts:\n - w-1: the file /home/runner/work/_temp/kubeforge-ci/x.yaml is bad",
    env: {
      RUNNER_TEMP: "/home/runner/work/_temp",
      HOME: "/home/runner",
      GITHUB_WORKSPACE: "/home/runner/work/r/r",
    },
  };

  it("charts the steps and each node's phases over time in a Mermaid Gantt block", () => {
    const blocks = mermaidBlocks(summaryHTML(failed));
    expect(blocks).toHaveLength(1);
    const gantt = readGantt(blocks[0]!);
    expect(gantt.title).toBe("Cluster ci, phases over time");
    expect(gantt.sections).toEqual(["cluster", "cp-1"]);
    expect(gantt.tasks).toEqual([
      { section: "cluster", name: "connect", tags: [], start: t0 + 5, end: t0 + 905 },
      { section: "cluster", name: "init cp-1", tags: [], start: t0 + 1000, end: t0 + 21_000 },
      {
        section: "cluster",
        name: "join workers",
        tags: ["crit"],
        start: t0 + 21_000,
        end: t0 + 25_000,
      },
      { section: "cp-1", name: "preflight", tags: [], start: t0 + 1000, end: t0 + 2200 },
      { section: "cp-1", name: "certs", tags: [], start: t0 + 2200, end: t0 + 3000 },
    ]);
  });

  it("names that Mermaid would read otherwise are made plain", () => {
    const html = summaryHTML({
      ...failed,
      cluster: "a:b",
      steps: [
        { title: "section x: y; #z", startedAt: t0, ms: 1, failed: false },
        { title: "click me", startedAt: t0, ms: 1, failed: false },
      ],
      phases: [],
    });
    const gantt = readGantt(mermaidBlocks(html)[0]!);
    expect(gantt.tasks.map((t) => t.name)).toEqual(["- section x y z", "- click me"]);
  });

  it("shows no path on the runner, no empty header row, and the facts a reader needs", () => {
    const html = summaryHTML({ ...failed, readyMs: 83_400 });
    expect(html).not.toContain("/home/runner");
    expect(html).toContain("$RUNNER_TEMP/kubeforge-ci/x.yaml");
    expect(html).not.toMatch(/<th><\/th>/);
    expect(html).toContain("<tr><th>Nodes</th><td>1 control plane, 2 workers</td></tr>");
    expect(html).toContain("<tr><th>Ready after</th><td>1 min 23 s</td></tr>");
    // The step and phase tables are folded; the chart stays open.
    expect(html).toMatch(
      /<details><summary>Step and phase times<\/summary>[\s\S]*<td>join workers<\/td><td>4\.0 s \(failed\)<\/td>[\s\S]*<\/details>/,
    );
  });

  it("folds a long node table", () => {
    const nodes = Array.from({ length: 12 }, (_, i) => ({
      name: `w-${i}`,
      role: "worker" as const,
      address: `10.0.0.${i + 10}`,
      action: "join" as const,
    }));
    expect(summaryHTML({ ...base, nodes })).toMatch(
      /<details><summary>12 nodes<\/summary>\n\n<table><tr><th>Node<\/th>/,
    );
    expect(summaryHTML(base)).not.toContain("<details><summary>3 nodes");
  });

  it("the post step's summary links the uploaded artifact, or says why there is none", () => {
    const env = {
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_REPOSITORY: "o/r",
      GITHUB_RUN_ID: "77",
      RUNNER_TEMP: "/home/runner/work/_temp",
    };
    const url = artifactURL(4242, env);
    expect(url).toBe("https://github.com/o/r/actions/runs/77/artifacts/4242");
    const html = diagnosticsHTML(
      {
        cluster: "ci",
        reason: "the main step failed (in join)",
        files: 9,
        artifact: { name: "kubeforge-ci-diagnostics", url: url!, bytes: 20_480 },
      },
      env,
    );
    expect(html).toContain(
      '<a href="https://github.com/o/r/actions/runs/77/artifacts/4242">kubeforge-ci-diagnostics</a> (20 KiB)',
    );
    const none = diagnosticsHTML(
      {
        cluster: "ci",
        reason: "a later step of the job failed",
        files: 9,
        notUploaded: "the upload failed (no space in /home/runner/work/_temp)",
      },
      env,
    );
    expect(none).not.toContain("/home/runner");
    expect(none).toContain("no space in $RUNNER_TEMP");
    expect(artifactURL(undefined, env)).toBeUndefined();
  });
});
