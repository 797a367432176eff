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
import { ApiProber } from "../../../src/cluster/upgrade/probes/prober.js";
import type { ApiTimeline } from "../../../src/cluster/upgrade/probes/timeline.js";
import { ReportRecorder } from "../../../src/cluster/upgrade/report.js";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import type { KubeClient } from "../../../src/kube/types.js";
import { runPhase } from "../../support/init-fixtures.js";
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

describe("API probes against the simulated API server", () => {
  let timeline: ApiTimeline;

  beforeAll(async () => {
    const url = `https://127.0.0.1:${cp.port}`;
    const access = new NodeClusterAccess(cp.data.host, { requestTimeoutMs: 2000 });
    await createProbeObjects(admin);
    const report = new ReportRecorder("sim");
    const prober = new ApiProber(
      [
        readyzTarget("cp-1", url, await access.clientFor(SUPER_ADMIN, { server: url })),
        stableTarget(url, await access.clientFor(SUPER_ADMIN)),
      ],
      { intervalMs: INTERVAL_MS, timeoutMs: 2000, during: () => report.current() },
    );
    prober.start();
    await sleep(500);
    await report.step("cp-1", "control-plane", "upgrade-apply", async () => {
      cp.api.faults.setReadyz(false);
      await sleep(1000);
      cp.api.faults.setReadyz(true);
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
    const direct = timeline.endpoints.find((e) => e.name === "cp-1")!;
    expect(direct).toMatchObject({ kind: "control-plane", checks: "GET /readyz" });
    expect(direct.outages.map((o) => o.during)).toEqual([["cp-1 upgrade-apply"], ["cp-1 kubelet"]]);
    const [notReady, dropped] = direct.outages;
    // /readyz failed for 1 s: the outage lasts from the first failed sample to the next good one.
    expect(notReady!.seconds).toBeGreaterThanOrEqual(0.9);
    expect(notReady!.seconds).toBeLessThan(1 + 3 * (INTERVAL_MS / 1000));
    expect(notReady!.error).toMatch(/^\/readyz answered 500: readyz check failed/);
    // Three dropped connections: three failed samples in a row.
    expect(dropped!.samples).toBe(3);
    expect(dropped!.error).toMatch(
      /^getting \/readyz: no response from https:\/\/127\.0\.0\.1:\d+/,
    );
    expect(direct.failures).toBe(notReady!.samples + 3);
    expect(direct.longestOutageSeconds).toBe(notReady!.seconds);
  });

  it("sees the stable endpoint's reads dropped during the drain, and nothing while /readyz failed", () => {
    const stable = timeline.endpoints.find((e) => e.kind === "stable")!;
    expect(stable.outages).toHaveLength(1);
    expect(stable.outages[0]).toMatchObject({ samples: 3, during: ["w-1 drain"] });
    expect(stable.outages[0]!.error).toContain("kubeadm-config");
    expect(stable.failures).toBe(3);
    expect(stable.samples).toBeGreaterThan(25);
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
