// SIMULATION (test double). The placement rules that decide whether a pod of a workload could run
// on a node: the parts of kube-scheduler's filters and the DaemonSet controller's predicates that
// matter for kubeadm's add-ons (CoreDNS, kube-proxy). Pure functions over plain JSON objects.
// k8s: staging/src/k8s.io/api/core/v1/toleration.go (ToleratesTaint),
// pkg/apis/core/v1/helper/helpers.go (FindMatchingUntoleratedTaint, TolerationsTolerateTaint),
// staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go
// (GetRequiredNodeAffinity: nodeSelector AND required node affinity; terms ORed, requirements
// ANDed), pkg/scheduler/framework/plugins/{tainttoleration,nodeunschedulable,nodeaffinity,
// interpodaffinity}, pkg/controller/daemon/util/daemonset_util.go
// (AddOrUpdateDaemonPodTolerations), pkg/controller/nodelifecycle/node_lifecycle_controller.go
// (nodeConditionToTaintKeyStatusMap: the NoSchedule taints of TaintNodesByCondition).
import type { StoredObject } from "../store.js";

export interface Taint {
  key: string;
  value?: string;
  /** NoSchedule, PreferNoSchedule or NoExecute. */
  effect: string;
}

export interface Toleration {
  key?: string;
  /** Exists, Equal (the default), or Lt/Gt (alpha). */
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

interface NodeSelectorTerm {
  matchExpressions?: Requirement[];
  matchFields?: Requirement[];
}

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Requirement[];
}

interface PodAffinityTerm {
  labelSelector?: LabelSelector;
  topologyKey: string;
  namespaces?: string[];
  namespaceSelector?: LabelSelector;
}

/** The parts of a pod spec the placement rules read. */
export interface PodSpecLike {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  hostNetwork?: boolean;
  affinity?: {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
    };
    podAntiAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
    };
  };
}

export interface NodeLike {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { taints?: Taint[]; unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string }[] };
}

// k8s: staging/src/k8s.io/api/core/v1/well_known_taints.go
export const TAINT_NOT_READY = "node.kubernetes.io/not-ready";
export const TAINT_UNREACHABLE = "node.kubernetes.io/unreachable";
export const TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable";
export const TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure";
export const TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure";
export const TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure";
export const TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable";

/**
 * Whether `t` tolerates `taint`. An empty effect matches every effect; an empty key (with
 * operator Exists, as validation requires) matches every key; Exists matches every value; Equal
 * (or no operator) compares values; Lt/Gt compare them as integers (alpha, 1.35).
 * k8s: staging/src/k8s.io/api/core/v1/toleration.go ToleratesTaint.
 */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? "") {
    case "":
    case "Equal":
      return (t.value ?? "") === (taint.value ?? "");
    case "Exists":
      return true;
    case "Lt":
    case "Gt": {
      const want = parseInt64(t.value);
      const have = parseInt64(taint.value);
      if (want === undefined || have === undefined) return false;
      return t.operator === "Lt" ? have < want : have > want;
    }
    default:
      return false;
  }
}

/** strconv.ParseInt(s, 10, 64): an optional sign and decimal digits only. */
function parseInt64(s: string | undefined): bigint | undefined {
  if (s === undefined || !/^[+-]?\d+$/.test(s)) return undefined;
  const v = BigInt(s);
  if (v > 2n ** 63n - 1n || v < -(2n ** 63n)) return undefined;
  return v;
}

/** k8s: pkg/apis/core/v1/helper/helpers.go TolerationsTolerateTaint */
export function tolerationsTolerateTaint(tolerations: Toleration[], taint: Taint): boolean {
  return tolerations.some((t) => toleratesTaint(t, taint));
}

/**
 * The first taint passing `filter` that no toleration tolerates.
 * k8s: pkg/apis/core/v1/helper/helpers.go FindMatchingUntoleratedTaint.
 */
export function findUntoleratedTaint(
  taints: Taint[],
  tolerations: Toleration[],
  filter: (t: Taint) => boolean,
): Taint | undefined {
  return taints.find((t) => filter(t) && !tolerationsTolerateTaint(tolerations, t));
}

/** A node condition's status ("True", "False", "Unknown"), or undefined when absent. */
export function conditionStatus(node: NodeLike, type: string): string | undefined {
  return node.status?.conditions?.find((c) => c.type === type)?.status;
}

