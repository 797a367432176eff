import { XMLParser } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { junitXML, ReportRecorder } from "../../../../src/cluster/upgrade/report.js";

// The UpgradeReport (kubeadm-upgrade.md §5.6) and its JUnit twin: steps timed with the clock
// given, a failed step recorded with its message and rethrown, one test case per node × step.

function clock(): () => number {
  let t = Date.parse("2026-09-01T02:00:00Z");
  return () => (t += 1500);
}

describe("ReportRecorder", () => {
  it("times each step, records failures and rethrows them", async () => {
    const r = new ReportRecorder("ci", clock());
    r.from = "v1.35.2";
    r.to = "v1.36.3";
    await r.step(
      "cp-1",
      "control-plane",
      "upgrade-apply",
      () => Promise.resolve(3),
      (n) => `${n} things`,
    );
    await expect(
      r.step("w-1", "worker", "drain", () => Promise.reject(new Error("pod a/b blocked\nmore"))),
    ).rejects.toThrow("pod a/b blocked");
    const report = r.report(new Error("drain of w-1 failed"));
    expect(report).toMatchObject({
      apiVersion: "kubeforge.dev/v1alpha1",
      kind: "UpgradeReport",
      result: "failed",
      error: "drain of w-1 failed",
      nodes: [
        {
          name: "cp-1",
          steps: [
            {
              name: "upgrade-apply",
              startedAt: "2026-09-01T02:00:03.000Z",
              seconds: 1.5,
              result: "ok",
              detail: "3 things",
            },
          ],
        },
        {
          name: "w-1",
          result: "failed",
          steps: [{ name: "drain", result: "failed", detail: "pod a/b blocked" }],
        },
      ],
    });
  });

  it("lists a node's overlapping steps in the order they started, whichever ended first", async () => {
    const r = new ReportRecorder("ci", clock());
    let finish!: () => void;
    const long = r.step(
      "w-1",
      "worker",
      "upgrade-node",
      () => new Promise<void>((resolve) => (finish = resolve)),
    );
    await r.step("w-1", "worker", "cordon", () => Promise.resolve());
    const drain = r.step("w-1", "worker", "drain", () => Promise.resolve());
    await drain;
    finish();
    await long;
    await r.step("w-1", "worker", "kubelet", () => Promise.resolve());
    const steps = r.report().nodes[0]!.steps;
    expect(steps.map((s) => s.name)).toEqual(["upgrade-node", "cordon", "drain", "kubelet"]);
    // upgrade-node's end was read last of the three: it spans the other two.
    expect(steps[0]!.seconds).toBeGreaterThan(steps[1]!.seconds + steps[2]!.seconds);
  });

  it("writes JUnit with one test case per step, failures as <failure>, text escaped", async () => {
    const r = new ReportRecorder("ci", clock());
    r.from = "v1.35.2";
    r.to = "v1.36.3";
    await r.step("cp-1", "control-plane", "gate", () => Promise.resolve());
    await r
      .step("w-1", "worker", "drain", () => Promise.reject(new Error('PDB "a<b>"')))
      .catch(() => {});
    const xml = junitXML(r.report(new Error("x")));
    const parsed = new XMLParser({ ignoreAttributes: false }).parse(xml) as {
      testsuites: {
        testsuite: {
          "@_name": string;
          "@_tests": string;
          "@_failures": string;
          testcase: {
            "@_classname": string;
            "@_name": string;
            failure?: { "@_message": string };
          }[];
        };
      };
    };
    const suite = parsed.testsuites.testsuite;
    expect(suite["@_name"]).toBe("upgrade-v1.35.2-v1.36.3");
    expect([suite["@_tests"], suite["@_failures"]]).toEqual(["2", "1"]);
    expect(
      suite.testcase.map((c) => [c["@_classname"], c["@_name"], c.failure?.["@_message"]]),
    ).toEqual([
      ["cp-1", "gate", undefined],
      ["w-1", "drain", 'PDB "a<b>"'],
    ]);
  });

  it("counts a run stopped outside any step as a failure of its own", () => {
    const r = new ReportRecorder("ci", clock());
    const xml = junitXML(r.report(new Error("the cluster is not at v1.36.3")));
    expect(xml).toContain('tests="1" failures="1"');
    expect(xml).toContain('<failure message="the cluster is not at v1.36.3"/>');
  });
});
