import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createProbeObjects,
  PROBE_LEASE,
  PROBE_NAMESPACE,
  readyzTarget,
  removeProbeObjects,
  stableTarget,
} from "../../../src/cluster/upgrade/probes/api-targets.js";
import { ApiProber, type ProbeTarget } from "../../../src/cluster/upgrade/probes/prober.js";
import {
  workloadTimeline,
  type ApiTimeline,
} from "../../../src/cluster/upgrade/probes/timeline.js";
import {
  canaryNodePort,
  canaryTarget,
} from "../../../src/cluster/upgrade/probes/workload-targets.js";
import { chooseCanaryTarget } from "../../../src/cluster/upgrade/probes/node-port.js";
import { directConnect } from "../../../src/cluster/upgrade/probes/node-port-request.js";
import { DNS_COMMAND, dnsTarget } from "../../../src/cluster/upgrade/probes/dns-target.js";
import {
  commandTarget,
  createUserObjects,
  removeUserObjects,
  userRequestTarget,
} from "../../../src/cluster/upgrade/probes/user-targets.js";
import { userWorkloadsFromManifest } from "../../../src/cluster/upgrade/probes/user-workloads.js";
import { CANARY_NAME } from "../../../src/manifests/probe-canary.js";
import {
  DisruptionWatcher,
  type DisruptionReport,
} from "../../../src/cluster/upgrade/disruptions.js";
import { drain } from "../../../src/cluster/upgrade/drain.js";
import { ReportRecorder } from "../../../src/cluster/upgrade/report.js";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import type { KubeClient, ObjectRef } from "../../../src/kube/types.js";
import { runPhase } from "../../support/init-fixtures.js";
import { canaryServiceTo } from "../../support/canary-service.js";
import { freePort } from "../../support/ports.js";
import {
  initPhase,
  startInProcessControlPlane,
  type InProcessControlPlane,
} from "../../support/sim-control-plane.js";

// The API probes against the simulated kube-apiserver, with the real transport (a KubeClient
// from the node's kubeconfig, as the cluster upgrade makes them) and real time: while a step
// runs, the test breaks what that step would break — /readyz failing, then /readyz connections
// dropped, then the stable endpoint's reads dropped — and the timeline must show one outage per
// fault, on the endpoint it hit, attributed to exactly the step that ran, and nothing else.

const INTERVAL_MS = 100;
/** The prober takes a sample's time a moment before the check this test records starts. */
const CLOCK_SLACK_MS = 20;
const SUPER_ADMIN = "/etc/kubernetes/super-admin.conf";

let cp: InProcessControlPlane;
let admin: KubeClient;

beforeAll(async () => {
  cp = await startInProcessControlPlane();
  admin = await new NodeClusterAccess(cp.data.host).clientFor(SUPER_ADMIN);
  // kube-system/kubeadm-config, which the stable endpoint's probe reads, as init uploads it.
  await runPhase(initPhase("upload-config"), cp.data);
}, 60_000);

afterAll(async () => {
  await cp?.stop();
});

/** Waits until the fault injected last is used up (each drop consumed one request). */
async function faultsUsed(): Promise<void> {
  await cp.api.store.waitFor(
    () => (cp.api.faults.unused().length === 0 ? true : undefined),
    10_000,
    "the injected faults to be hit",
  );
}

/** A target whose checks' start times the test sees: the prober's cadence as it really ran. */
function recorded(t: ProbeTarget): { target: ProbeTarget; starts: number[] } {
  const starts: number[] = [];
  return {
    starts,
    target: {
      ...t,
      check: (signal) => {
        starts.push(Date.now());
        return t.check(signal);
      },
    },
  };
}

/** The gap between the two sample starts around `at`: how late the prober could see a change. */
function gapAround(starts: readonly number[], at: number): number {
  const next = starts.findIndex((s) => s >= at);
  if (next <= 0)
    throw new Error(`no sample started on both sides of ${new Date(at).toISOString()}`);
  return starts[next]! - starts[next - 1]!;
}

