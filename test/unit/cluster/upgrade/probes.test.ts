import { XMLParser } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { probeOptions as settings } from "../../../../src/cluster/upgrade/probes/options.js";
import { microTime, stableTarget } from "../../../../src/cluster/upgrade/probes/api-targets.js";
import {
  ApiProber,
  PathUnavailable,
  STALL_MS,
  type ProbeClock,
  type ProbeTarget,
} from "../../../../src/cluster/upgrade/probes/prober.js";
import {
  checkThresholds,
  describeOutage,
  endpointTimeline,
  outagesOf,
  type ApiTimeline,
  type EndpointTimeline,
  type Sample,
} from "../../../../src/cluster/upgrade/probes/timeline.js";
import { junitXML, ReportRecorder } from "../../../../src/cluster/upgrade/report.js";
import type { KubeClient } from "../../../../src/kube/types.js";

// The API probes (kubeadm-upgrade.md §5.5): outages are runs of failed samples, from the first
// failed sample's start to the next good sample's start; every sample is tagged with the node
// steps running at that moment (ReportRecorder.current), so an outage names the step it fell
// in; the thresholds turn the longest outage through the stable endpoint into a result. Time is
// a fake clock driven by the test.

const T0 = Date.parse("2026-09-01T02:00:00Z");

/** Timers fire in order as the test advances time; nothing waits for real time. */
class FakeClock implements ProbeClock {
  t = T0;
  watchPauses?: ProbeClock["watchPauses"];
  private timers: { due: number; fire: () => void }[] = [];

