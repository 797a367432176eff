// The simulated kube-controller-manager's cluster-wide controllers on an in-process store, with
// kubeadm's own objects as kubeforge builds them (the kube-controller-manager static pod's flags,
// the CoreDNS Deployment, the kube-proxy DaemonSet) and a stand-in kubelet per Node that posts
// status, renews its Lease and reports the Pods bound to it Running and Ready, beside the
// simulated kube-scheduler: node CIDRs are assigned once and never twice, Deployment status
// follows its Pods (ReplicaSet, scheduling, the stand-in kubelets), DaemonSet status what could
// really run, and a node whose kubelet goes silent turns Unknown with its Pods not Ready — all
// with simulated time (timeScale) so that a 50 s grace period takes half a second.
import { afterEach, describe, expect, it } from "vitest";
import { coreDNSDeployment } from "../../../src/manifests/addons/coredns.js";
import { kubeProxyDaemonSet } from "../../../src/manifests/addons/kube-proxy.js";
import { controlPlanePods } from "../../../src/manifests/control-plane.js";
import {
  controllersOptionsFromCommand,
  isControllerEnabled,
  ObjectStore,
  startFakeControllers,
  startFakeScheduler,
  type FakeControllersOptions,
  type StoredObject,
} from "../../support/sim/apiserver/index.js";
import { addonConfig } from "../../unit/manifests/addons/fixtures.js";

const SCALE = 0.01; // 50 s grace → 500 ms, 15 s lease → 150 ms
const CP_TAINT = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function controllers(store: ObjectStore, o: Partial<FakeControllersOptions> = {}) {
  const lines: string[] = [];
  const kcm = startFakeControllers(store, {
    clusterSigningCertFile: "/nonexistent/ca.crt",
    clusterSigningKeyFile: "/nonexistent/ca.key",
    controllers: ["nodeipam", "nodelifecycle", "deployment", "replicaset", "daemonset"],
    allocateNodeCIDRs: true,
    clusterCIDR: "10.244.0.0/16",
    serviceClusterIPRange: "10.96.0.0/12",
    timeScale: SCALE,
    log: (l) => lines.push(l),
    ...o,
  });
  // The Pods of the Deployments need a scheduler (the kube-scheduler static pod's role).
  const scheduler = startFakeScheduler(store, { log: (l) => lines.push(l), timeScale: SCALE });
  let stopped = false;
  const stop = () => {
    if (!stopped) {
      kcm.stop();
      scheduler.stop();
    }
    stopped = true;
  };
  cleanups.push(stop);
  return { stop, lines };
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");

function readyConditions(ready: "True" | "False", heartbeat = now()) {
  const c = (type: string, status: string, reason: string) => ({
    type,
    status,
    reason,
    message: reason,
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: heartbeat,
  });
  return [
    c("MemoryPressure", "False", "KubeletHasSufficientMemory"),
    c("DiskPressure", "False", "KubeletHasNoDiskPressure"),
    c("PIDPressure", "False", "KubeletHasSufficientPID"),
    c("Ready", ready, ready === "True" ? "KubeletReady" : "KubeletNotReady"),
  ];
}

/**
 * What the (simulated) kubelet does for its Node: registers it with status, renews its Lease in
 * kube-node-lease every 10 s (scaled), and posts its readiness.
 */
function kubelet(
  store: ObjectStore,
  name: string,
  o: { ready?: boolean; taints?: object[]; labels?: Record<string, string> } = {},
) {
  let ready = o.ready ?? true;
  store.create({
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "kubernetes.io/arch": "amd64",
        ...o.labels,
      },
    },
    spec: o.taints ? { taints: o.taints } : {},
    status: { conditions: readyConditions(ready ? "True" : "False") },
  });
  const renew = () => {
    const renewTime = new Date().toISOString().replace("Z", "000Z");
    const key = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      namespace: "kube-node-lease",
      name,
    };
    const lease = store.get(key);
    const spec = { holderIdentity: name, leaseDurationSeconds: 40, renewTime };
    if (lease) store.update({ ...lease, spec });
    else {
      store.create({
        apiVersion: key.apiVersion,
        kind: key.kind,
        metadata: { name, namespace: "kube-node-lease" },
        spec,
      });
    }
  };
  // The Pods bound to the node run and are Ready while the kubelet runs and the node is Ready
  // (a Pod that is not hostNetwork needs the node's network).
  const runPods = () => {
    if (!ready) return;
    for (const pod of store.list("v1", "Pod", { fieldSelector: `spec.nodeName=${name}` })) {
      const status = (pod.status ?? {}) as { conditions?: { type: string; status: string }[] };
      if (status.conditions?.some((c) => c.type === "Ready" && c.status === "True")) continue;
      store.update(
        {
          ...pod,
          status: {
            ...status,
            phase: "Running",
            podIP: "10.244.0.10",
            conditions: [{ type: "Ready", status: "True" }],
          },
        },
        { subresource: "status" },
      );
    }
  };
  const beat = () => {
    renew();
    runPods();
  };
  renew();
  let timer: NodeJS.Timeout | undefined = setInterval(beat, 10_000 * SCALE);
  const silence = () => {
    clearInterval(timer);
    timer = undefined;
  };
  cleanups.push(silence);
  const postStatus = () => {
    const node = store.get({ apiVersion: "v1", kind: "Node", name })!;
    store.update(
      {
        ...node,
        status: {
          ...(node.status as object),
          conditions: readyConditions(ready ? "True" : "False"),
        },
      },
      { subresource: "status" },
    );
  };
  return {
    setReady(r: boolean) {
      ready = r;
      postStatus();
    },
    /** The kubelet stops: no Lease renewal, no status. */
    stop: silence,
    /** A kubelet started again posts its status at once and renews its Lease. */
    start() {
      postStatus();
      beat();
      timer ??= setInterval(beat, 10_000 * SCALE);
    },
  };
}

