// The simulated Pod machinery's pure parts: where the scheduler binds a Pod, what the endpoints
// controller publishes, the Pods a ReplicaSet makes and deletes first, graceful deletion, the
// kubelet's view of its Pods (what runs, what it reports, what it deletes), Pod addresses, and
// agnhost netexec's answers.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointSubsets, findPort } from "../../support/sim/apiserver/controllers/endpoints.js";
import { orphanedPods } from "../../support/sim/apiserver/controllers/pod-gc.js";
import { chooseNode } from "../../support/sim/apiserver/controllers/pod-scheduler.js";
import { podsToDelete } from "../../support/sim/apiserver/controllers/pods.js";
import {
  podFromTemplate,
  replicaSetStatus,
} from "../../support/sim/apiserver/controllers/replicasets.js";
import type { NodeLike } from "../../support/sim/apiserver/controllers/scheduling.js";
import { markedForDeletion, podDeletionGrace } from "../../support/sim/apiserver/pod-grace.js";
import type { StoredObject } from "../../support/sim/apiserver/store.js";
import { netexecHandler, netexecPort } from "../../support/sim/kubelet/agnhost.js";
import { allocatePodIP, parsePodIPRange } from "../../support/sim/kubelet/pod-network.js";
import {
  apiPodStatus,
  desiredApiPods,
  podsToFinish,
  type ApiPod,
} from "../../support/sim/kubelet/pods.js";
import type { PodStatus } from "../../support/sim/kubelet/runtime.js";
import { canaryObjects } from "../../../src/manifests/probe-canary.js";

const T0 = new Date("2025-01-01T00:00:00Z");

function node(
  name: string,
  o: { ready?: string; taints?: object[]; unschedulable?: boolean } = {},
): NodeLike {
  return {
    metadata: { name, labels: { "kubernetes.io/hostname": name } },
    spec: {
      taints: (o.taints ?? []) as never,
      ...(o.unschedulable ? { unschedulable: true } : {}),
    },
    status: { conditions: [{ type: "Ready", status: o.ready ?? "True" }] },
  };
}

let n = 0;
function pod(o: {
  labels?: Record<string, string>;
  node?: string;
  ip?: string;
  ready?: boolean;
  phase?: string;
  deleting?: boolean;
  spec?: object;
  created?: string;
}): StoredObject {
  n++;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `p${n}`,
      namespace: "ns",
      uid: `uid-${n}`,
      labels: o.labels ?? { app: "web" },
      creationTimestamp: o.created ?? "2025-01-01T00:00:00Z",
      ...(o.deleting ? { deletionTimestamp: "2025-01-01T00:00:05Z" } : {}),
    },
    spec: {
      ...(o.node ? { nodeName: o.node } : {}),
      containers: [{ name: "c", ports: [{ name: "http", containerPort: 8080 }] }],
      ...o.spec,
    },
    status: {
      phase: o.phase ?? "Running",
      ...(o.ip ? { podIP: o.ip } : {}),
      conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }],
    },
  };
}

describe("chooseNode (the simulated kube-scheduler)", () => {
  const cp = node("cp-1", {
    taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
  });

  it("spreads Pods of the same labels over the nodes they fit, never onto a tainted control plane", () => {
    const p = pod({});
    expect(chooseNode(p, [cp, node("w-1"), node("w-2")], [])).toBe("w-1");
    const onW1 = pod({ node: "w-1" });
    expect(chooseNode(p, [cp, node("w-1"), node("w-2")], [onW1])).toBe("w-2");
    // Other labels do not count for the spread, only as a tie-break.
    const other = pod({ node: "w-2", labels: { app: "db" } });
    expect(chooseNode(p, [node("w-1"), node("w-2")], [onW1, other])).toBe("w-2");
  });

  it("skips cordoned and NotReady nodes and waits when none fits", () => {
    const p = pod({});
    expect(chooseNode(p, [node("w-1", { unschedulable: true }), node("w-2")], [])).toBe("w-2");
    expect(chooseNode(p, [node("w-1", { ready: "False" }), cp], [])).toBeUndefined();
  });

  it("places a Pod that tolerates the control-plane taint there (CoreDNS)", () => {
    const p = pod({
      spec: {
        tolerations: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
      },
    });
    expect(chooseNode(p, [cp], [])).toBe("cp-1");
  });

  it("keeps required anti-affinity: one replica per hostname", () => {
    const term = {
      topologyKey: "kubernetes.io/hostname",
      labelSelector: { matchLabels: { app: "web" } },
    };
    const p = pod({
      spec: {
        affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } },
      },
    });
    expect(
      chooseNode(p, [node("w-1"), node("w-2")], [pod({ node: "w-1" }), pod({ node: "w-2" })]),
    ).toBeUndefined();
  });
});