/**
 * The node's taints as the scheduler sees them in a real cluster: its own, plus the NoSchedule
 * taints the node lifecycle controller's TaintNodesByCondition pass keeps in step with its
 * conditions (Ready False or absent → not-ready, Ready Unknown → unreachable,
 * pressure conditions True → their taints, NetworkUnavailable True → network-unavailable), plus
 * node.kubernetes.io/unschedulable for a cordoned node (the NodeUnschedulable filter).
 * SIMULATION: these are computed, not written to the Node (the simulated controller manager
 * leaves spec.taints to kubeadm and the kubelet).
 */
export function effectiveTaints(node: NodeLike): Taint[] {
  const out: Taint[] = [...(node.spec?.taints ?? [])];
  const add = (key: string) => {
    if (!out.some((t) => t.key === key && t.effect === "NoSchedule"))
      out.push({ key, effect: "NoSchedule" });
  };
  const ready = conditionStatus(node, "Ready");
  // k8s: nodeConditionToTaintKeyStatusMap — Ready False → not-ready, Unknown → unreachable;
  // a Node is created with not-ready:NoSchedule (plugin/pkg/admission/nodetaint) until its
  // kubelet reports Ready.
  if (ready === "False" || ready === undefined) add(TAINT_NOT_READY);
  if (ready === "Unknown") add(TAINT_UNREACHABLE);
  if (conditionStatus(node, "MemoryPressure") === "True") add(TAINT_MEMORY_PRESSURE);
  if (conditionStatus(node, "DiskPressure") === "True") add(TAINT_DISK_PRESSURE);
  if (conditionStatus(node, "PIDPressure") === "True") add(TAINT_PID_PRESSURE);
  if (conditionStatus(node, "NetworkUnavailable") === "True") add(TAINT_NETWORK_UNAVAILABLE);
  if (node.spec?.unschedulable) add(TAINT_UNSCHEDULABLE);
  return out;
}

/** Label selector requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against a label map. */
function requirementMatches(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return has && values.includes(v!);
    case "NotIn":
      return !has || !values.includes(v!);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt": {
      // k8s: apimachinery/pkg/labels/selector.go — both sides parse as integers.
      if (!has || values.length !== 1) return false;
      const a = parseInt64(v);
      const b = parseInt64(values[0]);
      if (a === undefined || b === undefined) return false;
      return r.operator === "Gt" ? a > b : a < b;
    }
    default:
      return false;
  }
}

/**
 * A NodeSelectorTerm: every expression on labels and every field requirement (only
 * metadata.name is supported) hold. A term with no requirement matches no node.
 * k8s: component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go newNodeSelectorTerm.
 */
function termMatches(term: NodeSelectorTerm, node: NodeLike): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata.labels ?? {};
  if (!exprs.every((r) => requirementMatches(r, labels))) return false;
  return fields.every(
    (r) =>
      r.key === "metadata.name" &&
      (r.operator === "In" || r.operator === "NotIn") &&
      requirementMatches(r, { "metadata.name": node.metadata.name }),
  );
}

/**
 * GetRequiredNodeAffinity(pod).Match(node): spec.nodeSelector (every label equal) and, when
 * present, the required node affinity (any of its terms).
 */
export function matchesNodeAffinity(spec: PodSpecLike, node: NodeLike): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return false;
  }
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) return (required.nodeSelectorTerms ?? []).some((t) => termMatches(t, node));
  return true;
}

