import { XMLParser } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { PathUnavailable } from "../../../../src/cluster/upgrade/probes/prober.js";
import { unsettled } from "../../../../src/cluster/upgrade/probes/settle.js";
import {
  checkThresholds,
  endpointTimeline,
  errorRate,
  workloadTimeline,
  type Sample,
  type WorkloadsTimeline,
} from "../../../../src/cluster/upgrade/probes/timeline.js";
import {
  availabilityRecorder,
  canaryTarget,
} from "../../../../src/cluster/upgrade/probes/workload-targets.js";
import { junitXML, ReportRecorder } from "../../../../src/cluster/upgrade/report.js";
import { apiErrorFromNetwork } from "../../../../src/kube/errors.js";
import type { KubeClient, KubeObject } from "../../../../src/kube/types.js";
import {
  CANARY_IMAGE,
  canaryObjects,
  canaryReplicas,
  serviceProxyPath,
} from "../../../../src/manifests/probe-canary.js";

// The workload probes (kubeadm-upgrade.md §5.5): the canary's objects, the request a sample makes
// through the API server's service proxy, the availability recorded as changes, the figures
// (error rate, outages attributed like the API's), the per-workload thresholds and the settle
// gate's reading of DaemonSets and Deployments.

const T0 = Date.parse("2026-09-01T02:00:00Z");

const sample = (s: number, ok: boolean, during: string[] = [], error?: string): Sample => ({
  at: T0 + s * 1000,
  ok,
  during,
  ...(error ? { error } : {}),
});

describe("the canary's objects", () => {
  interface Selector {
    matchLabels: Record<string, string>;
  }
  interface Deployment extends KubeObject {
    spec: {
      selector: Selector;
      template: {
        metadata: { labels: Record<string, string> };
        spec: { containers: object[]; topologySpreadConstraints: object[] };
      };
    };
  }
  const [deployment, budget, service] = canaryObjects("kubeforge-probes", 3) as [
    Deployment,
    KubeObject & { spec: object },
    KubeObject & { spec: object },
  ];

  it("a Deployment of agnhost netexec spread over the nodes, one replica per worker, at least two", () => {
    expect(canaryReplicas(1)).toBe(2);
    expect(canaryReplicas(5)).toBe(5);
    expect(deployment).toMatchObject({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "kubeforge-canary", namespace: "kubeforge-probes" },
      spec: {
        replicas: 3,
        selector: { matchLabels: { "app.kubernetes.io/name": "kubeforge-canary" } },
      },
    });
    const pod = deployment.spec.template.spec;
    expect(pod.containers[0]).toMatchObject({
      image: CANARY_IMAGE,
      args: ["netexec", "--http-port=8080"],
      ports: [{ name: "http", containerPort: 8080 }],
    });
    // The tag Kubernetes' own e2e suite pins (test/utils/image/manifest.go).
    expect(CANARY_IMAGE).toBe("registry.k8s.io/e2e-test-images/agnhost:2.52");
    expect(pod.topologySpreadConstraints[0]).toMatchObject({
      maxSkew: 1,
      topologyKey: "kubernetes.io/hostname",
    });
    // The template's labels carry the selector's (apps/v1 validation requires it).
    expect(deployment.spec.template.metadata.labels).toMatchObject(
      deployment.spec.selector.matchLabels,
    );
  });

  it("a budget that lets a drain take one replica, a NodePort Service on the container's named port", () => {
    expect(budget).toMatchObject({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      spec: { maxUnavailable: 1, selector: deployment.spec.selector },
    });
    // No nodePort: the API server allocates one. Cluster: any node forwards to a ready Pod
    // anywhere (docs "Service": externalTrafficPolicy).
    expect(service.spec).toEqual({
      type: "NodePort",
      externalTrafficPolicy: "Cluster",
      selector: deployment.spec.selector.matchLabels,
      ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }],
    });
  });

  it("is reached through the API server's service proxy by port name", () => {
    expect(serviceProxyPath("kubeforge-probes", "kubeforge-canary", "http", "/hostname")).toBe(
      "/api/v1/namespaces/kubeforge-probes/services/kubeforge-canary:http/proxy/hostname",
    );
    expect(serviceProxyPath("ns", "svc", "8080", "healthz")).toBe(
      "/api/v1/namespaces/ns/services/svc:8080/proxy/healthz",
    );
  });
});

/** A client answering getRaw and get from tables; everything else is not used. */
function fakeClient(
  raw: (path: string) => { status: number; body: string },
  objects: (kind: string) => KubeObject[] = () => [],
): KubeClient {
  return {
    description: "fake",
    getRaw: (path: string) => Promise.resolve(raw(path)),
    get: (ref: { kind: string; name: string }) => {
      const o = objects(ref.kind).find((x) => x.metadata.name === ref.name);
      return o
        ? Promise.resolve(o)
        : Promise.reject(new Error(`${ref.kind} ${ref.name} not found`));
    },
    list: (_v: string, kind: string) => Promise.resolve(objects(kind)),
  } as unknown as KubeClient;
}