describe("API probes against the simulated API server", () => {
  let timeline: ApiTimeline;
  /** When /readyz started and stopped failing, as the test switched it. */
  const notReadyFault = { from: 0, to: 0 };
  let direct: ReturnType<typeof recorded>;
  let stable: ReturnType<typeof recorded>;
  const stepsSampledByStable = new Set<string>();

  beforeAll(async () => {
    const url = `https://127.0.0.1:${cp.port}`;
    const access = new NodeClusterAccess(cp.data.host, { requestTimeoutMs: 2000 });
    await createProbeObjects(admin);
    const report = new ReportRecorder("sim");
    direct = recorded(
      readyzTarget("cp-1", url, await access.clientFor(SUPER_ADMIN, { server: url })),
    );
    const stableProbe = recorded(stableTarget(url, await access.clientFor(SUPER_ADMIN)));
    stable = {
      ...stableProbe,
      target: {
        ...stableProbe.target,
        check: (signal) => {
          for (const step of report.current()) stepsSampledByStable.add(step);
          return stableProbe.target.check(signal);
        },
      },
    };
    const prober = new ApiProber([direct.target, stable.target], {
      intervalMs: INTERVAL_MS,
      timeoutMs: 2000,
      during: () => report.current(),
    });
    prober.start();
    await sleep(500);
    await report.step("cp-1", "control-plane", "upgrade-apply", async () => {
      cp.api.faults.setReadyz(false);
      notReadyFault.from = Date.now();
      // A full second by Date.now(): a timer counts from the event loop's cached time, which
      // may already be a millisecond behind, and can fire at 999 ms by the wall clock.
      while (Date.now() - notReadyFault.from < 1000) {
        await sleep(1000 - (Date.now() - notReadyFault.from));
      }
      cp.api.faults.setReadyz(true);
      notReadyFault.to = Date.now();
    });
    await sleep(500);
    await report.step("cp-1", "control-plane", "kubelet", async () => {
      cp.api.faults.inject({ pathPrefix: "/readyz", respond: "drop", times: 3 });
      await faultsUsed();
    });
    await sleep(500);
    await report.step("w-1", "worker", "drain", async () => {
      cp.api.faults.inject({
        method: "GET",
        pathPrefix: "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
        respond: "drop",
        times: 3,
      });
      await faultsUsed();
    });
    await sleep(500);
    timeline = await prober.stop();
  }, 60_000);

  it("sees /readyz failing, then its connections dropped, on cp-1's endpoint, each in its step", () => {
    const cp1 = timeline.endpoints.find((e) => e.name === "cp-1")!;
    expect(cp1).toMatchObject({ kind: "control-plane", checks: "GET /readyz" });
    expect(cp1.outages.map((o) => o.during)).toEqual([["cp-1 upgrade-apply"], ["cp-1 kubelet"]]);
    const [notReady, dropped] = cp1.outages;
    // The outage lasts from the first failed sample to the next good one, so it is as long as
    // the fault, give or take the gap between the samples around each of its ends: the prober's
    // cadence as it really ran, which a loaded machine stretches beyond the interval.
    const fault = notReadyFault.to - notReadyFault.from;
    const slack =
      gapAround(direct.starts, notReadyFault.from) + gapAround(direct.starts, notReadyFault.to);
    expect(fault).toBeGreaterThanOrEqual(1000);
    expect(notReady!.seconds * 1000).toBeGreaterThanOrEqual(fault - slack - CLOCK_SLACK_MS);
    expect(notReady!.seconds * 1000).toBeLessThanOrEqual(fault + slack + CLOCK_SLACK_MS);
    expect(notReady!.error).toMatch(/^\/readyz answered 500: readyz check failed/);
    // Three dropped connections: three failed samples in a row.
    expect(dropped!.samples).toBe(3);
    expect(dropped!.error).toMatch(
      /^getting \/readyz: no response from https:\/\/127\.0\.0\.1:\d+/,
    );
    expect(cp1.failures).toBe(notReady!.samples + 3);
    expect(cp1.longestOutageSeconds).toBe(notReady!.seconds);
  });

  it("sees the stable endpoint's reads dropped during the drain, and nothing while /readyz failed", () => {
    const endpoint = timeline.endpoints.find((e) => e.kind === "stable")!;
    expect(endpoint.outages).toHaveLength(1);
    expect(endpoint.outages[0]).toMatchObject({ samples: 3, during: ["w-1 drain"] });
    expect(endpoint.outages[0]!.error).toContain("kubeadm-config");
    expect(endpoint.failures).toBe(3);
    // Its loop did not wait for cp-1's: it sampled during every step, /readyz's failure included,
    // and every sample it started is counted (or discarded as the runner's stall) but the one stop()
    // may have cut short.
    expect([...stepsSampledByStable].sort()).toEqual([
      "cp-1 kubelet",
      "cp-1 upgrade-apply",
      "w-1 drain",
    ]);
    const kept = endpoint.samples + (endpoint.stalledSamples ?? 0);
    expect(kept).toBeGreaterThanOrEqual(stable.starts.length - 1);
    expect(kept).toBeLessThanOrEqual(stable.starts.length);
  });

  it("renewed the probe Lease with each good sample; the namespace goes with its Lease", async () => {
    const lease = cp.api.store.get({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      namespace: PROBE_NAMESPACE,
      name: PROBE_LEASE,
    }) as unknown as { spec: { renewTime: string } };
    // The Lease was renewed in the last interval of probing (the last samples were good).
    expect(Date.now() - Date.parse(lease.spec.renewTime)).toBeLessThan(5_000);
    await removeProbeObjects(admin);
    expect(
      cp.api.store.get({ apiVersion: "v1", kind: "Namespace", name: PROBE_NAMESPACE }),
    ).toBeUndefined();
    expect(
      cp.api.store.get({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        namespace: PROBE_NAMESPACE,
        name: PROBE_LEASE,
      }),
    ).toBeUndefined();
    // Removing what is gone already is no error (a second stop, a user who deleted it).
    await removeProbeObjects(admin);
  });
});

