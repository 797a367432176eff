// SIMULATION (test double). kube-scheduler, reduced to what the simulated workloads need: every
// Pod of the default scheduler that no node is assigned to is bound (spec.nodeName, as a
// pods/binding does) to a node that passes the filters of scheduling.ts (NodeName,
// NodeUnschedulable, NodeAffinity, TaintToleration with the condition taints, required pod
// anti-affinity) and, among those, has the fewest Pods of the same labels (spreading), then the
// fewest Pods, then the first name. A Pod no node fits waits for the next Node event.
// k8s: pkg/scheduler/schedule_one.go (schedulePod: filter, score, selectHost; bind),
// pkg/scheduler/framework/plugins/{nodename,nodeunschedulable,nodeaffinity,tainttoleration,
// interpodaffinity,podtopologyspread}, pkg/scheduler/apis/config/v1/default_plugins.go,
// pkg/scheduler/eventhandlers.go (responsibleForPod: spec.schedulerName "default-scheduler").
// SIMULATION LIMITS: scoring is only the spreading above (topologySpreadConstraints and
// preferred anti-affinity are both read as "spread by hostname"); resources, ports and volumes
// are not filtered; no preemption; no PodScheduled=False condition on an unschedulable Pod.
import { buildAuthorizer } from "../authz.js";
import type { ObjectStore, StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import {
  DEFAULT_LEADER_ELECTION,
  defaultIdentity,
  runWithLeaderElection,
} from "./leader-election.js";
import { podIsActive } from "./pods.js";
import { WorkQueue } from "./queue.js";
import {
  labelSelectorMatches,
  schedulerUnfit,
  type NodeLike,
  type PodSpecLike,
} from "./scheduling.js";

type AntiAffinityTerm = NonNullable<
  NonNullable<
    NonNullable<PodSpecLike["affinity"]>["podAntiAffinity"]
  >["requiredDuringSchedulingIgnoredDuringExecution"]
>[number];

const nodeOf = (p: StoredObject) => ((p.spec ?? {}) as { nodeName?: string }).nodeName;

/** interpodaffinity Filter: no Pod the term selects runs in the node's topology domain. */
function antiAffinityAllows(
  term: AntiAffinityTerm,
  namespace: string,
  node: NodeLike,
  nodes: NodeLike[],
  pods: StoredObject[],
): boolean {
  const domain = node.metadata.labels?.[term.topologyKey];
  if (domain === undefined) return true;
  const inDomain = new Set(
    nodes
      .filter((n) => n.metadata.labels?.[term.topologyKey] === domain)
      .map((n) => n.metadata.name),
  );
  const namespaces = term.namespaces?.length ? term.namespaces : [namespace];
  return !pods.some(
    (p) =>
      inDomain.has(nodeOf(p) ?? "") &&
      namespaces.includes(p.metadata.namespace ?? "") &&
      labelSelectorMatches(term.labelSelector, p.metadata.labels ?? {}),
  );
}

/** The node the scheduler binds `pod` to among `nodes`, given the active `pods`; undefined if none fits. */
export function chooseNode(
  pod: StoredObject,
  nodes: NodeLike[],
  pods: StoredObject[],
): string | undefined {
  const spec = (pod.spec ?? {}) as PodSpecLike;
  const namespace = pod.metadata.namespace ?? "";
  const labels = pod.metadata.labels ?? {};
  const terms =
    spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  const placed = pods.filter((p) => nodeOf(p) && p.metadata.uid !== pod.metadata.uid);
  const fit = nodes.filter(
    (n) =>
      !schedulerUnfit(spec, n) &&
      terms.every((t) => antiAffinityAllows(t, namespace, n, nodes, placed)),
  );
  const same = (p: StoredObject) =>
    p.metadata.namespace === namespace &&
    Object.keys(labels).length > 0 &&
    Object.entries(labels).every(([k, v]) => p.metadata.labels?.[k] === v);
  const score = (n: NodeLike) => {
    const on = placed.filter((p) => nodeOf(p) === n.metadata.name);
    return [on.filter(same).length, on.length] as const;
  };
  const ranked = fit
    .map((n) => ({ name: n.metadata.name, s: score(n) }))
    .sort((a, b) => a.s[0] - b.s[0] || a.s[1] - b.s[1] || a.name.localeCompare(b.name));
  return ranked[0]?.name;
}

const responsible = (p: StoredObject) => {
  const spec = (p.spec ?? {}) as { schedulerName?: string; nodeName?: string };
  return !spec.nodeName && (spec.schedulerName ?? "default-scheduler") === "default-scheduler";
};

function bindOne(store: ObjectStore, key: string, log: (l: string) => void): void {
  const [namespace, name] = key.split("/") as [string, string];
  const pod = store.get({ apiVersion: "v1", kind: "Pod", namespace, name });
  if (!pod || !responsible(pod) || !podIsActive(pod)) return;
  const nodes = store.list("v1", "Node") as unknown as NodeLike[];
  const node = chooseNode(pod, nodes, store.list("v1", "Pod").filter(podIsActive));
  if (!node) return;
  // The binding's precondition: the Pod read is the one bound (its resourceVersion).
  store.patch(
    { apiVersion: "v1", kind: "Pod", namespace, name },
    { metadata: { resourceVersion: pod.metadata.resourceVersion }, spec: { nodeName: node } },
    "merge",
  );
  log(`kube-scheduler: bound ${key} to ${node}`);
}

/** The scheduling loop: unscheduled Pods on their events, and all of them on Node events. */
export function startPodScheduler(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const queue = new WorkQueue(
    (key) => {
      try {
        bindOne(store, key, log);
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 409) queue.add(key);
        else if (code !== 404) throw e;
      }
    },
    (key, e) => log(`kube-scheduler: ${key}: ${(e as Error).message}`),
  );
  const keyOf = (p: StoredObject) => `${p.metadata.namespace ?? ""}/${p.metadata.name}`;
  const enqueuePending = () => {
    for (const p of store.list("v1", "Pod")) if (responsible(p)) queue.add(keyOf(p));
  };
  const unsubscribe = store.subscribe((ev) => {
    const r = ev.resource;
    if (r.group !== "") return;
    if (r.kind === "Pod" && ev.type !== "DELETED" && responsible(ev.object))
      queue.add(keyOf(ev.object));
    if (r.kind === "Node" && ev.type !== "DELETED") enqueuePending();
  });
  enqueuePending();
  return () => {
    unsubscribe();
    queue.stop();
  };
}

/**
 * The simulated kube-scheduler's scheduling, while it holds the kube-system/kube-scheduler Lease
 * (--leader-elect, true by default; cmd/kube-scheduler/app/server.go Run), durations scaled.
 */
export function startFakeScheduler(
  store: ObjectStore,
  opts: { log: (line: string) => void; timeScale?: number },
): { stop(): void } {
  const ctx: ControllerContext = {
    store,
    log: opts.log,
    authorize: buildAuthorizer(store, ["Node", "RBAC"]),
  };
  const stop = runWithLeaderElection(
    ctx,
    {
      ...DEFAULT_LEADER_ELECTION,
      name: "kube-scheduler",
      identity: defaultIdentity(),
      timeScale: opts.timeScale ?? 1,
    },
    () => startPodScheduler(ctx),
  );
  return { stop };
}
