import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultJoinConfig, joinInitConfig } from "../../../src/config/join-defaults.js";
import type { JoinConfig } from "../../../src/config/types.js";
import { releaseFor } from "../../../src/config/versions.js";
import {
  stackedEtcdThrough,
  type StackedEtcdAccess,
  type StackedEtcdTimeouts,
} from "../../../src/etcd/access.js";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import { ETCD_CLIENT_URLS_ANNOTATION } from "../../../src/manifests/etcd.js";
import { clusterAdminsBinding } from "../../../src/manifests/rbac.js";
import { KeyPool } from "../../../src/pki/keys.js";
import type { JoinData } from "../../../src/phases/join/data.js";
import { joinPhases } from "../../../src/phases/join/index.js";
import { Runner } from "../../../src/workflow/runner.js";
import { recordingLogger } from "../../support/init-fixtures.js";
import { freePorts } from "../../support/ports.js";
import {
  startInProcessControlPlane,
  type InProcessControlPlane,
} from "../../support/sim-control-plane.js";

// The phases of a control-plane join after kubelet-start — control-plane-prepare/control-plane,
// etcd-join, control-plane-join, wait-control-plane — run by the real Runner on a joining node
// (cp-2) whose admin.conf reaches the simulated API server in this process. The node has what a
// joining control plane has (certificates, admin.conf) and not super-admin.conf, which only
// `init` writes. The etcd cluster itself is replaced by a recorder of what the phases ask of it;
// how the real access honours its timeouts is checked against the simulated API server below.

const JOIN_TIMEOUTS = {
  controlPlaneComponentHealthCheck: "5s",
  kubernetesAPICall: "7s",
  etcdAPICall: "9s",
};
const CLUSTER_ROLE_BINDINGS = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

let cp: InProcessControlPlane;
let data: JoinData;
const etcdCalls: { call: string; timeouts: StackedEtcdTimeouts }[] = [];

/** What the phases ask of the etcd cluster; etcd-join writes the manifest as a real join does. */
const recordingEtcd: StackedEtcdAccess = {
  checkClusterHealth(_admin, _tls, timeouts) {
    etcdCalls.push({ call: "checkClusterHealth", timeouts });
    return Promise.resolve();
  },
  async joinMember(_admin, _tls, timeouts, member) {
    etcdCalls.push({ call: "joinMember", timeouts });
    const members = [{ name: member.nodeName, peerURL: member.peerURL }];
    await member.writeManifest(members);
    return members;
  },
};

function joinData(cfg: JoinConfig, kcmPort: number, schedulerPort: number): JoinData {
  const version = "v1.35.0";
  const release = releaseFor(version);
  const initCfg = joinInitConfig(
    cfg,
    {
      cluster: {
        kubernetesVersion: version,
        controlPlaneEndpoint: `127.0.0.1:${cp.port}`,
        // Ports nothing listens on: these components never become healthy here.
        controllerManager: { extraArgs: [{ name: "secure-port", value: String(kcmPort) }] },
        scheduler: { extraArgs: [{ name: "secure-port", value: String(schedulerPort) }] },
      },
    },
    { resolved: { version, release, source: "test" } },
  );
  const unused = () => Promise.reject(new Error("not used after kubelet-start"));
  return {
    cfg,
    host: cp.data.host,
    api: cp.data.api,
    etcd: recordingEtcd,
    dryRun: false,
    patchesDir: undefined,
    runnerFiles: cp.data.runnerFiles,
    ignorePreflightErrors: new Set(),
    certificateKey: undefined,
    proxyEnv: {},
    keys: new KeyPool(),
    output: () => undefined,
    now: () => new Date(),
    tlsBootstrap: unused,
    bootstrapClient: unused,
    clusterConfig: () => Promise.resolve({ cfg: initCfg, release }),
  };
}

function runJoinPhases(filterPhases: string[]) {
  const runner = new Runner(joinPhases(), recordingLogger());
  return runner.run(data, { filterPhases });
}

function startupThreshold(pod: unknown): number | undefined {
  return (pod as { spec: { containers: { startupProbe?: { failureThreshold: number } }[] } }).spec
    .containers[0]!.startupProbe?.failureThreshold;
}

beforeAll(async () => {
  cp = await startInProcessControlPlane();
  const [kcmPort, schedulerPort] = await freePorts(2);
  // What init left behind: the kubeadm:cluster-admins binding, and this node's Node object
  // (its kubelet registered it during kubelet-wait-bootstrap).
  cp.api.store.create(clusterAdminsBinding());
  cp.api.store.create({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "cp-2", labels: { "kubernetes.io/hostname": "cp-2" } },
  });
  await rm(join(cp.root, "etc/kubernetes/super-admin.conf"));
  // Any POST of a ClusterRoleBinding by a phase would use up this fault; init's admin client
  // starts with one (EnsureAdminClusterRoleBinding), kubeadm join's data.Client() makes none.
  cp.api.faults.inject({
    method: "POST",
    pathPrefix: CLUSTER_ROLE_BINDINGS,
    times: 1,
    respond: { code: 500 },
  });
  const cfg = defaultJoinConfig(
    {
      ignoredKinds: [],
      join: {
        discovery: {
          bootstrapToken: {
            token: "abcdef.0123456789abcdef",
            apiServerEndpoint: `127.0.0.1:${cp.port}`,
            unsafeSkipCAVerification: true,
          },
        },
        controlPlane: { localAPIEndpoint: { advertiseAddress: "127.0.0.1", bindPort: cp.port } },
        nodeRegistration: { name: "cp-2" },
        timeouts: JOIN_TIMEOUTS,
      },
    },
    { nodeName: "cp-2" },
  );
  data = joinData(cfg, kcmPort!, schedulerPort!);
}, 60_000);