describe("the canary's request through the simulated API server's service proxy", () => {
  // The Pod behind the Service is this test's HTTP server, and the test writes the Service's
  // Endpoints as the endpoints controller would for one Ready Pod: the simulated cluster runs no
  // Deployment's Pods (SIMULATION LIMIT). What is real: the client, the proxy path, the API
  // server's resolution of the Service's named port through its Endpoints, the forwarding.
  let pod: Server;
  let port: number;
  let timeline: ApiTimeline;

  const servePod = () =>
    new Promise<void>((resolve) => {
      pod = createServer((req, res) => {
        res.end(req.url === "/hostname" ? "kubeforge-canary-7d9f-abcde" : "404");
      });
      pod.listen(port, "127.0.0.1", () => resolve());
    });

  beforeAll(async () => {
    await createProbeObjects(admin);
    port = await freePort();
    await servePod();
    await canaryServiceTo(admin, port);
    const report = new ReportRecorder("sim");
    const prober = new ApiProber([canaryTarget(admin)], {
      intervalMs: INTERVAL_MS,
      timeoutMs: 2000,
      during: () => report.current(),
    });
    prober.start();
    await sleep(500);
    await report.step("w-1", "worker", "drain", async () => {
      // The Pod's container stops: the Endpoints still name it, the proxy cannot reach it.
      await new Promise((r) => pod.close(r));
      await sleep(600);
      await servePod();
    });
    await sleep(500);
    await report.step("w-2", "worker", "drain", async () => {
      // No Ready Pod left: the endpoints controller empties the subsets.
      await admin.patch(
        { apiVersion: "v1", kind: "Endpoints", namespace: PROBE_NAMESPACE, name: CANARY_NAME },
        { subsets: [] },
        "merge",
      );
      await sleep(600);
      await admin.patch(
        { apiVersion: "v1", kind: "Endpoints", namespace: PROBE_NAMESPACE, name: CANARY_NAME },
        { subsets: [{ addresses: [{ ip: "127.0.0.1" }], ports: [{ name: "http", port }] }] },
        "merge",
      );
    });
    await sleep(500);
    await report.step("cp-1", "control-plane", "upgrade-apply", async () => {
      // The API server cannot proxy: first its etcd errors (a Status of its own), then its
      // connections drop. The Pod is fine throughout: nothing is charged to the workload.
      const proxyPath = `/api/v1/namespaces/${PROBE_NAMESPACE}/services/`;
      cp.api.faults.inject({
        pathPrefix: proxyPath,
        respond: { code: 500, message: "etcdserver: leader changed" },
        times: 2,
      });
      await faultsUsed();
      cp.api.faults.inject({ pathPrefix: proxyPath, respond: "drop", times: 2 });
      await faultsUsed();
    });
    await sleep(500);
    timeline = await prober.stop();
  }, 60_000);

  afterAll(async () => {
    await new Promise((r) => pod?.close(r));
    await removeProbeObjects(admin);
  });

  it("reaches the Pod by the Service's port name, and each outage is in the step that caused it", () => {
    const canary = workloadTimeline(timeline.endpoints[0]!);
    expect(canary).toMatchObject({ name: CANARY_NAME, kind: "workload" });
    // The whole timeline in the message: a load-dependent failure here must say what it saw.
    expect(
      canary.outages.map((o) => o.during),
      JSON.stringify(canary.outages),
    ).toEqual([["w-1 drain"], ["w-2 drain"]]);
    const [refused, none] = canary.outages;
    expect(refused!.error).toMatch(
      // Refused once the Pod's server is gone; reset (connecting, or reading a kept-alive
      // connection) or hung up when it closes mid-request.
      /^the service proxy answered 503: .*error trying to reach service: (connect ECONNREFUSED|(connect|read) ECONNRESET|socket hang up)/,
    );
    expect(none!.error).toMatch(
      /^the service proxy answered 503: .*no endpoints available for service \\"kubeforge-canary\\"/,
    );
    // The four requests the API server could not proxy are not the workload's: not counted.
    expect(canary.unmeasuredSamples, JSON.stringify(canary)).toBe(4);
    expect(canary.samples - canary.failures).toBeGreaterThan(10);
    expect(canary.errorRate).toBe(Math.round((canary.failures / canary.samples) * 10_000) / 10_000);
  });

  it("is the path when no node answers on the node port the API server allocated, and the log says why", async () => {
    const nodePort = (await canaryNodePort(admin))!;
    // kube-apiserver's default --service-node-port-range.
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    expect(nodePort).toBeLessThanOrEqual(32767);
    const lines: string[] = [];
    const target = await chooseCanaryTarget(
      {
        port: nodePort,
        // A node whose address serves no NodePort (nothing listens there: refused).
        candidates: [
          {
            name: "w-1",
            address: "127.0.0.9",
            routes: [{ via: "direct", connect: directConnect }],
          },
        ],
        proxied: () => Promise.resolve(canaryTarget(admin)),
        running: () => [],
        timeoutMs: 2000,
        log: (l) => lines.push(l),
      },
      { timeoutMs: 1000, retryForMs: 0, retryEveryMs: 100 },
    );
    expect(lines).toEqual([
      `no node answered on NodePort ${nodePort} (w-1: connect ECONNREFUSED 127.0.0.9:${nodePort}); through the API server's service proxy`,
    ]);
    expect(target.url).toBe(
      `/api/v1/namespaces/${PROBE_NAMESPACE}/services/${CANARY_NAME}:http/proxy/hostname`,
    );
    await expect(target.check(new AbortController().signal)).resolves.toBeUndefined();
  });
});

