import { readdir } from "node:fs/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { bundledMain, runStep, stepReport } from "./support.js";

// The `nodes` input through the bundled main.js: counts expand to `host: docker` nodes before
// anything starts, and a bad value fails the step with one sentence naming the input, before the
// Docker engine (or any host) is asked for anything.

let mainJs: string;
beforeAll(async () => {
  mainJs = await bundledMain();
}, 120_000);

/** An engine address nothing answers on: reaching the engine at all shows in the error. */
const NO_ENGINE = { DOCKER_HOST: "unix:///nonexistent/kubeforge-test-docker.sock" };

const bad: { nodes: string; cluster?: string; says: RegExp }[] = [
  { nodes: "2 clusters", says: /"2 clusters" is not "<count> control-plane" or "<count> worker"/ },
  { nodes: "0 control-planes, 1 worker", says: /control planes must number 1 to 7, got 0/ },
  { nodes: "1 worker, 60 workers", says: /workers? is counted twice/ },
  { nodes: "1 control-plane, 51 workers", says: /workers must number 0 to 50, got 51/ },
  { nodes: "three workers", says: /"three workers" is not/ },
  {
    nodes: "1 control-plane, 1 worker",
    cluster: [
      "apiVersion: kubeforge.dev/v1alpha1",
      "kind: Cluster",
      "nodes:",
      "- {name: a, role: control-plane, host: local}",
      "",
    ].join("\n"),
    says: /the Cluster file lists nodes of its own; give the node counts or the file's nodes, not both/,
  },
];

describe("action main: the nodes input", () => {
  it.each(bad)("refuses $nodes", async ({ nodes, cluster, says }) => {
    const step = await runStep(mainJs, {
      inputs: { nodes, ...(cluster ? { cluster } : {}) },
      env: NO_ENGINE,
      timeoutMs: 60_000,
    });
    expect(step.code, stepReport(step)).toBe(1);
    const errors = step.stdout.split("\n").filter((l) => l.startsWith("::error::"));
    expect(errors, stepReport(step)).toHaveLength(1);
    expect(errors[0]).toMatch(/^::error::input nodes: /);
    expect(errors[0]).toMatch(says);
    // One sentence: the problem is not repeated per node, nor followed by an engine error.
    expect(errors[0]).not.toMatch(/%0A|docker|engine/i);
    expect(step.stdout).not.toContain("::group::");
    expect(step.state.get("outcome")).toBe("failure");
    expect(step.outputs.size).toBe(0);
    expect(step.env.size).toBe(0);
    const temp = await readdir(step.runnerTemp, { recursive: true });
    expect(temp.filter((f) => !/^kubeforge-[a-z-]+(\/kubeforge\.log)?$/.test(f))).toEqual([]);
  });

  it("expands counts to docker nodes cp-1.., w-1.. and goes to the engine for them", async () => {
    const step = await runStep(mainJs, {
      inputs: { nodes: "2 control-planes\n3 workers", name: "counted", "dry-run": "true" },
      env: NO_ENGINE,
      timeoutMs: 120_000,
    });
    expect(step.code, stepReport(step)).toBe(1);
    expect(step.stdout).toContain('[kubeforge] cluster "counted" from input nodes: 5 nodes');
    expect(step.stdout).toMatch(/: 5 nodes \(dry run/);
    const error = step.stdout.split("\n").find((l) => l.startsWith("::error::")) ?? "";
    // Every expanded node was looked for on the engine, none on the runner or over SSH.
    for (const node of ["cp-1", "cp-2", "w-1", "w-2", "w-3"]) expect(error).toContain(node);
    expect(error).not.toMatch(/cp-3|w-4/);
    expect(error).toContain("/nonexistent/kubeforge-test-docker.sock");
  });
});