const getNode = (store: ObjectStore, name: string) =>
  store.get({ apiVersion: "v1", kind: "Node", name })!;

function readyCondition(n: StoredObject) {
  return (((n.status ?? {}) as { conditions?: Record<string, string>[] }).conditions ?? []).find(
    (c) => c.type === "Ready",
  );
}

interface DeploymentStatus {
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  conditions?: { type: string; status: string; reason: string; message: string }[];
}

const condition = (d: StoredObject, type: string) =>
  ((d.status ?? {}) as DeploymentStatus).conditions?.find((c) => c.type === type);

/** Resolves with the CoreDNS Deployment once its Available condition is `status`. */
function coreDNSAvailable(store: ObjectStore, status: "True" | "False", ms = 5_000) {
  return store.waitFor(
    () => {
      const d = store.get({
        apiVersion: "apps/v1",
        kind: "Deployment",
        namespace: "kube-system",
        name: "coredns",
      });
      return d && condition(d, "Available")?.status === status ? d : undefined;
    },
    ms,
    `CoreDNS Available=${status}`,
  );
}

function kubeProxyStatus(store: ObjectStore) {
  return (store.get({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    namespace: "kube-system",
    name: "kube-proxy",
  })?.status ?? {}) as Record<string, number>;
}

/** The CoreDNS Deployment and kube-proxy DaemonSet exactly as kubeforge's addon phase creates them. */
function createAddons(store: ObjectStore) {
  const { cfg, release } = addonConfig({
    cluster: { networking: { podSubnet: "10.244.0.0/16", serviceSubnet: "10.96.0.0/12" } },
  });
  store.create(coreDNSDeployment(cfg, release));
  store.create(kubeProxyDaemonSet(cfg, {}));
}