/** k8s: apimachinery/pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector (nil matches nothing). */
export function labelSelectorMatches(
  sel: LabelSelector | undefined,
  labels: Record<string, string>,
): boolean {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (sel.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

export type Unfit =
  { reason: "NodeName" } | { reason: "NodeAffinity" } | { reason: "TaintToleration"; taint: Taint };

/**
 * kube-scheduler's filters for one pod on one node (NodeName, NodeUnschedulable through the
 * unschedulable taint, NodeAffinity, TaintToleration on NoSchedule and NoExecute taints).
 * Resources, ports and volumes are not simulated. Undefined when the pod fits.
 */
export function schedulerUnfit(spec: PodSpecLike, node: NodeLike): Unfit | undefined {
  if (spec.nodeName && spec.nodeName !== node.metadata.name) return { reason: "NodeName" };
  if (!matchesNodeAffinity(spec, node)) return { reason: "NodeAffinity" };
  const taint = findUntoleratedTaint(
    effectiveTaints(node),
    spec.tolerations ?? [],
    (t) => t.effect === "NoSchedule" || t.effect === "NoExecute",
  );
  return taint ? { reason: "TaintToleration", taint } : undefined;
}

/**
 * The tolerations the DaemonSet controller adds to every daemon pod.
 * k8s: pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations.
 */
export function daemonPodTolerations(spec: PodSpecLike): Toleration[] {
  const out: Toleration[] = [
    ...(spec.tolerations ?? []),
    { key: TAINT_NOT_READY, operator: "Exists", effect: "NoExecute" },
    { key: TAINT_UNREACHABLE, operator: "Exists", effect: "NoExecute" },
    { key: TAINT_DISK_PRESSURE, operator: "Exists", effect: "NoSchedule" },
    { key: TAINT_MEMORY_PRESSURE, operator: "Exists", effect: "NoSchedule" },
    { key: TAINT_PID_PRESSURE, operator: "Exists", effect: "NoSchedule" },
    { key: TAINT_UNSCHEDULABLE, operator: "Exists", effect: "NoSchedule" },
  ];
  if (spec.hostNetwork) {
    out.push({ key: TAINT_NETWORK_UNAVAILABLE, operator: "Exists", effect: "NoSchedule" });
  }
  return out;
}

/**
 * Whether the DaemonSet controller runs a daemon pod on the node: nodeName, node affinity and
 * taints (NoSchedule and NoExecute) with the daemon tolerations added. The node's own taints only:
 * the DaemonSet controller reads node.spec.taints, and the condition taints it would see are all
 * tolerated by the daemon tolerations except not-ready/unreachable NoSchedule, which it ignores.
 * k8s: pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod, predicates.
 */
export function daemonShouldRun(spec: PodSpecLike, node: NodeLike): boolean {
  if (spec.nodeName && spec.nodeName !== node.metadata.name) return false;
  if (!matchesNodeAffinity(spec, node)) return false;
  const taints = [...(node.spec?.taints ?? [])];
  if (node.spec?.unschedulable) taints.push({ key: TAINT_UNSCHEDULABLE, effect: "NoSchedule" });
  return !findUntoleratedTaint(
    taints,
    daemonPodTolerations(spec),
    (t) => t.effect === "NoSchedule" || t.effect === "NoExecute",
  );
}

/**
 * Whether a pod placed on the node would be running and Ready there:
 * - the kubelet must be posting status: a node whose Ready condition is Unknown (or absent) has
 *   its pods marked NotReady by the node lifecycle controller (MarkPodsNotReady);
 * - a pod that is not hostNetwork needs the node's network: the kubelet refuses to start it while
 *   the runtime reports NetworkReady=false, which is when it reports the node Ready=False
 *   (k8s: pkg/kubelet/kubelet.go syncPod "network is not ready").
 */
export function podWouldBeReady(spec: PodSpecLike, node: NodeLike): boolean {
  const ready = conditionStatus(node, "Ready");
  if (ready === "True") return true;
  if (ready === "False") return spec.hostNetwork === true;
  return false;
}

/**
 * How many replicas of a pod template can be placed on `nodes` (already filtered to those
 * it fits): unlimited (Infinity) unless a required pod anti-affinity term selects the template's
 * own pods, in which case one replica per topology domain of that term (a node without the
 * topology key is not constrained by it).
 * k8s: pkg/scheduler/framework/plugins/interpodaffinity/filtering.go satisfyPodAntiAffinity.
 */
export function replicaCapacity(
  spec: PodSpecLike,
  templateLabels: Record<string, string>,
  nodes: NodeLike[],
): number {
  const terms =
    spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  const selfTerms = terms.filter((t) => labelSelectorMatches(t.labelSelector, templateLabels));
  if (selfTerms.length === 0) return nodes.length > 0 ? Infinity : 0;
  // Every term must hold for every replica: each replica needs a domain of its own in every
  // term. The tightest term bounds the count.
  let capacity = Infinity;
  for (const term of selfTerms) {
    const domains = new Set<string>();
    let unconstrained = false;
    for (const n of nodes) {
      const v = n.metadata.labels?.[term.topologyKey];
      if (v === undefined) unconstrained = true;
      else domains.add(v);
    }
    capacity = Math.min(capacity, unconstrained ? Infinity : domains.size);
  }
  return capacity;
}

/** The pod template spec and labels of a Deployment or DaemonSet. */
export function templateOf(workload: StoredObject): {
  spec: PodSpecLike;
  labels: Record<string, string>;
} {
  const template = ((workload.spec as Record<string, unknown> | undefined)?.template ?? {}) as {
    metadata?: { labels?: Record<string, string> };
    spec?: PodSpecLike;
  };
  return { spec: template.spec ?? {}, labels: template.metadata?.labels ?? {} };
}
