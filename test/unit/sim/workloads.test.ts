// The simulated deployment and daemonset controllers' status calculation: the fields and
// conditions of pkg/controller/deployment (sync.go calculateStatus, progress.go
// syncRolloutStatus, util/deployment_util.go) and pkg/controller/daemon (updateDaemonSetStatus),
// step by step as pods become Ready, stop being Ready, or never can; the Deployment's ReplicaSet
// and its counts of the ReplicaSets' Pods.
import { describe, expect, it } from "vitest";
import {
  maxUnavailable,
  nextDaemonSetStatus,
  nextDeploymentStatus,
  podTemplateHash,
  progressDeadlineAt,
  deploymentPodCounts,
  replicaSetFor,
} from "../../support/sim/apiserver/controllers/workloads.js";
import type { NodeLike } from "../../support/sim/apiserver/controllers/scheduling.js";
import type { StoredObject } from "../../support/sim/apiserver/store.js";

const T0 = new Date("2025-01-01T00:00:00Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const stamp = (s: number) => at(s).toISOString().replace(".000Z", "Z");

const template = {
  metadata: { labels: { "k8s-app": "kube-dns" } },
  spec: {
    nodeSelector: { "kubernetes.io/os": "linux" },
    tolerations: [
      { key: "CriticalAddonsOnly", operator: "Exists" },
      { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
    ],
    containers: [{ name: "coredns", image: "registry.k8s.io/coredns/coredns:v1.12.1" }],
  },
};

function deployment(
  status?: unknown,
  o: { generation?: number; spec?: object } = {},
): StoredObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "coredns", namespace: "kube-system", generation: o.generation ?? 1 },
    spec: {
      replicas: 2,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
      template,
      ...o.spec,
    },
    ...(status ? { status } : {}),
  };
}

const RS = `coredns-${podTemplateHash(template)}`;