describe("the flags kubeforge writes", () => {
  it("turn on node CIDR allocation from the pod subnet, with leader election", () => {
    const { cfg, release } = addonConfig({
      cluster: { networking: { podSubnet: "10.244.0.0/16", serviceSubnet: "10.96.0.0/12" } },
    });
    const pod = controlPlanePods(cfg, release, {
      existingHostPaths: new Set(),
      proxyEnv: {},
      externalCA: false,
    })["kube-controller-manager"];
    const command = (pod.spec.containers[0] as { command: string[] }).command;
    const opts = controllersOptionsFromCommand(command, (p) => `/rootfs${p}`);
    expect(opts).toMatchObject({
      allocateNodeCIDRs: true,
      clusterCIDR: "10.244.0.0/16",
      serviceClusterIPRange: "10.96.0.0/12",
      leaderElect: true,
    });
    expect(
      controllersOptionsFromCommand(
        [
          "kube-controller-manager",
          "--cluster-signing-cert-file=/ca.crt",
          "--cluster-signing-key-file=/ca.key",
          "--node-cidr-mask-size-ipv4=25",
          "--node-monitor-grace-period=40s",
          "--leader-elect=false",
          "--leader-elect-lease-duration=30s",
        ],
        (p) => p,
      ),
    ).toMatchObject({
      nodeCIDRMaskSizeIPv4: 25,
      nodeMonitorGracePeriod: 40_000,
      leaderElect: false,
      leaderElection: { leaseDurationMs: 30_000 },
    });
    expect(() =>
      controllersOptionsFromCommand(
        [
          "kube-controller-manager",
          "--cluster-signing-cert-file=/c",
          "--cluster-signing-key-file=/k",
          "--node-cidr-mask-size=big",
        ],
        (p) => p,
      ),
    ).toThrow("--node-cidr-mask-size=big is not a whole number");
  });

  it("name the new controllers by their current names and aliases, all on with *", () => {
    for (const [alias, name] of [
      ["node-ipam-controller", "nodeipam"],
      ["node-lifecycle-controller", "nodelifecycle"],
      ["deployment-controller", "deployment"],
      ["daemonset-controller", "daemonset"],
    ]) {
      expect(isControllerEnabled(name!, ["*", "bootstrapsigner", "tokencleaner"])).toBe(true);
      expect(isControllerEnabled(name!, ["*", `-${alias}`])).toBe(false);
      expect(isControllerEnabled(name!, [alias!])).toBe(true);
    }
  });

  it("refuse a cluster CIDR kube-controller-manager would refuse", () => {
    expect(() =>
      controllers(new ObjectStore(), { clusterCIDR: "10.244.0.0/16,10.245.0.0/16" }),
    ).toThrow(/not configured as dual stack/);
  });
});

