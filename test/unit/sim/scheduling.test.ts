// The simulated scheduler's placement rules: the toleration matching of Kubernetes (cases from
// staging/src/k8s.io/api/core/v1/toleration_test.go TestTolerationToleratesTaint and the rules
// written in ToleratesTaint's comment), node selectors and affinity, the condition taints of
// NotReady nodes, the DaemonSet controller's own tolerations and required anti-affinity.
import { describe, expect, it } from "vitest";
import {
  daemonShouldRun,
  effectiveTaints,
  findUntoleratedTaint,
  matchesNodeAffinity,
  podWouldBeReady,
  replicaCapacity,
  schedulerUnfit,
  toleratesTaint,
  type NodeLike,
  type PodSpecLike,
  type Taint,
  type Toleration,
} from "../../support/sim/apiserver/controllers/scheduling.js";

describe("toleratesTaint", () => {
  const cases: { name: string; toleration: Toleration; taint: Taint; want: boolean }[] = [
    {
      name: "same key and effect, Exists, taint without value",
      toleration: { key: "foo", operator: "Exists", effect: "NoSchedule" },
      taint: { key: "foo", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "same key and effect, Exists, taint with a value",
      toleration: { key: "foo", operator: "Exists", effect: "NoSchedule" },
      taint: { key: "foo", value: "bar", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "empty key with Exists matches every key",
      toleration: { operator: "Exists", effect: "NoSchedule" },
      taint: { key: "foo", value: "bar", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "empty key and empty effect with Exists matches everything (kube-proxy)",
      toleration: { operator: "Exists" },
      taint: { key: "node-role.kubernetes.io/control-plane", effect: "NoExecute" },
      want: true,
    },
    {
      name: "same key, effect and value, Equal",
      toleration: { key: "foo", operator: "Equal", value: "bar", effect: "NoSchedule" },
      taint: { key: "foo", value: "bar", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "no operator means Equal",
      toleration: { key: "foo", value: "bar", effect: "NoSchedule" },
      taint: { key: "foo", value: "bar", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "Equal with different values",
      toleration: { key: "foo", operator: "Equal", value: "value1", effect: "NoSchedule" },
      taint: { key: "foo", value: "value2", effect: "NoSchedule" },
      want: false,
    },
    {
      name: "Equal with different effects",
      toleration: { key: "foo", operator: "Equal", value: "bar", effect: "NoExecute" },
      taint: { key: "foo", value: "bar", effect: "NoSchedule" },
      want: false,
    },
    {
      name: "empty effect matches every effect",
      toleration: { key: "foo", operator: "Exists" },
      taint: { key: "foo", effect: "NoExecute" },
      want: true,
    },
    {
      name: "Equal without value tolerates a taint without value (CoreDNS' control-plane toleration)",
      toleration: { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
      taint: { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "different keys",
      toleration: { key: "foo", operator: "Exists" },
      taint: { key: "bar", effect: "NoSchedule" },
      want: false,
    },
    {
      name: "unknown operator",
      toleration: { key: "foo", operator: "Matches", value: "bar" },
      taint: { key: "foo", value: "bar", effect: "NoSchedule" },
      want: false,
    },
    {
      name: "Gt: taint value greater",
      toleration: { key: "sla", operator: "Gt", value: "950", effect: "NoSchedule" },
      taint: { key: "sla", value: "999", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "Gt: taint value not greater",
      toleration: { key: "sla", operator: "Gt", value: "950", effect: "NoSchedule" },
      taint: { key: "sla", value: "950", effect: "NoSchedule" },
      want: false,
    },
    {
      name: "Lt: taint value lower",
      toleration: { key: "sla", operator: "Lt", value: "100", effect: "NoSchedule" },
      taint: { key: "sla", value: "-5", effect: "NoSchedule" },
      want: true,
    },
    {
      name: "Lt: a value that is not an integer",
      toleration: { key: "sla", operator: "Lt", value: "100", effect: "NoSchedule" },
      taint: { key: "sla", value: "1e2", effect: "NoSchedule" },
      want: false,
    },
  ];
  it.each(cases)("$name → $want", ({ toleration, taint, want }) => {
    expect(toleratesTaint(toleration, taint)).toBe(want);
  });

  it("finds the first untolerated taint among the effects asked for", () => {
    const taints: Taint[] = [
      { key: "a", effect: "PreferNoSchedule" },
      { key: "b", effect: "NoSchedule" },
      { key: "c", effect: "NoExecute" },
    ];
    const hard = (t: Taint) => t.effect === "NoSchedule" || t.effect === "NoExecute";
    expect(findUntoleratedTaint(taints, [], hard)).toEqual(taints[1]);
    expect(findUntoleratedTaint(taints, [{ key: "b", operator: "Exists" }], hard)).toEqual(
      taints[2],
    );
    expect(
      findUntoleratedTaint(
        taints,
        [
          { key: "b", operator: "Exists" },
          { key: "c", value: "x" },
        ],
        hard,
      ),
    ).toEqual(taints[2]);
    expect(
      findUntoleratedTaint(
        taints,
        [
          { key: "b", operator: "Exists" },
          { key: "c", operator: "Exists" },
        ],
        hard,
      ),
    ).toBeUndefined();
  });
});

function node(
  name: string,
  o: {
    ready?: string;
    labels?: Record<string, string>;
    taints?: Taint[];
    unschedulable?: boolean;
  } = {},
): NodeLike {
  return {
    metadata: {
      name,
      labels: { "kubernetes.io/os": "linux", "kubernetes.io/hostname": name, ...o.labels },
    },
    spec: { ...(o.taints ? { taints: o.taints } : {}), unschedulable: o.unschedulable ?? false },
    status: o.ready === undefined ? {} : { conditions: [{ type: "Ready", status: o.ready }] },
  };
}

const CP_TAINT = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };
// kubeadm's CoreDNS pod template (placement part). kubeadm: phases/addons/dns/manifests.go
const coreDNS: PodSpecLike = {
  nodeSelector: { "kubernetes.io/os": "linux" },
  tolerations: [
    { key: "CriticalAddonsOnly", operator: "Exists" },
    { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
  ],
};

describe("node selection", () => {
  it.each([
    { name: "Ready worker", n: node("w", { ready: "True" }), fits: true },
    {
      name: "Ready control plane (tolerated taint)",
      n: node("cp", { ready: "True", taints: [CP_TAINT] }),
      fits: true,
    },
    {
      name: "a taint CoreDNS does not tolerate",
      n: node("w", {
        ready: "True",
        taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }],
      }),
      fits: false,
    },
    {
      name: "a PreferNoSchedule taint does not keep a pod away",
      n: node("w", { ready: "True", taints: [{ key: "dedicated", effect: "PreferNoSchedule" }] }),
      fits: true,
    },
    { name: "NotReady: not-ready taint", n: node("w", { ready: "False" }), fits: false },
    { name: "Unknown: unreachable taint", n: node("w", { ready: "Unknown" }), fits: false },
    { name: "never posted status", n: node("w"), fits: false },
    { name: "cordoned", n: node("w", { ready: "True", unschedulable: true }), fits: false },
    {
      name: "Windows node (nodeSelector)",
      n: node("w", { ready: "True", labels: { "kubernetes.io/os": "windows" } }),
      fits: false,
    },
  ])("CoreDNS on $name: fits=$fits", ({ n, fits }) => {
    expect(schedulerUnfit(coreDNS, n) === undefined).toBe(fits);
  });

  it("names the taint that keeps a pod away", () => {
    expect(schedulerUnfit({}, node("cp", { ready: "True", taints: [CP_TAINT] }))).toEqual({
      reason: "TaintToleration",
      taint: CP_TAINT,
    });
    expect(schedulerUnfit({}, node("w", { ready: "Unknown" }))).toEqual({
      reason: "TaintToleration",
      taint: { key: "node.kubernetes.io/unreachable", effect: "NoSchedule" },
    });
  });

  it("adds the condition taints of the node lifecycle controller, not twice", () => {
    const n = node("w", {
      ready: "False",
      taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }],
    });
    expect(effectiveTaints(n)).toEqual([
      { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" },
    ]);
    expect(effectiveTaints(node("w", { ready: "True" }))).toEqual([]);
  });

  it.each([
    {
      name: "In",
      expr: { key: "zone", operator: "In", values: ["a", "b"] },
      labels: { zone: "b" },
      want: true,
    },
    {
      name: "In, absent",
      expr: { key: "zone", operator: "In", values: ["a"] },
      labels: {},
      want: false,
    },
    {
      name: "NotIn, absent",
      expr: { key: "zone", operator: "NotIn", values: ["a"] },
      labels: {},
      want: true,
    },
    {
      name: "NotIn",
      expr: { key: "zone", operator: "NotIn", values: ["a"] },
      labels: { zone: "a" },
      want: false,
    },
    { name: "Exists", expr: { key: "gpu", operator: "Exists" }, labels: { gpu: "" }, want: true },
    {
      name: "DoesNotExist",
      expr: { key: "gpu", operator: "DoesNotExist" },
      labels: { gpu: "" },
      want: false,
    },
    {
      name: "Gt",
      expr: { key: "cores", operator: "Gt", values: ["4"] },
      labels: { cores: "8" },
      want: true,
    },
    {
      name: "Lt",
      expr: { key: "cores", operator: "Lt", values: ["4"] },
      labels: { cores: "8" },
      want: false,
    },
  ])("required node affinity $name → $want", ({ expr, labels, want }) => {
    const spec: PodSpecLike = {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [expr] }],
          },
        },
      },
    };
    expect(matchesNodeAffinity(spec, node("n", { labels: labels as Record<string, string> }))).toBe(
      want,
    );
  });

  it("ORs node selector terms, matches metadata.name fields, and an empty term matches nothing", () => {
    const terms = (t: unknown[]): PodSpecLike => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: t as never },
        },
      },
    });
    const byName = { matchFields: [{ key: "metadata.name", operator: "In", values: ["n2"] }] };
    const byZone = { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] };
    expect(
      matchesNodeAffinity(terms([byName, byZone]), node("n1", { labels: { zone: "a" } })),
    ).toBe(true);
    expect(matchesNodeAffinity(terms([byName, byZone]), node("n2"))).toBe(true);
    expect(matchesNodeAffinity(terms([byName, byZone]), node("n3"))).toBe(false);
    expect(matchesNodeAffinity(terms([{}]), node("n1"))).toBe(false);
  });
});