describe("nextDeploymentStatus", () => {
  it("reports a rollout whose pods all run as available and complete", () => {
    expect(nextDeploymentStatus(deployment(), 2, T0)).toEqual({
      observedGeneration: 1,
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      conditions: [
        {
          type: "Available",
          status: "True",
          lastUpdateTime: stamp(0),
          lastTransitionTime: stamp(0),
          reason: "MinimumReplicasAvailable",
          message: "Deployment has minimum availability.",
        },
        {
          type: "Progressing",
          status: "True",
          lastUpdateTime: stamp(0),
          lastTransitionTime: stamp(0),
          reason: "NewReplicaSetAvailable",
          message: `ReplicaSet "${RS}" has successfully progressed.`,
        },
      ],
    });
  });

  it("follows pods that cannot run, then run one by one, then stop", () => {
    // No node can run them: created, progressing (the ReplicaSet was scaled up), unavailable.
    const s0 = nextDeploymentStatus(deployment(), 0, T0);
    expect(s0).toMatchObject({ replicas: 2, updatedReplicas: 2, unavailableReplicas: 2 });
    expect(s0).not.toHaveProperty("readyReplicas");
    expect(s0).not.toHaveProperty("availableReplicas");
    expect(s0.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Available", "False", "MinimumReplicasUnavailable"],
      ["Progressing", "True", "ReplicaSetUpdated"],
    ]);
    // Nothing changed: the same status (no write), time goes by.
    expect(nextDeploymentStatus(deployment(s0), 0, at(30))).toEqual(s0);

    // One pod Ready: 1 ≥ 2 − maxUnavailable 1 → Available; progress keeps its transition time.
    const s1 = nextDeploymentStatus(deployment(s0), 1, at(60));
    expect(s1).toMatchObject({ readyReplicas: 1, availableReplicas: 1, unavailableReplicas: 1 });
    const available = s1.conditions!.find((c) => c.type === "Available")!;
    expect(available).toMatchObject({ status: "True", lastTransitionTime: stamp(60) });
    const progressing = s1.conditions!.find((c) => c.type === "Progressing")!;
    expect(progressing).toMatchObject({
      reason: "ReplicaSetUpdated",
      message: `ReplicaSet "${RS}" is progressing.`,
      lastUpdateTime: stamp(60),
      lastTransitionTime: stamp(0),
    });

    // Both Ready: complete.
    const s2 = nextDeploymentStatus(deployment(s1), 2, at(90));
    expect(s2.conditions!.find((c) => c.type === "Progressing")).toMatchObject({
      reason: "NewReplicaSetAvailable",
      lastUpdateTime: stamp(90),
      lastTransitionTime: stamp(0),
    });
    expect(s2.unavailableReplicas).toBeUndefined();

    // Their node goes away: unavailable again, the finished rollout stays finished.
    const s3 = nextDeploymentStatus(deployment(s2), 0, at(120));
    expect(s3.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Progressing", "True", "NewReplicaSetAvailable"],
      ["Available", "False", "MinimumReplicasUnavailable"],
    ]);
    expect(s3).toMatchObject({ replicas: 2, unavailableReplicas: 2 });
    expect(s3).not.toHaveProperty("availableReplicas");
  });

  it("times a stuck rollout out after progressDeadlineSeconds, scaled", () => {
    const stuck = deployment(nextDeploymentStatus(deployment(), 0, T0));
    expect(progressDeadlineAt(stuck)).toBe(at(600).getTime());
    expect(progressDeadlineAt(stuck, 0.05)).toBe(at(30).getTime());
    expect(nextDeploymentStatus(stuck, 0, at(600))).toEqual(stuck.status);
    const late = nextDeploymentStatus(stuck, 0, at(601));
    expect(late.conditions!.find((c) => c.type === "Progressing")).toMatchObject({
      status: "False",
      reason: "ProgressDeadlineExceeded",
      message: `ReplicaSet "${RS}" has timed out progressing.`,
    });
    // Simulated time: 600 s × 0.05 = 30 s.
    expect(nextDeploymentStatus(stuck, 0, at(29), 0.05)).toEqual(stuck.status);
    expect(
      nextDeploymentStatus(stuck, 0, at(31), 0.05).conditions!.find(
        (c) => c.type === "Progressing",
      ),
    ).toMatchObject({
      status: "False",
      reason: "ProgressDeadlineExceeded",
      lastTransitionTime: stamp(31),
    });
    // Pods that finally run recover it.
    const recovered = nextDeploymentStatus(deployment(late), 2, at(700));
    expect(recovered.conditions!.find((c) => c.type === "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetAvailable",
    });
  });

  it("starts a new rollout for a new template, and drops Progressing without a deadline", () => {
    const done = nextDeploymentStatus(deployment(), 2, T0);
    const image = {
      ...template,
      spec: { ...template.spec, containers: [{ name: "coredns", image: "x" }] },
    };
    const changed = deployment(done, { generation: 2, spec: { template: image } });
    const s = nextDeploymentStatus(changed, 0, at(10));
    expect(s.observedGeneration).toBe(2);
    expect(s.conditions!.find((c) => c.type === "Progressing")).toMatchObject({
      reason: "ReplicaSetUpdated",
      message: `ReplicaSet "coredns-${podTemplateHash(image)}" is progressing.`,
    });
    const noDeadline = deployment(undefined, { spec: { progressDeadlineSeconds: 2 ** 31 - 1 } });
    expect(nextDeploymentStatus(noDeadline, 2, T0).conditions!.map((c) => c.type)).toEqual([
      "Available",
    ]);
  });
});

describe("maxUnavailable", () => {
  it.each([
    {
      name: "kubeadm's CoreDNS (2 replicas, 1)",
      spec: { replicas: 2, strategy: { rollingUpdate: { maxUnavailable: 1 } } },
      want: 1,
    },
    { name: "defaults, 4 replicas (25%)", spec: { replicas: 4 }, want: 1 },
    { name: "defaults, 1 replica (25% rounds down, surge up)", spec: { replicas: 1 }, want: 0 },
    {
      name: "no surge and no unavailable",
      spec: { replicas: 3, strategy: { rollingUpdate: { maxSurge: 0, maxUnavailable: 0 } } },
      want: 1,
    },
    {
      name: "50% of 3",
      spec: { replicas: 3, strategy: { rollingUpdate: { maxUnavailable: "50%" } } },
      want: 1,
    },
    {
      name: "more than replicas",
      spec: { replicas: 2, strategy: { rollingUpdate: { maxUnavailable: 5 } } },
      want: 2,
    },
    { name: "Recreate", spec: { replicas: 3, strategy: { type: "Recreate" } }, want: 0 },
    { name: "no replicas", spec: { replicas: 0 }, want: 0 },
  ])("$name → $want", ({ spec, want }) => {
    expect(maxUnavailable(spec)).toBe(want);
  });
});