describe("node-ipam-controller", () => {
  it("gives each Node the next /24 of the cluster CIDR, and a deleted node's block back after a wrap", async () => {
    const store = new ObjectStore();
    controllers(store, { clusterCIDR: "10.244.0.0/22" });
    for (const n of ["n1", "n2", "n3"]) kubelet(store, n);
    const cidrs = await store.waitFor(() => {
      const all = ["n1", "n2", "n3"].map(
        (n) => (getNode(store, n).spec as { podCIDRs?: string[] }).podCIDRs?.[0],
      );
      return all.every(Boolean) ? all : undefined;
    }, 5_000);
    expect(cidrs).toEqual(["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"]);
    expect(getNode(store, "n1").spec).toMatchObject({
      podCIDR: "10.244.0.0/24",
      podCIDRs: ["10.244.0.0/24"],
    });

    store.delete({ apiVersion: "v1", kind: "Node", name: "n2" });
    kubelet(store, "n4");
    kubelet(store, "n5");
    const later = await store.waitFor(() => {
      const all = ["n4", "n5"].map((n) => (getNode(store, n).spec as { podCIDR?: string }).podCIDR);
      return all.every(Boolean) ? all : undefined;
    }, 5_000);
    // Next fit: the last free block first, then the released one.
    expect(later).toEqual(["10.244.3.0/24", "10.244.1.0/24"]);

    // Full: a sixth node gets none, and the existing ones keep theirs.
    kubelet(store, "n6");
    await new Promise((r) => setTimeout(r, 300));
    expect(getNode(store, "n6").spec).not.toHaveProperty("podCIDR");
    expect((getNode(store, "n1").spec as { podCIDR: string }).podCIDR).toBe("10.244.0.0/24");
  });

  it("keeps a CIDR a Node already has, and the service range out of the cluster CIDR", async () => {
    const store = new ObjectStore();
    store.create({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "old" },
      spec: { podCIDR: "10.96.1.0/24", podCIDRs: ["10.96.1.0/24"] },
    });
    controllers(store, { clusterCIDR: "10.96.0.0/22", serviceClusterIPRange: "10.96.0.0/24" });
    kubelet(store, "new");
    const got = await store.waitFor(
      () => (getNode(store, "new").spec as { podCIDR?: string }).podCIDR,
      5_000,
    );
    expect(got).toBe("10.96.2.0/24");
    expect((getNode(store, "old").spec as { podCIDR: string }).podCIDR).toBe("10.96.1.0/24");
  });

  it("runs on one of two controller managers sharing a store, which hands over when it stops", async () => {
    const store = new ObjectStore();
    const a = controllers(store, { leaderElectionIdentity: "cp-1_a" });
    const b = controllers(store, { leaderElectionIdentity: "cp-2_b" });
    const names = Array.from({ length: 12 }, (_, i) => `w${i}`);
    for (const n of names) kubelet(store, n);
    const cidrs = await store.waitFor(() => {
      const all = names.map((n) => (getNode(store, n).spec as { podCIDR?: string }).podCIDR);
      return all.every(Boolean) ? (all as string[]) : undefined;
    }, 5_000);
    expect(new Set(cidrs).size).toBe(12);
    const lease = () =>
      store.get({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        namespace: "kube-system",
        name: "kube-controller-manager",
      })!.spec as {
        holderIdentity: string;
        leaseTransitions: number;
        leaseDurationSeconds: number;
      };
    expect(lease()).toMatchObject({
      holderIdentity: "cp-1_a",
      leaseTransitions: 0,
      leaseDurationSeconds: 15,
    });
    const assigned = (l: string[]) => l.filter((x) => x.includes("Set Node PodCIDR")).length;
    expect(assigned(a.lines)).toBe(12);
    expect(assigned(b.lines)).toBe(0);

    a.stop(); // a graceful stop releases the lease
    await store.waitFor(() => (lease().holderIdentity === "cp-2_b" ? true : undefined), 5_000);
    expect(lease().leaseTransitions).toBe(1);
    kubelet(store, "late");
    const late = await store.waitFor(
      () => (getNode(store, "late").spec as { podCIDR?: string }).podCIDR,
      5_000,
    );
    expect(cidrs).not.toContain(late);
    expect(assigned(b.lines)).toBe(1);
  });

  it("takes over from a controller manager that died without releasing its lease, after the lease duration", async () => {
    const store = new ObjectStore();
    // A lease held by a controller manager that no longer renews it.
    store.create({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "kube-controller-manager", namespace: "kube-system" },
      spec: {
        holderIdentity: "gone_x",
        leaseDurationSeconds: 15,
        renewTime: new Date().toISOString().replace("Z", "000Z"),
      },
    });
    const started = Date.now();
    controllers(store, { leaderElectionIdentity: "cp-2_b" });
    kubelet(store, "w");
    await store.waitFor(() => (getNode(store, "w").spec as { podCIDR?: string }).podCIDR, 5_000);
    // Not before 15 s × 0.01 after it first saw the lease.
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("without leader election, loses a race for a Node cleanly: the other allocator's CIDR stays", async () => {
    const store = new ObjectStore();
    // A rival assigns the Node a CIDR between this allocator's read and its write.
    let rivalDone = false;
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop !== "update") return Reflect.get(target, prop, receiver) as unknown;
        return (obj: StoredObject, opts?: object) => {
          if (obj.kind === "Node" && !rivalDone && (obj.spec as { podCIDR?: string }).podCIDR) {
            rivalDone = true;
            const current = target.get({
              apiVersion: "v1",
              kind: "Node",
              name: obj.metadata.name,
            })!;
            target.update({
              ...current,
              spec: {
                ...(current.spec as object),
                podCIDR: "10.244.7.0/24",
                podCIDRs: ["10.244.7.0/24"],
              },
            });
          }
          return target.update(obj, opts);
        };
      },
    });
    kubelet(store, "w");
    controllers(racing, { leaderElect: false });
    await new Promise((r) => setTimeout(r, 200));
    expect(rivalDone).toBe(true);
    expect(getNode(store, "w").spec).toMatchObject({
      podCIDR: "10.244.7.0/24",
      podCIDRs: ["10.244.7.0/24"],
    });
    // The next node does not get the rival's block either.
    kubelet(store, "w2");
    const next = await store.waitFor(
      () => (getNode(store, "w2").spec as { podCIDR?: string }).podCIDR,
      5_000,
    );
    expect(next).not.toBe("10.244.7.0/24");
  });

  it("without leader election, two allocators on one store never hand out one block twice", async () => {
    const store = new ObjectStore();
    controllers(store, { leaderElect: false });
    controllers(store, { leaderElect: false });
    const names = Array.from({ length: 10 }, (_, i) => `w${i}`);
    for (const n of names) kubelet(store, n);
    const cidrs = await store.waitFor(() => {
      const all = names.map((n) => (getNode(store, n).spec as { podCIDR?: string }).podCIDR);
      return all.every(Boolean) ? all : undefined;
    }, 5_000);
    expect(new Set(cidrs).size).toBe(10);
  });
});