describe("the DNS lookup in a canary Pod through the simulated API server's service proxy", () => {
  // The canary Pod is this test's HTTP server answering as agnhost netexec's /shell does
  // (test/images/agnhost/netexec/netexec.go shellHandler: it runs `cmd` and answers JSON
  // {"output", "error"} at 200, empty fields left out, "error" set when the command failed);
  // what dig prints is dig's (bind9's) output for an answer, a timeout (exit status 9, "no
  // servers could be reached") and a name with no address (exit 0, nothing printed), as
  // dns-lookup.test.ts sees real dig do. SIMULATION LIMIT: no CoreDNS and no dig run here; what
  // is real is the client, the proxy path with its query, the API server's forwarding, the
  // parsing.
  let pod: Server;
  let port: number;
  let timeline: ApiTimeline;
  let answer: "address" | "timeout" | "no address" = "address";
  const commands: string[] = [];

  const servePod = () =>
    new Promise<void>((resolve) => {
      pod = createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://pod");
        if (url.pathname !== "/shell") return res.writeHead(404).end("404 page not found");
        commands.push(url.searchParams.get("cmd") ?? "");
        const body =
          answer === "address"
            ? { output: "10.96.0.1\n" }
            : answer === "timeout"
              ? {
                  output:
                    ";; communications error to 10.96.0.10#53: timed out\n;; no servers could be reached\n",
                  error: "exit status 9",
                }
              : {};
        res.writeHead(200).end(JSON.stringify(body));
      });
      pod.listen(port, "127.0.0.1", () => resolve());
    });

  beforeAll(async () => {
    await createProbeObjects(admin);
    port = await freePort();
    await servePod();
    await canaryServiceTo(admin, port);
    const report = new ReportRecorder("sim");
    const prober = new ApiProber([dnsTarget(admin)], {
      intervalMs: INTERVAL_MS,
      timeoutMs: 2000,
      during: () => report.current(),
    });
    prober.start();
    await sleep(500);
    // CoreDNS rolled out by the last control plane's addon phase: lookups time out a while...
    await report.step("cp-1", "control-plane", "upgrade-apply", async () => {
      answer = "timeout";
      await sleep(600);
      answer = "address";
    });
    await sleep(500);
    // ...or answer without an address.
    await report.step("cp-2", "control-plane", "upgrade-node", async () => {
      answer = "no address";
      await sleep(600);
      answer = "address";
    });
    await sleep(500);
    timeline = await prober.stop();
  }, 60_000);

  afterAll(async () => {
    await new Promise((r) => pod?.close(r));
    await removeProbeObjects(admin);
  });

  it("asks dig through the Pod's search path, both families, one try", () => {
    expect(new Set(commands)).toEqual(new Set([DNS_COMMAND]));
    expect(DNS_COMMAND).toBe(
      "dig +short +search +tries=1 +time=1 kubernetes.default A kubernetes.default AAAA",
    );
  });

  it("sees each failed lookup in the step that caused it, saying what dig said", () => {
    const dns = timeline.endpoints[0]!;
    expect(dns).toMatchObject({ name: "dns", kind: "dns" });
    expect(dns.outages.map((o) => o.during)).toEqual([
      ["cp-1 upgrade-apply"],
      ["cp-2 upgrade-node"],
    ]);
    const [timedOut, none] = dns.outages;
    expect(timedOut!.error).toBe(
      "the lookup of kubernetes.default failed (exit status 9): ;; no servers could be reached",
    );
    expect(none!.error).toBe("the lookup of kubernetes.default found no address: an empty answer");
    expect(dns.samples - dns.failures).toBeGreaterThan(10);
  });
});