describe("endpointSubsets (the simulated endpoints controller)", () => {
  const [, , service] = canaryObjects("ns", 2) as StoredObject[];
  const canaryLabels = { "app.kubernetes.io/name": "kubeforge-canary" };

  it("resolves the named targetPort against the Pod's container ports: Ready Pods as addresses, others not ready", () => {
    const ready = pod({ labels: canaryLabels, node: "w-2", ip: "10.0.0.12" });
    const starting = pod({ labels: canaryLabels, node: "w-1", ip: "10.0.0.11", ready: false });
    expect(findPort(ready, { port: 80, targetPort: "http" })).toBe(8080);
    expect(endpointSubsets(service!, [ready, starting])).toEqual([
      {
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
        addresses: [
          {
            ip: "10.0.0.12",
            nodeName: "w-2",
            targetRef: {
              kind: "Pod",
              namespace: "ns",
              name: ready.metadata.name,
              uid: ready.metadata.uid,
            },
          },
        ],
        notReadyAddresses: [
          {
            ip: "10.0.0.11",
            nodeName: "w-1",
            targetRef: {
              kind: "Pod",
              namespace: "ns",
              name: starting.metadata.name,
              uid: starting.metadata.uid,
            },
          },
        ],
      },
    ]);
  });

  it("leaves out Pods without an IP, being deleted, finished, unselected, or without the named port", () => {
    const noPort = pod({
      labels: canaryLabels,
      ip: "10.0.0.5",
      spec: { containers: [{ name: "c" }] },
    });
    const pods = [
      pod({ labels: canaryLabels }),
      pod({ labels: canaryLabels, ip: "10.0.0.2", deleting: true }),
      pod({ labels: canaryLabels, ip: "10.0.0.3", phase: "Succeeded" }),
      pod({ ip: "10.0.0.4" }),
      noPort,
    ];
    expect(endpointSubsets(service!, pods)).toEqual([]);
  });
});

describe("ReplicaSet Pods", () => {
  const rs: StoredObject = {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: { name: "web-abc", namespace: "ns", uid: "rs-uid", generation: 2 },
    spec: {
      replicas: 2,
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c" }] } },
    },
  };

  it("makes Pods named <replicaset>-<random>, labelled from the template, controlled by the ReplicaSet", () => {
    expect(podFromTemplate(rs)).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        generateName: "web-abc-",
        namespace: "ns",
        labels: { app: "web" },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "web-abc",
            uid: "rs-uid",
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { containers: [{ name: "c" }] },
    });
  });

  it("counts active, labelled and Ready Pods in its status", () => {
    expect(replicaSetStatus(rs, [pod({}), pod({ ready: false }), pod({ deleting: true })])).toEqual(
      {
        replicas: 2,
        fullyLabeledReplicas: 2,
        readyReplicas: 1,
        availableReplicas: 1,
        observedGeneration: 2,
      },
    );
  });

  it("deletes unscheduled, then Pending, then not Ready, then the newest Pods first", () => {
    const running = pod({ node: "w-1", created: "2025-01-01T00:00:00Z" });
    const newer = pod({ node: "w-1", created: "2025-01-01T00:01:00Z" });
    const notReady = pod({ node: "w-2", ready: false });
    const pending = pod({ node: "w-2", phase: "Pending", ready: false });
    const unscheduled = pod({ phase: "Pending", ready: false });
    const order = podsToDelete([running, newer, notReady, pending, unscheduled], 5);
    expect(order.map((p) => p.metadata.name)).toEqual(
      [unscheduled, pending, notReady, newer, running].map((p) => p.metadata.name),
    );
  });
});

describe("graceful Pod deletion and the pod garbage collector", () => {
  it("marks a bound, running Pod for its grace period; removes unbound or finished ones at once", () => {
    const bound = pod({ node: "w-1", spec: { terminationGracePeriodSeconds: 5 } });
    expect(podDeletionGrace(bound)).toBe(5);
    expect(podDeletionGrace(bound, 0)).toBe(0);
    expect(podDeletionGrace(pod({}))).toBe(0);
    expect(podDeletionGrace(pod({ node: "w-1", phase: "Failed" }))).toBe(0);
    expect(podDeletionGrace(pod({ node: "w-1" }))).toBe(30);
    const marked = markedForDeletion(
      { ...bound, metadata: { ...bound.metadata, deletionTimestamp: undefined } },
      T0,
    );
    expect(marked?.metadata).toMatchObject({
      deletionTimestamp: "2025-01-01T00:00:05Z",
      deletionGracePeriodSeconds: 5,
    });
    // A second delete only shortens the grace.
    expect(markedForDeletion(marked!, T0, 60)).toBe(marked);
    expect(markedForDeletion(marked!, T0, 1)?.metadata.deletionTimestamp).toBe(
      "2025-01-01T00:00:01Z",
    );
  });

  it("finds Pods bound to nodes that no longer exist", () => {
    const gone = pod({ node: "w-9" });
    expect(orphanedPods([pod({ node: "w-1" }), gone, pod({})], new Set(["w-1"]))).toEqual([gone]);
  });
});