describe("podTemplateHash", () => {
  it("is stable, changes with the template and the collision count, and uses the safe alphabet", () => {
    expect(podTemplateHash(structuredClone(template))).toBe(podTemplateHash(template));
    expect(podTemplateHash({ ...template, metadata: {} })).not.toBe(podTemplateHash(template));
    expect(podTemplateHash(template, 1)).not.toBe(podTemplateHash(template));
    expect(podTemplateHash(template)).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{6,10}$/);
  });
});

function node(name: string, ready: string | undefined, taints: object[] = []): NodeLike {
  return {
    metadata: { name, labels: { "kubernetes.io/os": "linux", "kubernetes.io/hostname": name } },
    spec: { taints: taints as never },
    status: ready ? { conditions: [{ type: "Ready", status: ready }] } : {},
  };
}

// The Deployment's Pods are real now (ReplicaSets, scheduler, kubelets): its counts come from
// them rather than from where its replicas could run.
describe("replicaSetFor and deploymentPodCounts", () => {
  const d = { ...deployment(), metadata: { ...deployment().metadata, uid: "d-uid" } };
  const rsObj = (name: string, uid: string): StoredObject => ({
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: { name, namespace: "kube-system", uid },
  });
  const pod = (rsUID: string, ready: boolean, deleting = false): StoredObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `p-${Math.random()}`,
      ownerReferences: [
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: "x", uid: rsUID, controller: true },
      ],
      ...(deleting ? { deletionTimestamp: stamp(0) } : {}),
    },
    status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  });

  it("names the ReplicaSet after the template's hash, which its selector and Pods carry, owned by the Deployment", () => {
    const rs = replicaSetFor(d) as unknown as StoredObject & { spec: Record<string, never> };
    const hash = podTemplateHash(template);
    expect(rs.metadata).toMatchObject({
      name: RS,
      namespace: "kube-system",
      labels: { "k8s-app": "kube-dns", "pod-template-hash": hash },
      ownerReferences: [{ kind: "Deployment", name: "coredns", uid: "d-uid", controller: true }],
    });
    expect(rs.spec).toMatchObject({
      replicas: 2,
      template: { metadata: { labels: { "k8s-app": "kube-dns", "pod-template-hash": hash } } },
    });
  });

  it("counts active Pods of every ReplicaSet, updated ones of the current, Ready ones as available", () => {
    const counts = deploymentPodCounts(
      RS,
      [rsObj(RS, "new"), rsObj("coredns-old", "old")],
      [
        pod("new", true),
        pod("new", false),
        pod("old", true),
        pod("old", true, true),
        pod("other", true),
      ],
    );
    expect(counts).toEqual({ replicas: 3, updated: 2, ready: 2, available: 2 });
    // A rollout in progress: available as the budget allows, not complete.
    const s = nextDeploymentStatus(d, counts, T0);
    expect(s).toMatchObject({
      replicas: 3,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    });
    expect(s.conditions!.find((c) => c.type === "Progressing")?.reason).not.toBe(
      "NewReplicaSetAvailable",
    );
  });
});

describe("nextDaemonSetStatus", () => {
  const kubeProxy = (status?: object): StoredObject => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "kube-proxy", namespace: "kube-system", generation: 3 },
    spec: {
      template: {
        metadata: { labels: { "k8s-app": "kube-proxy" } },
        spec: {
          hostNetwork: true,
          tolerations: [{ operator: "Exists" }],
          nodeSelector: { "kubernetes.io/os": "linux" },
        },
      },
    },
    ...(status ? { status } : {}),
  });

  it("schedules a daemon pod on every node it fits, Ready where the kubelet posts status", () => {
    expect(
      nextDaemonSetStatus(kubeProxy(), [
        node("cp", "True"),
        node("w1", "False"),
        node("w2", "Unknown"),
      ]),
    ).toEqual({
      currentNumberScheduled: 3,
      numberMisscheduled: 0,
      desiredNumberScheduled: 3,
      numberReady: 2,
      observedGeneration: 3,
      updatedNumberScheduled: 3,
      numberAvailable: 2,
      numberUnavailable: 1,
    });
  });

  it("keeps the counts Kubernetes always writes when there is no node", () => {
    expect(nextDaemonSetStatus(kubeProxy({ collisionCount: 1 }), [])).toEqual({
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 0,
      numberReady: 0,
      observedGeneration: 3,
      collisionCount: 1,
    });
  });
});