describe("DaemonSet pods", () => {
  const kubeProxy: PodSpecLike = {
    hostNetwork: true,
    tolerations: [{ operator: "Exists" }],
    nodeSelector: { "kubernetes.io/os": "linux" },
  };

  it("run on every Linux node whatever its taints, and are Ready wherever the kubelet posts status", () => {
    const nodes = [
      node("cp", { ready: "True", taints: [CP_TAINT] }),
      node("w1", { ready: "False" }),
      node("w2", { ready: "Unknown" }),
      node("win", { ready: "True", labels: { "kubernetes.io/os": "windows" } }),
    ];
    expect(nodes.filter((n) => daemonShouldRun(kubeProxy, n)).map((n) => n.metadata.name)).toEqual([
      "cp",
      "w1",
      "w2",
    ]);
    // hostNetwork: Ready on a node whose network is not ready yet, not on a silent one.
    expect(nodes.filter((n) => podWouldBeReady(kubeProxy, n)).map((n) => n.metadata.name)).toEqual([
      "cp",
      "w1",
      "win",
    ]);
  });

  it("get the DaemonSet controller's tolerations: unschedulable and not-ready nodes, not other taints", () => {
    const plain: PodSpecLike = {};
    expect(daemonShouldRun(plain, node("w", { ready: "False", unschedulable: true }))).toBe(true);
    expect(daemonShouldRun(plain, node("cp", { ready: "True", taints: [CP_TAINT] }))).toBe(false);
    expect(
      daemonShouldRun(
        plain,
        node("w", {
          ready: "True",
          taints: [{ key: "node.kubernetes.io/network-unavailable", effect: "NoSchedule" }],
        }),
      ),
    ).toBe(false);
    expect(
      daemonShouldRun(
        { hostNetwork: true },
        node("w", {
          ready: "True",
          taints: [{ key: "node.kubernetes.io/network-unavailable", effect: "NoSchedule" }],
        }),
      ),
    ).toBe(true);
  });

  it("of a pod network are not Ready on a node whose network is not ready", () => {
    expect(podWouldBeReady({}, node("w", { ready: "False" }))).toBe(false);
    expect(podWouldBeReady({}, node("w", { ready: "True" }))).toBe(true);
  });
});