describe("a workload sample", () => {
  it("asks the service proxy; anything but 200 fails with what the proxy said", async () => {
    const asked: string[] = [];
    let status = 200;
    const t = canaryTarget(
      fakeClient((p) => {
        asked.push(p);
        return {
          status,
          body:
            status === 200
              ? "kubeforge-canary-abc"
              : 'no endpoints available for service "kubeforge-canary"\n',
        };
      }),
    );
    await t.check(new AbortController().signal);
    status = 503;
    await expect(t.check(new AbortController().signal)).rejects.toThrow(
      'the service proxy answered 503: no endpoints available for service "kubeforge-canary"',
    );
    expect(asked).toEqual([
      "/api/v1/namespaces/kubeforge-probes/services/kubeforge-canary:http/proxy/hostname",
      "/api/v1/namespaces/kubeforge-probes/services/kubeforge-canary:http/proxy/hostname",
    ]);
    expect(t.kind).toBe("workload");
  });

  it("tells the workload's failures from the API server's: what the API server could not proxy is not measured", async () => {
    const status = (code: number, message: string) => ({
      status: code,
      body: JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, code }),
    });
    let answer: () => { status: number; body: string } = () => ({ status: 200, body: "" });
    const t = canaryTarget(fakeClient(() => answer()));
    const check = () => t.check(new AbortController().signal);
    const outcome = () =>
      check().then(
        () => "up",
        (e: unknown) =>
          e instanceof PathUnavailable
            ? `unmeasured: ${e.message}`
            : `failed: ${(e as Error).message}`,
      );
    // The workload's failures, as the service proxy reports them, and the Pod's own answers.
    answer = () => status(503, 'no endpoints available for service "kubeforge-canary"');
    expect(await outcome()).toMatch(/^failed: the service proxy answered 503: /);
    answer = () =>
      status(
        503,
        "error trying to reach service: dial tcp 10.251.1.101:8080: connect: connection refused",
      );
    expect(await outcome()).toMatch(/^failed: .*error trying to reach service/);
    answer = () => ({ status: 500, body: "the app broke\n" });
    expect(await outcome()).toBe("failed: the service proxy answered 500: the app broke");
    answer = () => status(404, 'services "kubeforge-canary" not found');
    expect(await outcome()).toMatch(/^failed: the service proxy answered 404/);
    // The API server's own: its etcd down, overloaded, not reached at all.
    answer = () => status(500, "Internal error occurred: etcdserver: leader changed");
    expect(await outcome()).toBe(
      "unmeasured: the API server could not proxy: 500 Internal error occurred: etcdserver: leader changed",
    );
    answer = () => status(429, "Too many requests, please try again later.");
    expect(await outcome()).toMatch(/^unmeasured: the API server could not proxy: 429 /);
    // No answer within the client's time limit: the API server may be waiting on a Pod that
    // hangs, so it is the workload's failure.
    answer = () => {
      throw apiErrorFromNetwork(
        { verb: "get", path: "/api/v1/…/proxy/hostname" },
        "https://10.0.0.11:6443",
        new DOMException("The operation timed out.", "TimeoutError"),
        5000,
      );
    };
    expect(await outcome()).toMatch(/^failed: .*the request got no answer within 5s$/);
    answer = () => {
      throw new Error("connect ECONNREFUSED 10.0.0.11:6443\nstack");
    };
    expect(await outcome()).toBe(
      "unmeasured: the API server did not answer: connect ECONNREFUSED 10.0.0.11:6443",
    );
  });

  it("records available replicas as changes only", async () => {
    let available = 3;
    let t = T0;
    const client = fakeClient(
      () => ({ status: 200, body: "" }),
      () => [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "kubeforge-canary", namespace: "kubeforge-probes" },
          spec: { replicas: 3 },
          status: { availableReplicas: available },
        },
      ],
    );
    const r = availabilityRecorder(client, "kubeforge-probes", "kubeforge-canary", () => t);
    const signal = new AbortController().signal;
    for (const a of [3, 3, 2, 2, 3]) {
      available = a;
      await r.target.check(signal);
      t += 500;
    }
    expect(r.changes).toEqual([
      { at: "2026-09-01T02:00:00.000Z", available: 3, desired: 3 },
      { at: "2026-09-01T02:00:01.000Z", available: 2, desired: 3 },
      { at: "2026-09-01T02:00:02.000Z", available: 3, desired: 3 },
    ]);
  });
});