afterAll(async () => {
  await cp?.stop();
});

describe("a control-plane join's phases after kubelet-start", () => {
  it("render static Pods whose startup probes last the join's controlPlaneComponentHealthCheck", async () => {
    await runJoinPhases(["control-plane-prepare/control-plane", "etcd-join"]);
    for (const component of ["kube-apiserver", "kube-controller-manager", "etcd"]) {
      const pod = load(
        await readFile(join(cp.root, `etc/kubernetes/manifests/${component}.yaml`), "utf8"),
      );
      // kubeadm: ceil(5 s / 10 s period); the default 4m0s would give 24.
      expect([component, startupThreshold(pod)]).toEqual([component, 1]);
    }
  });

  it("give the etcd client the join's kubernetesAPICall and etcdAPICall", async () => {
    etcdCalls.length = 0;
    await runJoinPhases(["check-etcd", "etcd-join"]);
    const timeouts = { kubernetesAPICallMs: 7_000, etcdAPICallMs: 9_000 };
    expect(etcdCalls).toEqual([
      { call: "checkClusterHealth", timeouts },
      { call: "joinMember", timeouts },
    ]);
  });

  it("mark the control plane through admin.conf as it is: no phase wrote a ClusterRoleBinding", async () => {
    await runJoinPhases(["control-plane-join"]);
    expect(cp.api.faults.unused()).toEqual([
      expect.objectContaining({ method: "POST", pathPrefix: CLUSTER_ROLE_BINDINGS }),
    ]);
    cp.api.faults.clear();
    const node = cp.api.store.get({ apiVersion: "v1", kind: "Node", name: "cp-2" }) as unknown as {
      metadata: { labels: Record<string, string> };
      spec: { taints?: { key: string; effect: string }[] };
    };
    expect(node.metadata.labels["node-role.kubernetes.io/control-plane"]).toBe("");
    expect(node.spec.taints).toEqual([
      { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
    ]);
  });

  it("wait for the components within the join's controlPlaneComponentHealthCheck, not the kubelet", async () => {
    const started = Date.now();
    const failure = await runJoinPhases(["wait-control-plane"]).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(failure?.message).toMatch(
      /^error execution phase wait-control-plane: control plane components not healthy after 5s: kube-controller-manager, kube-scheduler\n/,
    );
    // kube-apiserver (this process's simulated one) answered; the default would wait 4m0s.
    expect(failure?.message).not.toContain("kube-apiserver check failed");
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});

describe("the stacked etcd access", () => {
  async function access() {
    const admin = await kubeClientFromKubeConfig(
      await readFile(join(cp.root, "etc/kubernetes/admin.conf"), "utf8"),
      { description: "admin.conf" },
    );
    const pki = (f: string) => readFile(join(cp.pki, f), "utf8");
    const tls = {
      ca: await pki("etcd/ca.crt"),
      cert: await pki("etcd/healthcheck-client.crt"),
      key: await pki("etcd/healthcheck-client.key"),
    };
    return { admin, tls };
  }

  it("looks for the etcd Pods' endpoints for kubernetesAPICall", async () => {
    const { admin, tls } = await access();
    const started = Date.now();
    await expect(
      stackedEtcdThrough().checkClusterHealth(admin, tls, {
        kubernetesAPICallMs: 1_500,
        etcdAPICallMs: 60_000,
      }),
    ).rejects.toThrow(/^could not retrieve the list of etcd endpoints/);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(15_000);
  }, 30_000);

  it("retries each etcd call for etcdAPICall", async () => {
    const [closed] = await freePorts(1);
    cp.api.store.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "etcd-cp-1",
        namespace: "kube-system",
        labels: { component: "etcd", tier: "control-plane" },
        annotations: { [ETCD_CLIENT_URLS_ANNOTATION]: `https://127.0.0.1:${closed}` },
      },
      spec: { containers: [{ name: "etcd", image: "registry.k8s.io/etcd:3.6.6-0" }] },
    });
    const { admin, tls } = await access();
    const started = Date.now();
    await expect(
      stackedEtcdThrough().checkClusterHealth(admin, tls, {
        kubernetesAPICallMs: 60_000,
        etcdAPICallMs: 2_000,
      }),
    ).rejects.toThrow();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect(elapsed).toBeLessThan(20_000);
  }, 60_000);
});
