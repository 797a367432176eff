import { describe, expect, it } from "vitest";
import type { ClusterReading, NodeReading } from "../../../../src/cluster/upgrade/data.js";
import { junitXML, ReportRecorder } from "../../../../src/cluster/upgrade/report.js";
import { resolveRoute, routeStart, viaOption } from "../../../../src/cluster/upgrade/route.js";
import { offlineResolution } from "../../../../src/config/versions.js";

// A chained upgrade's route: one minor per hop, as kubeadm's policy allows
// (phases/upgrade/policy.go MaximumAllowedMinorVersionUpgradeSkew = 1). Labels resolve through
// a resolver like --to's; here the version table's answer (what an offline run gets).

const resolved: string[] = [];
const resolve = (spec: string) => {
  resolved.push(spec);
  return Promise.resolve(
    spec.startsWith("stable-") ? offlineResolution(spec).version : spec.replace(/^(?!v)/, "v"),
  );
};

const reading = (clusterVersion: string, nodes: Partial<NodeReading>[] = []): ClusterReading => ({
  clusterVersion,
  nodes: nodes.map((n, i) => ({
    name: `n${i}`,
    role: "worker",
    kubeletVersion: clusterVersion,
    ready: true,
    ...n,
  })),
  etcdProblem: undefined,
  addons: {},
});

describe("--via", () => {
  it("auto goes through the newest patch the resolver gives for every minor in between", async () => {
    resolved.length = 0;
    expect(await resolveRoute("ci", "v1.34.7", "v1.36.3", "auto", resolve)).toEqual([
      "v1.35.8",
      "v1.36.3",
    ]);
    expect(resolved).toEqual(["stable-1.35"]);
    expect(await resolveRoute("ci", "v1.33.13", "v1.36.3", "auto", resolve)).toEqual([
      "v1.34.7",
      "v1.35.8",
      "v1.36.3",
    ]);
    // One minor: one hop, as without --via.
    expect(await resolveRoute("ci", "v1.35.0", "v1.36.3", "auto", resolve)).toEqual(["v1.36.3"]);
  });

  it("takes the versions given, and refuses a hop of two minors naming --via", async () => {
    expect(await resolveRoute("ci", "v1.34.7", "v1.36.3", ["v1.35.2"], resolve)).toEqual([
      "v1.35.2",
      "v1.36.3",
    ]);
    await expect(resolveRoute("ci", "v1.33.1", "v1.36.3", ["v1.35.2"], resolve)).rejects.toThrow(
      "--via v1.35.2 is 2 minors above the cluster's v1.33.1: kubeforge upgrades one minor per hop; upgrade to v1.34 first, or give --via auto to go through every minor in one run",
    );
    await expect(resolveRoute("ci", "v1.34.7", "v1.37.1", ["v1.35.2"], resolve)).rejects.toThrow(
      "--to v1.37.1 is 2 minors above the cluster's v1.35.2",
    );
    await expect(resolveRoute("ci", "v1.34.7", "v1.36.3", ["v1.36.5"], resolve)).rejects.toThrow(
      "--via v1.36.5 is not below the target v1.36.3",
    );
    await expect(
      resolveRoute("ci", "v1.34.7", "v1.36.3", ["v1.35.8", "v1.35.2"], resolve),
    ).rejects.toThrow("--via: the versions must go up, and v1.35.2 comes after v1.35.8");
  });

  it("resumes inside the route: hops the cluster passed are dropped", async () => {
    // The second hop started (cp's marker), kubeadm-config not yet moved.
    const mid = reading("v1.35.2", [
      { marker: { from: "v1.35.2", to: "v1.36.3", step: "started" } },
    ]);
    expect(routeStart(mid)).toBe("v1.36.3");
    expect(await resolveRoute("ci", routeStart(mid), "v1.36.3", ["v1.35.2"], resolve)).toEqual([
      "v1.36.3",
    ]);
    // The first hop finished: it stays, every node skips it.
    expect(routeStart(reading("v1.35.2"))).toBe("v1.35.2");
    expect(await resolveRoute("ci", "v1.35.2", "v1.36.3", ["v1.35.2"], resolve)).toEqual([
      "v1.35.2",
      "v1.36.3",
    ]);
  });

  it("reads the flag: auto alone, or versions as --to takes them", () => {
    expect(viaOption(["auto"], "--via")).toBe("auto");
    expect(viaOption(["1.35", "v1.35.2"], "--via")).toEqual(["stable-1.35", "v1.35.2"]);
    expect(() => viaOption(["auto", "v1.35.2"], "--via")).toThrow(
      "--via: auto goes alone, without versions",
    );
    expect(() => viaOption(["banana"], "input upgrade-via")).toThrow(/^input upgrade-via: /);
  });
});

describe("the report of a chained run", () => {
  it("lists the hops in order and tags each step with its hop; JUnit tells them apart", async () => {
    let now = 0;
    const r = new ReportRecorder("ci", () => now);
    r.route(["v1.35.8", "v1.36.3"]);
    r.startHop(0, "v1.34.7");
    await r.step("cp", "control-plane", "upgrade-apply", () => {
      now += 2000;
      return Promise.resolve();
    });
    r.endHop(0);
    r.startHop(1, "v1.35.8");
    await r
      .step("cp", "control-plane", "upgrade-apply", () => {
        now += 1000;
        return Promise.reject(new Error("boom"));
      })
      .catch(() => undefined);
    const report = r.report(new Error("boom"));
    expect(report.hops).toEqual([
      {
        from: "v1.34.7",
        to: "v1.35.8",
        startedAt: new Date(0).toISOString(),
        durationSeconds: 2,
        result: "succeeded",
      },
      {
        from: "v1.35.8",
        to: "v1.36.3",
        startedAt: new Date(2000).toISOString(),
        durationSeconds: 1,
        result: "failed",
      },
    ]);
    expect(report.nodes[0]!.steps.map((s) => [s.hop, s.name, s.result])).toEqual([
      ["v1.35.8", "upgrade-apply", "ok"],
      ["v1.36.3", "upgrade-apply", "failed"],
    ]);
    expect(junitXML(report)).toContain('name="v1.36.3 upgrade-apply"');
  });
});