describe("deployment-controller and daemonset-controller", () => {
  it("make CoreDNS available once a node it may run on is Ready, and count kube-proxy pods", async () => {
    const store = new ObjectStore();
    controllers(store);
    createAddons(store);
    await coreDNSAvailable(store, "False");
    // Its ReplicaSet's two Pods exist (pending: no node yet) and are counted.
    let d = await store.waitFor(() => {
      const got = store.get({
        apiVersion: "apps/v1",
        kind: "Deployment",
        namespace: "kube-system",
        name: "coredns",
      });
      return (got?.status as DeploymentStatus | undefined)?.replicas === 2 ? got : undefined;
    }, 5_000);
    expect(d.status).toMatchObject({
      observedGeneration: 1,
      replicas: 2,
      updatedReplicas: 2,
      unavailableReplicas: 2,
    });
    expect(condition(d, "Available")).toMatchObject({ reason: "MinimumReplicasUnavailable" });
    await store.waitFor(
      () => (kubeProxyStatus(store).observedGeneration ? true : undefined),
      5_000,
    );
    expect(kubeProxyStatus(store)).toMatchObject({ desiredNumberScheduled: 0, numberReady: 0 });

    // A control plane without a pod network: kube-proxy (host network) runs, CoreDNS cannot.
    const cp = kubelet(store, "cp-1", { ready: false, taints: [CP_TAINT] });
    await store.waitFor(() => (kubeProxyStatus(store).numberReady === 1 ? true : undefined), 5_000);
    expect(kubeProxyStatus(store)).toMatchObject({ desiredNumberScheduled: 1, numberAvailable: 1 });
    await new Promise((r) => setTimeout(r, 100));
    expect(condition(await coreDNSAvailable(store, "False"), "Available")?.status).toBe("False");

    // The CNI is installed: the node is Ready, both replicas run on it (anti-affinity is preferred only).
    cp.setReady(true);
    d = await coreDNSAvailable(store, "True");
    expect(d.status).toMatchObject({ replicas: 2, readyReplicas: 2, availableReplicas: 2 });
    expect(d.status).not.toHaveProperty("unavailableReplicas");
    expect(condition(d, "Available")).toMatchObject({
      reason: "MinimumReplicasAvailable",
      message: "Deployment has minimum availability.",
    });
    expect(condition(d, "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetAvailable",
    });
    expect(condition(d, "Progressing")!.message).toMatch(
      /^ReplicaSet "coredns-[bcdfghjklmnpqrstvwxz2456789]+" has successfully progressed\.$/,
    );
  });

  it("keep CoreDNS unavailable on a node whose taint it does not tolerate, until the taint goes", async () => {
    const store = new ObjectStore();
    controllers(store);
    createAddons(store);
    kubelet(store, "gpu-1", { taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] });
    await store.waitFor(() => (kubeProxyStatus(store).numberReady === 1 ? true : undefined), 5_000);
    expect(condition(await coreDNSAvailable(store, "False"), "Available")?.reason).toBe(
      "MinimumReplicasUnavailable",
    );

    const n = getNode(store, "gpu-1");
    store.update({
      ...n,
      spec: { taints: [{ key: "dedicated", value: "gpu", effect: "PreferNoSchedule" }] },
    });
    expect((await coreDNSAvailable(store, "True")).status).toMatchObject({ availableReplicas: 2 });
  });

  it("keep CoreDNS off Windows nodes and cordoned nodes", async () => {
    const store = new ObjectStore();
    controllers(store);
    createAddons(store);
    kubelet(store, "win", { labels: { "kubernetes.io/os": "windows" } });
    kubelet(store, "w");
    const n = getNode(store, "w");
    store.update({ ...n, spec: { ...(n.spec as object), unschedulable: true } });
    await store.waitFor(
      () => (kubeProxyStatus(store).desiredNumberScheduled === 1 ? true : undefined),
      5_000,
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(condition(await coreDNSAvailable(store, "False"), "Available")?.status).toBe("False");
    const w = getNode(store, "w");
    store.update({ ...w, spec: { ...(w.spec as object), unschedulable: false } });
    await coreDNSAvailable(store, "True");
  });
});

