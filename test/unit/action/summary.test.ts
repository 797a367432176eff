import { describe, expect, it } from "vitest";
import { summaryHTML, type SummaryInput } from "../../../src/action/summary.js";

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
  files: [],
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