describe("the user's probe manifest and command against the simulated API server", () => {
  // The manifest: a Namespace, a Service annotated with a path (asked through the service proxy;
  // its Pod is this test's server behind Endpoints the test writes, as in the canary's case), a
  // ConfigMap without a namespace, and a Service already deployed by an "earlier step", which
  // must be left as it is. A URL asked from the runner and a command complete the probe. Each
  // step breaks one of them; each outage must fall in that step, on that target only.
  const NS = "shop";
  let pod: Server;
  let podPort: number;
  let direct: Server;
  let directOk = true;
  let marker: string;
  let timeline: ApiTimeline;
  let created: ObjectRef[];

  const listen = (server: Server, port: number) =>
    new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
  const servePod = async () => {
    pod = createServer((req, res) => {
      res.statusCode = req.url === "/healthz" ? 200 : 404;
      res.end();
    });
    await listen(pod, podPort);
  };

  const manifest = (directURL: string) => `apiVersion: v1
kind: Namespace
metadata: { name: ${NS} }
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: ${NS}
  annotations: { kubeforge.dev/probe-url: /healthz, kubeforge.dev/probe-port: http }
spec:
  ports: [{ name: metrics, port: 9090 }, { name: http, port: 80 }]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: probe-settings
  annotations: { kubeforge.dev/probe-url: "${directURL}" }
data: { mode: probe }
---
apiVersion: v1
kind: Service
metadata: { name: deployed-before, namespace: default }
spec:
  ports: [{ name: http, port: 8080 }]
`;

  beforeAll(async () => {
    podPort = await freePort();
    await servePod();
    direct = createServer((_req, res) => {
      res.statusCode = directOk ? 204 : 500;
      res.end();
    });
    await listen(direct, await freePort());
    const directURL = `http://127.0.0.1:${(direct.address() as AddressInfo).port}/ping`;
    marker = join(await mkdtemp(join(tmpdir(), "kubeforge-probe-")), "up");
    await writeFile(marker, "");
    // Deployed by an earlier step, with a label the manifest does not have.
    await admin.create({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "deployed-before", namespace: "default", labels: { owner: "user" } },
      spec: { ports: [{ name: "http", port: 8080 }] },
    });
    const user = userWorkloadsFromManifest(manifest(directURL), "probes.yaml");
    created = await createUserObjects(admin, user.objects);
    await admin.create({
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { name: "web", namespace: NS },
      subsets: [{ addresses: [{ ip: "127.0.0.1" }], ports: [{ name: "http", port: podPort }] }],
    });
    const report = new ReportRecorder("sim");
    const prober = new ApiProber(
      [
        ...user.requests.map((r) => userRequestTarget(admin, r)),
        commandTarget(`test -f ${marker}`),
      ],
      { intervalMs: INTERVAL_MS, timeoutMs: 2000, during: () => report.current() },
    );
    prober.start();
    await sleep(500);
    await report.step("w-1", "worker", "drain", async () => {
      await new Promise((r) => pod.close(r));
      await sleep(600);
      await servePod();
    });
    await sleep(500);
    await report.step("w-2", "worker", "drain", async () => {
      directOk = false;
      await sleep(600);
      directOk = true;
    });
    await sleep(500);
    await report.step("w-3", "worker", "drain", async () => {
      await rm(marker);
      await sleep(600);
      await writeFile(marker, "");
    });
    await sleep(500);
    timeline = await prober.stop();
  }, 60_000);

  afterAll(async () => {
    await new Promise((r) => pod?.close(r));
    await new Promise((r) => direct?.close(r));
    await rm(dirname(marker), { recursive: true, force: true });
    await admin
      .delete({ apiVersion: "v1", kind: "Service", namespace: "default", name: "deployed-before" })
      .catch(() => {});
  });

  it("created what was missing, namespaced objects without one in default, and left the deployed Service alone", async () => {
    expect(created).toEqual([
      { apiVersion: "v1", kind: "Namespace", name: NS },
      { apiVersion: "v1", kind: "Service", name: "web", namespace: NS },
      { apiVersion: "v1", kind: "ConfigMap", name: "probe-settings", namespace: "default" },
    ]);
    const before = await admin.get({
      apiVersion: "v1",
      kind: "Service",
      namespace: "default",
      name: "deployed-before",
    });
    expect(before.metadata.labels).toEqual({ owner: "user" });
  });

  it("attributes each target's outage to the step that broke it, and only that one", () => {
    const byName = new Map(timeline.endpoints.map((e) => [e.name, workloadTimeline(e)]));
    expect([...byName.keys()]).toEqual([`${NS}/web`, "default/probe-settings", "probe-command"]);
    expect(byName.get(`${NS}/web`)!.outages.map((o) => o.during)).toEqual([["w-1 drain"]]);
    expect(byName.get(`${NS}/web`)!.outages[0]!.error).toMatch(
      /^the service proxy answered 503: .*error trying to reach service/,
    );
    expect(byName.get("default/probe-settings")!.outages.map((o) => o.during)).toEqual([
      ["w-2 drain"],
    ]);
    expect(byName.get("default/probe-settings")!.outages[0]!.error).toMatch(/answered 500$/);
    expect(byName.get("probe-command")!.outages.map((o) => o.during)).toEqual([["w-3 drain"]]);
    expect(byName.get("probe-command")!.outages[0]!.error).toBe("the probe command exited with 1");
    // Up before and after its outage (a command spawned every 100 ms is slow on a loaded machine).
    for (const e of byName.values()) expect(e.samples - e.failures).toBeGreaterThan(3);
  });

  it("removes what it created, newest first, and nothing else", async () => {
    await removeUserObjects(admin, created);
    for (const ref of created.slice(1)) {
      await expect(admin.get(ref)).rejects.toThrow(/not ?found/i);
    }
    await expect(
      admin.get({
        apiVersion: "v1",
        kind: "Service",
        namespace: "default",
        name: "deployed-before",
      }),
    ).resolves.toBeDefined();
    // A second removal finds them gone and is fine.
    await removeUserObjects(admin, created);
  });
});