describe("node-lifecycle-controller", () => {
  it("turns a node whose kubelet stopped Unknown after the grace period, and CoreDNS unavailable", async () => {
    const store = new ObjectStore();
    controllers(store);
    createAddons(store);
    const cp = kubelet(store, "cp-1", { taints: [CP_TAINT] });
    const w = kubelet(store, "w-1");
    await coreDNSAvailable(store, "True");
    await store.waitFor(() => (kubeProxyStatus(store).numberReady === 2 ? true : undefined), 5_000);

    // The worker keeps renewing its lease while the control plane's kubelet goes silent.
    const heartbeat = readyCondition(getNode(store, "cp-1"))!.lastHeartbeatTime;
    cp.stop();
    // Not before the grace period (50 s, scaled) from the last renewal (at most 10 s, scaled, ago).
    await new Promise((r) => setTimeout(r, (50_000 - 10_000) * SCALE - 100));
    expect(readyCondition(getNode(store, "cp-1"))?.status).toBe("True");
    // Its status was posted only once: the Lease renewals alone kept it Ready until now.
    const unknown = await store.waitFor(() => {
      const c = readyCondition(getNode(store, "cp-1"));
      return c?.status === "Unknown" ? c : undefined;
    }, 5_000);
    expect(unknown).toMatchObject({
      reason: "NodeStatusUnknown",
      message: "Kubelet stopped posting node status.",
      lastHeartbeatTime: heartbeat,
    });
    const conditions = (getNode(store, "cp-1").status as { conditions: Record<string, string>[] })
      .conditions;
    expect(conditions.map((c) => [c.type, c.status])).toEqual([
      ["MemoryPressure", "Unknown"],
      ["DiskPressure", "Unknown"],
      ["PIDPressure", "Unknown"],
      ["Ready", "Unknown"],
    ]);
    expect(readyCondition(getNode(store, "w-1"))?.status).toBe("True");

    // CoreDNS's Pod on cp-1 is marked not Ready (MarkPodsNotReady) and stays there (no
    // taint-based eviction here): one replica available, still enough; kube-proxy loses a pod.
    await store.waitFor(() => (kubeProxyStatus(store).numberReady === 1 ? true : undefined), 5_000);
    expect(kubeProxyStatus(store)).toMatchObject({
      desiredNumberScheduled: 2,
      numberUnavailable: 1,
    });
    const one = await store.waitFor(() => {
      const d = store.get({
        apiVersion: "apps/v1",
        kind: "Deployment",
        namespace: "kube-system",
        name: "coredns",
      });
      return (d?.status as DeploymentStatus | undefined)?.availableReplicas === 1 ? d : undefined;
    }, 5_000);
    expect(condition(one, "Available")?.status).toBe("True");

    // The worker's kubelet stops too: nothing can run CoreDNS.
    w.stop();
    const d = await coreDNSAvailable(store, "False", 5_000);
    expect(d.status).toMatchObject({ unavailableReplicas: 2 });
    expect(condition(d, "Available")?.reason).toBe("MinimumReplicasUnavailable");

    // A kubelet started again posts Ready: back to available.
    cp.start();
    await coreDNSAvailable(store, "True");
    expect(readyCondition(getNode(store, "cp-1"))?.status).toBe("True");
  });

  it("marks a Node that never posted status after the startup grace period", async () => {
    const store = new ObjectStore();
    controllers(store);
    store.create({ apiVersion: "v1", kind: "Node", metadata: { name: "ghost" } });
    const ready = await store.waitFor(() => readyCondition(getNode(store, "ghost")), 5_000);
    expect(ready).toMatchObject({
      status: "Unknown",
      reason: "NodeStatusNeverUpdated",
      message: "Kubelet never posted node status.",
    });
  });

  it("leaves a node alone while its Lease is renewed, whatever the age of its status", async () => {
    const store = new ObjectStore();
    controllers(store);
    kubelet(store, "quiet");
    await new Promise((r) => setTimeout(r, 50_000 * SCALE * 2));
    expect(readyCondition(getNode(store, "quiet"))?.status).toBe("True");
  });
});