  now = () => this.t;

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = { due: this.t + ms, fire: resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        "abort",
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  /** Runs every timer due up to `until`, in order, letting the promises it wakes settle. */
  async advanceTo(until: number): Promise<void> {
    for (;;) {
      await new Promise((r) => setImmediate(r));
      const due = this.timers.filter((x) => x.due <= until).sort((a, b) => a.due - b.due)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = Math.max(this.t, due.due);
      due.fire();
    }
    this.t = until;
    await new Promise((r) => setImmediate(r));
  }
}

const sample = (s: number, ok: boolean, during: string[] = [], error?: string): Sample => ({
  at: T0 + s * 1000,
  ok,
  during,
  ...(error ? { error } : {}),
});

describe("outagesOf", () => {
  it("turns each run of failed samples into one outage, attributed to every step it overlapped", () => {
    const samples = [
      sample(0, true),
      sample(0.5, false, ["cp-1 upgrade-apply"], "connection refused"),
      sample(1, false, ["cp-1 upgrade-apply"]),
      sample(1.5, false, ["cp-1 kubelet"]),
      sample(2, true, ["cp-1 kubelet"]),
      sample(2.5, false, [], "/readyz answered 500"),
      sample(3, true),
    ];
    expect(outagesOf(samples, T0 + 4000)).toEqual([
      {
        start: "2026-09-01T02:00:00.500Z",
        seconds: 1.5,
        samples: 3,
        during: ["cp-1 upgrade-apply", "cp-1 kubelet"],
        error: "connection refused",
      },
      {
        start: "2026-09-01T02:00:02.500Z",
        seconds: 0.5,
        samples: 1,
        during: [],
        error: "/readyz answered 500",
      },
    ]);
  });

  it("ends an outage no good sample ended at the end of probing", () => {
    const outages = outagesOf([sample(0, true), sample(1, false, ["w-1 drain"], "x")], T0 + 3500);
    expect(outages).toMatchObject([{ seconds: 2.5, samples: 1, during: ["w-1 drain"] }]);
  });

  it("sums an endpoint's figures and describes an outage for people", () => {
    const e = endpointTimeline(
      {
        name: "cp-1",
        kind: "control-plane",
        url: "https://10.0.0.11:6443",
        checks: "GET /readyz",
        samples: [sample(0, false, ["cp-1 upgrade-apply"], "x"), sample(24.5, true)],
      },
      T0 + 30_000,
    );
    expect(e).toMatchObject({ samples: 2, failures: 1, longestOutageSeconds: 24.5 });
    expect(describeOutage(e, e.outages[0]!)).toBe(
      "24.5 s on cp-1's endpoint during cp-1 upgrade-apply",
    );
    expect(
      describeOutage({ name: "stable", kind: "stable" }, { ...e.outages[0]!, during: [] }),
    ).toBe("24.5 s on the stable endpoint between steps");
  });
});

/** A target down while `down(now)` says so; `hang` never answers then. */
function target(clock: FakeClock, down: (t: number) => boolean, hang = false): ProbeTarget {
  return {
    name: "cp-1",
    kind: "control-plane",
    url: "https://10.0.0.11:6443",
    checks: "GET /readyz",
    check: () => {
      if (!down(clock.now() - T0)) return Promise.resolve();
      if (hang) return new Promise(() => {});
      return Promise.reject(new Error("connect ECONNREFUSED 10.0.0.11:6443\nmore"));
    },
  };
}

/**
 * The timeline of one target probed every 500 ms (timeout 2 s) up to 5 s of fake time;
 * `midway` runs once time reaches 1 s (a test stalls the runner there).
 */
async function probedFor5s(
  clock: FakeClock,
  t: ProbeTarget,
  midway?: () => void,
): Promise<EndpointTimeline> {
  const prober = new ApiProber([t], { intervalMs: 500, timeoutMs: 2000, during: () => [], clock });
  prober.start();
  if (midway) {
    await clock.advanceTo(T0 + 1000);
    midway();
  }
  await clock.advanceTo(T0 + 5000);
  return (await prober.stop()).endpoints[0]!;
}

describe("ApiProber", () => {
  it("samples every interval and attributes the outage to the step running then", async () => {
    const clock = new FakeClock();
    const report = new ReportRecorder("ci", clock.now);
    const prober = new ApiProber([target(clock, (t) => t >= 2000 && t < 4500)], {
      intervalMs: 500,
      timeoutMs: 5000,
      during: () => report.current(),
      clock,
    });
    prober.start();
    await clock.advanceTo(T0 + 1000);
    const step = report.step("cp-1", "control-plane", "upgrade-apply", () => clock.sleep(4000));
    await clock.advanceTo(T0 + 5000);
    await step;
    await clock.advanceTo(T0 + 6000);
    const timeline = await prober.stop();
    const [e] = timeline.endpoints;
    // Samples at 0, 0.5, ... 6.0 s: 13; failed at 2.0 ... 4.0 s.
    expect(e).toMatchObject({ samples: 13, failures: 5, longestOutageSeconds: 2.5 });
    expect(e!.outages).toEqual([
      {
        start: new Date(T0 + 2000).toISOString(),
        seconds: 2.5,
        samples: 5,
        during: ["cp-1 upgrade-apply"],
        error: "connect ECONNREFUSED 10.0.0.11:6443",
      },
    ]);
    expect(report.current()).toEqual([]);
  });

  it("counts a probe that outlasts the timeout as failed and does not overlap probes", async () => {
    const clock = new FakeClock();
    const e = await probedFor5s(
      clock,
      target(clock, (t) => t >= 1000 && t < 3000, true),
    );
    // 0, 0.5, 1.0 (hangs until 3.0), 3.0, 3.5, ... 5.0.
    expect(e).toMatchObject({ samples: 8, failures: 1, longestOutageSeconds: 2 });
    expect(e.outages[0]!.error).toBe("no answer within 2000 ms");
  });

  /**
   * An endpoint that is up throughout, but whose sample started at 1.0 s gets no answer; the
   * runner's event loop is blocked from 1.0 s until `resumeAt` (ms), when the 3.0 s timeout fires.
   */
  async function throughStall(resumeAt: number) {
    const clock = new FakeClock();
    return probedFor5s(
      clock,
      target(clock, (t) => t === 1000, true),
      () => {
        clock.t = T0 + resumeAt;
      },
    );
  }

  it("discards a sample whose timeout fired a second or more late: the runner stalled, not the endpoint", async () => {
    const e = await throughStall(4000);
    // 0, 0.5, (1.0 discarded), 4.0, 4.5, 5.0.
    expect(e).toMatchObject({ samples: 5, failures: 0, stalledSamples: 1, outages: [] });
    expect(STALL_MS).toBe(1000);
  });

  it("keeps a sample whose timeout fired less than a second late as a failure", async () => {
    const e = await throughStall(3900);
    expect(e).toMatchObject({ failures: 1 });
    expect(e).not.toHaveProperty("stalledSamples");
    expect(e.outages[0]!.error).toBe("no answer within 2000 ms");
  });

  /**
   * An endpoint that hangs the sample started at 1.0 s (timeout at 3.0 s, on time), while the
   * runner's event loop was held `heldMs` in the middle of it, as the runner's pause watch saw.
   */
  async function heldMidSample(heldMs: number) {
    const clock = new FakeClock();
    const windows: [number, number][] = [];
    clock.watchPauses = () => ({
      longestWithin: (from, to) => {
        windows.push([from - T0, to - T0]);
        const pause = { from: T0 + 1500, to: T0 + 1500 + heldMs };
        return pause.to >= from && pause.from <= to ? heldMs : 0;
      },
      stop: () => {},
    });
    const e = await probedFor5s(
      clock,
      target(clock, (t) => t === 1000, true),
    );
    return { e, windows };
  }

  it("discards a sample that timed out while the runner's event loop was held a second or more", async () => {
    const { e, windows } = await heldMidSample(1000);
    expect(e).toMatchObject({ failures: 0, stalledSamples: 1, outages: [] });
    // Asked about the sample's own span: from its start to its timeout.
    expect(windows).toEqual([[1000, 3000]]);
  });

  it("keeps a sample that timed out while the runner was held less than a second as a failure", async () => {
    const { e } = await heldMidSample(900);
    expect(e).toMatchObject({ failures: 1 });
    expect(e).not.toHaveProperty("stalledSamples");
    expect(e.outages[0]!.error).toBe("no answer within 2000 ms");
  });

  it("discards a sample whose path to the endpoint was down, and counts it: no outage, none closed", async () => {
    const clock = new FakeClock();
    // A workload that fails from 1.0 s to 1.5 s, reached through an API server that is down
    // from 2.0 s to 3.5 s, then fails again at 4.0 s.
    const t: ProbeTarget = {
      name: "kubeforge-canary",
      kind: "workload",
      url: "/api/v1/…/proxy/hostname",
      checks: "GET",
      check: () => {
        const at = clock.now() - T0;
        if (at >= 2000 && at < 3500) {
          return Promise.reject(new PathUnavailable("the API server did not answer"));
        }
        if ((at >= 1000 && at < 2000) || at === 4000) {
          return Promise.reject(new Error("the service proxy answered 503"));
        }
        return Promise.resolve();
      },
    };
    const e = await probedFor5s(clock, t);
    // 0 … 5.0 s is 11 samples; 2.0, 2.5, 3.0 discarded. The first outage runs from 1.0 s to the
    // next good sample (3.5 s): the unmeasured samples neither end it nor count in it.
    expect(e).toMatchObject({ samples: 8, failures: 3, unmeasuredSamples: 3 });
    expect(e.outages.map((o) => [o.start, o.seconds, o.samples])).toEqual([
      [new Date(T0 + 1000).toISOString(), 2.5, 2],
      [new Date(T0 + 4000).toISOString(), 0.5, 1],
    ]);
    expect(e).not.toHaveProperty("stalledSamples");
  });

  it("stops at once, even while a probe hangs, and keeps no sample stop interrupted", async () => {
    const clock = new FakeClock();
    const prober = new ApiProber([target(clock, (t) => t >= 1000, true)], {
      intervalMs: 500,
      timeoutMs: 60_000,
      during: () => [],
      clock,
    });
    prober.start();
    await clock.advanceTo(T0 + 2000);
    const [e] = (await prober.stop()).endpoints;
    expect(e).toMatchObject({ samples: 2, failures: 0, outages: [] });
  });
});

describe("thresholds", () => {
  const api = (longest: number): ApiTimeline => ({
    intervalMs: 500,
    endpoints: [
      endpointTimeline(
        {
          name: "stable",
          kind: "stable",
          url: "https://127.0.0.1:7443",
          checks: "read, write",
          samples: [sample(0, false, ["cp-1 upgrade-apply"], "x"), sample(longest, true)],
        },
        T0 + 60_000,
      ),
    ],
  });
  const max = { maxApiDowntime: { text: "5s", ms: 5000 } };

  it("passes at the limit and names the outage beyond it", () => {
    expect(checkThresholds(max, api(5))).toEqual([{ threshold: "max-api-downtime", limit: "5s" }]);
    expect(checkThresholds(max, api(7.5))[0]!.violation).toEqual({
      threshold: "max-api-downtime",
      limit: "5s",
      measured: "7.5s",
      message:
        "max-api-downtime 5s: the longest outage was 7.5 s on the stable endpoint during cp-1 upgrade-apply",
    });
    expect(checkThresholds(max, undefined)[0]!.violation?.measured).toBe("nothing");
    expect(checkThresholds({}, api(100))).toEqual([]);
  });

  it("a violation makes the result thresholds-violated, a failure still failed; JUnit has a case per threshold", async () => {
    const clock = new FakeClock();
    const r = new ReportRecorder("ci", clock.now);
    r.from = "v1.35.2";
    r.to = "v1.36.3";
    r.thresholds = max;
    r.api = api(7.5);
    await r.step("cp-1", "control-plane", "gate", () => Promise.resolve());
    const report = r.report();
    expect(report).toMatchObject({
      result: "thresholds-violated",
      thresholds: { maxApiDowntime: "5s" },
      violations: [{ threshold: "max-api-downtime", measured: "7.5s" }],
    });
    expect(r.report(new Error("boom")).result).toBe("failed");
    const xml = new XMLParser({ ignoreAttributes: false }).parse(junitXML(report)) as {
      testsuites: {
        testsuite: {
          "@_failures": string;
          testcase: {
            "@_classname": string;
            "@_name": string;
            failure?: { "@_message": string };
          }[];
        };
      };
    };
    const suite = xml.testsuites.testsuite;
    expect(suite["@_failures"]).toBe("1");
    expect(suite.testcase.map((c) => `${c["@_classname"]}/${c["@_name"]}`)).toEqual([
      "cp-1/gate",
      "thresholds/max-api-downtime 5s",
    ]);
    expect(suite.testcase[1]!.failure!["@_message"]).toContain("7.5 s on the stable endpoint");
    r.api = api(1);
    expect(r.report().result).toBe("succeeded");
  });
});

describe("the stable endpoint's write", () => {
  it("renews the probe Lease with a MicroTime after reading kubeadm-config", async () => {
    const calls: unknown[] = [];
    const client = {
      get: (ref: unknown) => (calls.push(["get", ref]), Promise.resolve({})),
      patch: (ref: unknown, body: unknown, type: string) => (
        calls.push(["patch", ref, body, type]),
        Promise.resolve({})
      ),
    } as unknown as KubeClient;
    await stableTarget("https://127.0.0.1:7443", client, () => T0 + 1234).check(
      new AbortController().signal,
    );
    expect(microTime(T0 + 1234)).toBe("2026-09-01T02:00:01.234000Z");
    expect(calls).toEqual([
      [
        "get",
        { apiVersion: "v1", kind: "ConfigMap", name: "kubeadm-config", namespace: "kube-system" },
      ],
      [
        "patch",
        {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          name: "kubeforge-upgrade-probe",
          namespace: "kubeforge-probes",
        },
        { spec: { renewTime: "2026-09-01T02:00:01.234000Z" } },
        "merge",
      ],
    ]);
  });
});

describe("--probe, --probe-interval, --settle, --max-api-downtime, --max-workload-*", () => {
  const base = { probes: ["api"], interval: "500ms", keep: false };
  const names = {
    probes: "--probe",
    interval: "--probe-interval",
    maxApiDowntime: "--max-api-downtime",
    settle: "--settle",
    maxWorkloadErrorRate: "--max-workload-error-rate",
    maxWorkloadDowntime: "--max-workload-downtime",
  };
  const probeOptions = (s: Parameters<typeof settings>[0]) => settings(s, names);

  it("turns the flags into options", () => {
    expect(probeOptions({ ...base, maxApiDowntime: "5s", keep: true })).toEqual({
      apiProbes: { intervalMs: 500, keep: true },
      thresholds: { maxApiDowntime: { text: "5s", ms: 5000 } },
    });
    expect(probeOptions({ ...base, probes: ["none"] })).toEqual({ thresholds: {} });
  });

  it("takes a list: api,workload probes both, the settle gate 5m unless --settle says", () => {
    expect(
      probeOptions({
        ...base,
        probes: ["api", "workload"],
        maxWorkloadErrorRate: "1%",
        maxWorkloadDowntime: "2s",
      }),
    ).toEqual({
      apiProbes: { intervalMs: 500, keep: false },
      workloadProbes: { intervalMs: 500, keep: false, settleMs: 300_000 },
      thresholds: {
        maxWorkloadErrorRate: { text: "1%", rate: 0.01 },
        maxWorkloadDowntime: { text: "2s", ms: 2000 },
      },
    });
    expect(
      probeOptions({ ...base, probes: ["workload"], settle: "90s", maxWorkloadErrorRate: "0.25" }),
    ).toEqual({
      workloadProbes: { intervalMs: 500, keep: false, settleMs: 90_000 },
      thresholds: { maxWorkloadErrorRate: { text: "0.25", rate: 0.25 } },
    });
  });

  it("dns goes with the workload canary", () => {
    expect(probeOptions({ ...base, probes: ["api", "workload", "dns"] })).toEqual({
      apiProbes: { intervalMs: 500, keep: false },
      workloadProbes: { intervalMs: 500, keep: false, settleMs: 300_000, dns: true },
      thresholds: {},
    });
    expect(
      probeOptions({ ...base, probes: ["workload"] }).workloadProbes?.dns,
      "not without asking",
    ).toBeUndefined();
  });

  it("refuses what it cannot do, naming the flag", () => {
    expect(() => probeOptions({ ...base, probes: ["dnz"] })).toThrow(
      '--probe: "dnz" is not a probe kubeforge has; give api, workload, dns (a list) or none',
    );
    // The lookup runs in the canary's Pods.
    expect(() => probeOptions({ ...base, probes: ["api", "dns"] })).toThrow(
      "--probe: dns looks up from the workload canary's Pods; name workload too (api,workload,dns)",
    );
    expect(() => probeOptions({ ...base, probes: ["none"], maxApiDowntime: "5s" })).toThrow(
      "--max-api-downtime: needs the api probe, and --probe does not name it",
    );
    expect(() => probeOptions({ ...base, maxWorkloadErrorRate: "0.1" })).toThrow(
      "--max-workload-error-rate: needs the workload probe, and --probe does not name it",
    );
    expect(() =>
      probeOptions({ ...base, probes: ["workload"], maxWorkloadErrorRate: "150%" }),
    ).toThrow(
      '--max-workload-error-rate: "150%" is not an error rate; give a share from 0 to 1 or 0% to 100%',
    );
    expect(() =>
      probeOptions({ ...base, probes: ["workload"], maxWorkloadDowntime: "-1s" }),
    ).toThrow('--max-workload-downtime: "-1s" is negative');
    expect(() => probeOptions({ ...base, settle: "later" })).toThrow(/--settle/);
    expect(() => probeOptions({ ...base, interval: "10ms" })).toThrow(
      '--probe-interval: "10ms" is below 100ms',
    );
    expect(() => probeOptions({ ...base, maxApiDowntime: "soon" })).toThrow(/--max-api-downtime/);
  });
});