describe("disruption accounting from watches of the simulated API server", () => {
  // The test plays the kubelet: Pod status (Ready, restartCount) through the status
  // subresource, w-1's Node Ready or not, and the final delete of an evicted Pod once "stopped";
  // it also plays the scheduler for the Deployment's Pods (this control plane runs none). The
  // simulated Deployment controller (sim/apiserver/controllers/workloads.ts) counts its
  // ReplicaSet's Pods' readiness as its unavailable replicas, and the eviction goes through the
  // API's eviction subresource, as a drain's does. client-node's informers list and watch for
  // real.
  const NS = "default";
  const pod = (name: string) => ({ apiVersion: "v1", kind: "Pod", namespace: NS, name });
  const node = { apiVersion: "v1", kind: "Node", name: "w-1" };
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", namespace: NS, name: "web" };
  const readiness = (ready: boolean, restarts = 0) => ({
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
      containerStatuses: [{ name: "c", ready, restartCount: restarts }],
    },
  });
  const asKubelet = (ref: { apiVersion: string; kind: string; name: string }, patch: unknown) =>
    cp.api.store.patch(ref, patch, "merge", { subresource: "status" });
  const nodeReady = (ready: boolean) =>
    asKubelet(node, {
      status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
    });
  /** The Deployment once its controller reports `unavailable` replicas. */
  const deploymentWith = async (unavailable: number) => {
    const until = Date.now() + 10_000;
    for (;;) {
      const d = cp.api.store.get(deployment) as unknown as {
        metadata: { resourceVersion?: string };
        status?: { unavailableReplicas?: number; replicas?: number };
      };
      if (d.status?.replicas === 2 && (d.status.unavailableReplicas ?? 0) === unavailable) return d;
      if (Date.now() > until) throw new Error(`web never had ${unavailable} unavailable`);
      await sleep(20);
    }
  };
  /** The Deployment's Pods (its ReplicaSet's: they carry the pod-template-hash label). */
  const webReplicas = () =>
    cp.api.store
      .list("v1", "Pod", { namespace: NS })
      .filter((p) => p.metadata.labels?.["pod-template-hash"] !== undefined);
  /** The kubelet of w-1 reports the Deployment's Pods (Ready or not). */
  const replicasReady = (ready: boolean) => {
    for (const p of webReplicas()) asKubelet(pod(p.metadata.name), readiness(ready));
  };
  let report: DisruptionReport;

  beforeAll(async () => {
    cp.api.store.create({ apiVersion: "v1", kind: "Node", metadata: { name: "w-1" } });
    nodeReady(true);
    // "guarded"'s node: a Pod bound to no Node is the pod garbage collector's to delete
    // (sim/apiserver/controllers/pod-gc.ts), which left w-2's drain nothing to be refused.
    cp.api.store.create({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "w-2" },
      status: { conditions: [{ type: "Ready", status: "True" }] },
    });
    for (const name of ["web", "blip", "gone"]) {
      cp.api.store.create({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: NS, labels: { app: name } },
        spec: {
          nodeName: "w-1",
          containers: [{ name: "c", image: "registry.k8s.io/pause:3.10.1" }],
        },
      });
      asKubelet(pod(name), readiness(true));
    }
    cp.api.store.create({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "c", image: "registry.k8s.io/pause:3.10.1" }] },
        },
      },
    });
    // Its ReplicaSet's two Pods, bound to w-1 and run there.
    await cp.api.store.waitFor(() => (webReplicas().length === 2 ? true : undefined), 10_000);
    for (const p of webReplicas()) {
      cp.api.store.patch(pod(p.metadata.name), { spec: { nodeName: "w-1" } }, "merge");
    }
    replicasReady(true);
    await deploymentWith(0);
    cp.api.store.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "guarded", namespace: NS, labels: { app: "guarded" } },
      spec: { nodeName: "w-2", containers: [{ name: "c", image: "registry.k8s.io/pause:3.10.1" }] },
    });
    asKubelet(pod("guarded"), readiness(true));
    await admin.create({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "guarded", namespace: NS },
      spec: { minAvailable: 1, selector: { matchLabels: { app: "guarded" } } },
    });
    const recorder = new ReportRecorder("sim");
    // The watcher's client, telling the test how far the watches have brought it.
    let seenRevision = 0;
    const seenEvents = new Set<string>();
    const watching: KubeClient = new Proxy(admin, {
      get: (target, key) =>
        key === "watch"
          ? (...[apiVersion, kind, on, opts]: Parameters<NonNullable<KubeClient["watch"]>>) =>
              target.watch!(
                apiVersion,
                kind,
                (type, obj) => {
                  on(type, obj);
                  seenRevision = Math.max(seenRevision, Number(obj.metadata.resourceVersion));
                  seenEvents.add(`${type} ${kind} ${obj.metadata.name}`);
                },
                opts,
              )
          : (Reflect.get(target, key) as unknown),
    });
    const watcher = new DisruptionWatcher({
      client: watching,
      during: () => recorder.current(),
      notReadyAfterMs: 400,
    });
    await watcher.start();
    // A change is in the step that made it once the watcher has seen it.
    const seen = async (o: { metadata: { resourceVersion?: string } }) => {
      const want = Number(o.metadata.resourceVersion);
      const until = Date.now() + 10_000;
      while (seenRevision < want && Date.now() < until) await sleep(20);
      expect(seenRevision).toBeGreaterThanOrEqual(want);
    };
    const status = (ref: ReturnType<typeof pod>, patch: unknown) => seen(asKubelet(ref, patch));
    await recorder.step("w-1", "worker", "drain", async () => {
      await admin.createSubresource(pod("gone"), "eviction", {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name: "gone", namespace: NS },
      });
      // The API server marks the bound Pod for deletion; its kubelet stops it and deletes it.
      const marked = cp.api.store.get(pod("gone"));
      expect(marked?.metadata.deletionTimestamp).toBeDefined();
      cp.api.store.delete(pod("gone"), { preconditions: { uid: String(marked!.metadata.uid) } });
      // The DisruptionTarget condition, then the deletion. (Not the store's latest revision: a
      // write of a kind the watcher does not watch, such as an earlier test's clean-up, may
      // come after it.)
      const until = Date.now() + 10_000;
      while (!seenEvents.has("delete Pod gone") && Date.now() < until) await sleep(20);
      expect([...seenEvents]).toContain("delete Pod gone");
      await status(pod("web"), readiness(false));
      await status(pod("blip"), readiness(false));
      await status(pod("blip"), readiness(true));
      await sleep(600);
      await status(pod("web"), readiness(true));
    });
    await recorder.step("w-2", "worker", "drain", async () => {
      // A budget that allows no disruption of "guarded": the drain is refused, and says so.
      await expect(
        drain(admin, "w-2", 1_000, (p, reason) => watcher.evictionRefused(p, "w-2", reason)),
      ).rejects.toThrow(
        `drain of w-2 failed: pod ${NS}/guarded could not be evicted within 1s: PodDisruptionBudget ${NS}/guarded allows no disruption`,
      );
    });
    await recorder.step("w-1", "worker", "kubelet", async () => {
      await status(pod("web"), readiness(true, 1));
      // The kubelet restarting: its Node NotReady for a moment, its Pods with it.
      nodeReady(false);
      replicasReady(false);
      await seen(await deploymentWith(2));
      nodeReady(true);
      replicasReady(true);
    });
    await seen(await deploymentWith(0));
    report = watcher.stop();
  }, 60_000);

  it("counts the eviction, the restart, the Pod NotReady too long and the unavailable replica, each in its step", () => {
    const found = report.disruptions.map((d) => [d.kind, d.object, d.during]);
    expect(found).toEqual([
      ["eviction", `Pod ${NS}/gone`, ["w-1 drain"]],
      ["not-ready", `Pod ${NS}/web`, ["w-1 drain"]],
      ["eviction-refused", `Pod ${NS}/guarded`, ["w-2 drain"]],
      ["restart", `Pod ${NS}/web`, ["w-1 kubelet"]],
      ["unavailable", `Deployment ${NS}/web`, ["w-1 kubelet"]],
    ]);
    expect(report.counts).toEqual({
      eviction: 1,
      "eviction-refused": 1,
      restart: 1,
      "not-ready": 1,
      unavailable: 1,
    });
    // The API's own 429 message, as the simulated API server gives kube-apiserver's.
    expect(report.disruptions[2]).toMatchObject({
      node: "w-2",
      detail: expect.stringMatching(
        /^refused 1 time\(s\): .*Cannot evict pod as it would violate the pod's disruption budget\./,
      ) as unknown,
    });
    const [evicted, notReady, , restart] = report.disruptions;
    expect(evicted).toMatchObject({ node: "w-1", detail: "EvictionByEvictionAPI" });
    // blip was NotReady for less than the 400 ms the watcher was given: not counted.
    expect(notReady!.seconds).toBeGreaterThanOrEqual(0.4);
    expect(restart!.detail).toBe("container c restarted 1 time(s)");
  });
});