describe("replica capacity", () => {
  const labels = { "k8s-app": "kube-dns" };
  const antiAffinity = (topologyKey: string): PodSpecLike => ({
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          {
            labelSelector: {
              matchExpressions: [{ key: "k8s-app", operator: "In", values: ["kube-dns"] }],
            },
            topologyKey,
          },
        ],
      },
    },
  });

  it("is unlimited on one node without a required anti-affinity (CoreDNS' is only preferred)", () => {
    expect(replicaCapacity(coreDNS, labels, [node("cp", { ready: "True" })])).toBe(Infinity);
    expect(replicaCapacity(coreDNS, labels, [])).toBe(0);
  });

  it("is one per topology domain with a required anti-affinity on the template's own labels", () => {
    const nodes = [
      node("a", { labels: { zone: "z1" } }),
      node("b", { labels: { zone: "z1" } }),
      node("c", { labels: { zone: "z2" } }),
    ];
    expect(replicaCapacity(antiAffinity("kubernetes.io/hostname"), labels, nodes)).toBe(3);
    expect(replicaCapacity(antiAffinity("zone"), labels, nodes)).toBe(2);
    // A node without the topology key is not constrained by the term.
    expect(replicaCapacity(antiAffinity("zone"), labels, [...nodes, node("d")])).toBe(Infinity);
    // A term selecting other pods does not limit this template.
    expect(replicaCapacity(antiAffinity("zone"), { app: "other" }, nodes)).toBe(Infinity);
  });
});