describe("workload figures and thresholds", () => {
  const canary = (samples: Sample[]): WorkloadsTimeline => ({
    intervalMs: 500,
    workloads: [
      workloadTimeline(
        endpointTimeline(
          {
            name: "kubeforge-canary",
            kind: "workload",
            url: "/api/v1/...",
            checks: "GET",
            samples,
          },
          T0 + 10_000,
        ),
        [{ at: new Date(T0).toISOString(), available: 2, desired: 2 }],
      ),
    ],
  });
  const tenWithTwoDown = canary([
    ...[0, 0.5, 1, 1.5].map((s) => sample(s, true)),
    sample(2, false, ["w-1 drain"], "the service proxy answered 503"),
    sample(2.5, false, ["w-1 drain"]),
    ...[3, 3.5, 4, 4.5].map((s) => sample(s, true)),
  ]);

  it("an error rate of failed requests, outages attributed as the API's", () => {
    expect(errorRate(0, 0)).toBe(0);
    expect(errorRate(3, 1)).toBe(0.3333);
    const w = tenWithTwoDown.workloads[0]!;
    expect(w).toMatchObject({ samples: 10, failures: 2, errorRate: 0.2, longestOutageSeconds: 1 });
    expect(w.outages[0]).toMatchObject({ during: ["w-1 drain"], samples: 2 });
    expect(w.availability).toHaveLength(1);
  });

  it("holds or names each workload beyond --max-workload-error-rate and --max-workload-downtime", () => {
    const thresholds = {
      maxWorkloadErrorRate: { text: "10%", rate: 0.1 },
      maxWorkloadDowntime: { text: "1s", ms: 1000 },
    };
    expect(checkThresholds(thresholds, undefined, tenWithTwoDown)).toEqual([
      {
        threshold: "max-workload-error-rate",
        limit: "10%",
        violation: {
          threshold: "max-workload-error-rate",
          limit: "10%",
          measured: "0.2",
          message:
            "max-workload-error-rate 10%: the workload kubeforge-canary failed 2 of 10 requests (error rate 0.2)",
        },
      },
      // 1 s exactly is held.
      { threshold: "max-workload-downtime", limit: "1s" },
    ]);
    expect(
      checkThresholds({ maxWorkloadDowntime: { text: "0s", ms: 0 } }, undefined, tenWithTwoDown)[0]!
        .violation?.message,
    ).toBe(
      "max-workload-downtime 0s: the longest outage was 1 s on the workload kubeforge-canary during w-1 drain",
    );
    expect(
      checkThresholds(thresholds, undefined, undefined).map((o) => o.violation?.measured),
    ).toEqual(["nothing", "nothing"]);
  });

  it("the report carries the workloads, the thresholds as given and a JUnit case each", () => {
    const r = new ReportRecorder("ci", () => T0);
    r.thresholds = { maxWorkloadErrorRate: { text: "0.1", rate: 0.1 } };
    r.workloads = tenWithTwoDown;
    const report = r.report();
    expect(report).toMatchObject({
      result: "thresholds-violated",
      thresholds: { maxWorkloadErrorRate: "0.1" },
      workloads: { workloads: [{ name: "kubeforge-canary", errorRate: 0.2 }] },
      violations: [{ threshold: "max-workload-error-rate", measured: "0.2" }],
    });
    const xml = new XMLParser({ ignoreAttributes: false }).parse(junitXML(report)) as {
      testsuites: { testsuite: { testcase: { "@_classname": string; "@_name": string } } };
    };
    expect(xml.testsuites.testsuite.testcase).toMatchObject({
      "@_classname": "thresholds",
      "@_name": "max-workload-error-rate 0.1",
    });
  });
});

describe("the settle gate's reading", () => {
  const ds = (name: string, desired: number, ready: number, unavailable = 0): KubeObject => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name, namespace: "kube-system" },
    status: {
      desiredNumberScheduled: desired,
      numberReady: ready,
      numberUnavailable: unavailable,
    },
  });
  const deploy = (available: number): KubeObject => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "kubeforge-canary", namespace: "kubeforge-probes" },
    spec: { replicas: 2 },
    status: { availableReplicas: available },
  });
  const canary = [{ namespace: "kubeforge-probes", name: "kubeforge-canary" }];

  it("names each DaemonSet short of Ready Pods and each workload short of its replicas", async () => {
    const client = (objs: KubeObject[]) =>
      fakeClient(
        () => ({ status: 200, body: "" }),
        (kind) => objs.filter((o) => o.kind === kind),
      );
    expect(await unsettled(client([ds("kube-proxy", 3, 3), deploy(2)]), canary)).toEqual([]);
    expect(
      await unsettled(client([ds("kube-proxy", 3, 2, 1), ds("kindnet", 3, 3), deploy(1)]), canary),
    ).toEqual([
      "DaemonSet kube-system/kube-proxy has 2 of 3 Pods Ready",
      "Deployment kubeforge-probes/kubeforge-canary has 1 of 2 replicas available",
    ]);
  });
});
