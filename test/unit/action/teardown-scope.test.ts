import { describe, expect, it } from "vitest";
import { selfHostedRunner, teardownScope } from "../../../src/action/teardown-scope.js";
import type { ClusterNodeSpec } from "../../../src/config/cluster/types.js";

// What the post step tears down, by the teardown input and the kind of runner.

const nodes = [
  { name: "runner", role: "control-plane", host: "local" },
  { name: "vm-1", role: "worker", host: "ssh://ci@10.0.0.2" },
  { name: "box-1", role: "worker", host: "docker" },
] as ClusterNodeSpec[];

const names = (s: { covered: ClusterNodeSpec[]; kept: ClusterNodeSpec[] }) => ({
  covered: s.covered.map((n) => n.name),
  kept: s.kept.map((n) => n.name),
});

describe("teardownScope", () => {
  it.each([
    ["auto", { RUNNER_ENVIRONMENT: "github-hosted" }, ["vm-1", "box-1"], ["runner"]],
    ["auto", {}, ["vm-1", "box-1"], ["runner"]],
    ["auto", { RUNNER_ENVIRONMENT: "self-hosted" }, ["runner", "vm-1", "box-1"], []],
    ["always", { RUNNER_ENVIRONMENT: "github-hosted" }, ["runner", "vm-1", "box-1"], []],
    ["never", { RUNNER_ENVIRONMENT: "self-hosted" }, [], ["runner", "vm-1", "box-1"]],
  ] as const)("%s on %j", (teardown, env, covered, kept) => {
    expect(names(teardownScope(nodes, teardown, env))).toEqual({ covered, kept });
  });

  it("a runner is self-hosted when it says anything but github-hosted", () => {
    expect(selfHostedRunner({ RUNNER_ENVIRONMENT: "self-hosted" })).toBe(true);
    expect(selfHostedRunner({ RUNNER_ENVIRONMENT: "github-hosted" })).toBe(false);
    expect(selfHostedRunner({ RUNNER_ENVIRONMENT: "" })).toBe(false);
    expect(selfHostedRunner({})).toBe(false);
  });
});