describe("the simulated kubelet's Pods from the API", () => {
  const apiPod = (o: Parameters<typeof pod>[0] & { mirror?: boolean } = {}) => {
    const p = pod({ node: "w-1", ...o }) as unknown as ApiPod;
    if (o.mirror) p.metadata.annotations = { "kubernetes.io/config.mirror": "h" };
    return p;
  };
  const runtimeStatus = (p: ApiPod, running: boolean, podIP?: string): PodStatus => ({
    key: `ns/${p.metadata.name}`,
    uid: p.metadata.uid,
    hash: p.metadata.uid,
    startTime: "2025-01-01T00:00:01Z",
    ...(podIP ? { podIP } : {}),
    containers: [
      {
        name: "c",
        image: "img",
        ready: running,
        started: running,
        restartCount: 0,
        state: running
          ? { running: { startedAt: "2025-01-01T00:00:01Z" } }
          : { waiting: { reason: "ContainerCreating" } },
      },
    ],
  });

  it("runs live Pods, not mirror pods, finished ones or those being deleted", () => {
    const live = apiPod();
    const desired = desiredApiPods([
      live,
      apiPod({ mirror: true }),
      apiPod({ phase: "Succeeded" }),
      apiPod({ deleting: true }),
    ]);
    expect(desired.map((d) => [d.key, d.hash, d.apiPod])).toEqual([
      [`ns/${live.metadata.name}`, live.metadata.uid, true],
    ]);
  });

  it("reports Running and Ready with the Pod's own IP, Pending until its container runs", () => {
    const p = apiPod();
    const running = apiPodStatus(p, runtimeStatus(p, true, "10.251.0.100"), "10.251.0.11");
    expect(running).toMatchObject({
      phase: "Running",
      podIP: "10.251.0.100",
      podIPs: [{ ip: "10.251.0.100" }],
      hostIP: "10.251.0.11",
    });
    const conds = (running.conditions as { type: string; status: string }[]).map((c) => [
      c.type,
      c.status,
    ]);
    expect(conds).toEqual([
      ["PodReadyToStartContainers", "True"],
      ["Initialized", "True"],
      ["Ready", "True"],
      ["ContainersReady", "True"],
      ["PodScheduled", "True"],
    ]);
    const starting = apiPodStatus(p, runtimeStatus(p, false), "10.251.0.11");
    expect(starting).toMatchObject({ phase: "Pending", podIP: "10.251.0.11" });
    expect(
      (starting.conditions as { type: string; status: string }[]).find((c) => c.type === "Ready")
        ?.status,
    ).toBe("False");
  });

  it("deletes a Pod marked for deletion once the runtime no longer runs it", () => {
    const stopping = apiPod({ deleting: true });
    const stillRunning = apiPod({ deleting: true });
    expect(
      podsToFinish([stopping, stillRunning, apiPod()], [runtimeStatus(stillRunning, true)]),
    ).toEqual([stopping]);
  });
});

describe("Pod addresses", () => {
  it("parses a first-last range and hands out the first free address", () => {
    const range = parsePodIPRange("10.251.3.100-10.251.3.102");
    expect(range).toEqual(["10.251.3.100", "10.251.3.101", "10.251.3.102"]);
    expect(allocatePodIP(range, new Set(["10.251.3.100"]))).toBe("10.251.3.101");
    expect(allocatePodIP(range, new Set(range))).toBeUndefined();
    expect(() => parsePodIPRange("10.251.3.0/24")).toThrow(/first-last/);
  });
});

describe("agnhost netexec", () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer(netexecHandler("kubeforge-canary-abc12-xyz34"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("takes its port from --http-port", () => {
    expect(netexecPort(["netexec", "--http-port=8080"])).toBe(8080);
    expect(netexecPort(["netexec", "--http-port", "9000"])).toBe(9000);
    expect(netexecPort(["netexec"])).toBe(8080);
    expect(netexecPort(["pause"])).toBeUndefined();
  });

  it("answers /hostname with the Pod's name and /shell with JSON at 200, the error set when the command failed", async () => {
    expect(await (await fetch(`${base}/hostname`)).text()).toBe("kubeforge-canary-abc12-xyz34");
    // netexec.go shellHandler: empty fields are left out; a failure is still 200.
    const ok = await fetch(`${base}/shell?cmd=${encodeURIComponent("echo hi")}`);
    expect([ok.status, await ok.json()]).toEqual([200, { output: "hi\n" }]);
    const bad = await fetch(`${base}/shell?cmd=${encodeURIComponent("echo no >&2; exit 3")}`);
    expect([bad.status, await bad.json()]).toEqual([
      200,
      { output: "no\n", error: "exit status 3" },
    ]);
    const silent = await fetch(`${base}/shell?shellCommand=${encodeURIComponent("exit 1")}`);
    expect([silent.status, await silent.json()]).toEqual([200, { error: "exit status 1" }]);
    expect((await fetch(`${base}/nothing`)).status).toBe(404);
  });
});
