// SIMULATION (test double). The deployment and daemonset controllers.
// Deployments run real Pods: this controller keeps one ReplicaSet per pod template (named
// "<deployment>-<pod-template-hash>", owned by the Deployment), scales the current one to
// spec.replicas and every older one to 0; the replicaset controller (replicasets.ts) makes the
// Pods, the scheduler (pod-scheduler.ts) places them, the nodes' simulated kubelets run them,
// and the Deployment's status counts them: replicas (active Pods of all its ReplicaSets),
// updatedReplicas (those of the current one), readyReplicas and availableReplicas (the Ready
// ones). Re-evaluated on every Deployment and ReplicaSet event.
// DaemonSets still run NO Pods: their controller writes the .status the real one would write if
// its daemon pods ran where they could (scheduling.ts: taints and tolerations, node selector and
// affinity, cordoned nodes; a pod is Ready only on a node whose kubelet posts status, and a pod
// without hostNetwork only on a Ready node). Re-evaluated on every Node and DaemonSet event.
// k8s: pkg/controller/deployment/sync.go (getNewReplicaSet: the ReplicaSet named
// "<deployment>-<hash>" with the pod-template-hash label in its selector and template;
// calculateStatus: observedGeneration, replicas, updatedReplicas, readyReplicas,
// availableReplicas, unavailableReplicas; the Available condition: availableReplicas ≥ replicas
// − MaxUnavailable → MinimumReplicasAvailable "Deployment has minimum availability.", else
// MinimumReplicasUnavailable "Deployment does not have minimum availability.";
// NewReplicaSetCreated "Created new replica set %q"),
// pkg/controller/deployment/progress.go (syncRolloutStatus: NewReplicaSetAvailable "ReplicaSet
// %q has successfully progressed.", ReplicaSetUpdated "ReplicaSet %q is progressing.",
// ProgressDeadlineExceeded "ReplicaSet %q has timed out progressing."),
// pkg/controller/deployment/util/deployment_util.go (SetDeploymentCondition, MaxUnavailable,
// ResolveFenceposts, DeploymentComplete, DeploymentProgressing, DeploymentTimedOut),
// pkg/apis/apps/v1/defaults.go (replicas 1, RollingUpdate 25%/25%, progressDeadlineSeconds 600),
// pkg/controller/controller_utils.go ComputeHash (the pod-template-hash in the ReplicaSet name),
// pkg/controller/daemon/daemon_controller.go (updateDaemonSetStatus, NodeShouldRunDaemonPod),
// staging/src/k8s.io/api/apps/v1/types.go (which status fields are omitted when zero).
// SIMULATION LIMITS: a template change scales the old ReplicaSets to 0 and the new one to
// spec.replicas at once (no surge, no rolling by maxUnavailable, as a Recreate would); no
// revision history (deployment.kubernetes.io/revision, revisionHistoryLimit, rollback);
// paused is ignored; minReadySeconds is not simulated (a Ready Pod is available); the
// pod-template-hash is an FNV-32a of the template's JSON, not of Go's printed struct, so it is
// stable but not the value a real cluster shows; a ReplicaSet of that name the Deployment does
// not own is left alone (no collisionCount bump). DaemonSet pods move to other nodes at once
// when their node goes away (no eviction delay).
import { deepEqual } from "../patch.js";
import type { Json, StoredObject } from "../store.js";
import { rfc3339 } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { controllerOf, ownedBy, podIsActive, podIsReady } from "./pods.js";
import { WorkQueue } from "./queue.js";
import { RS } from "./replicasets.js";
import { daemonShouldRun, podWouldBeReady, templateOf, type NodeLike } from "./scheduling.js";

interface DeploymentCondition {
  type: string;
  status: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  conditions?: DeploymentCondition[];
  collisionCount?: number;
}

interface DeploymentSpec {
  replicas?: number;
  paused?: boolean;
  progressDeadlineSeconds?: number;
  strategy?: {
    type?: string;
    rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string };
  };
}

// k8s: util/deployment_util.go reasons
export const MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable";
export const MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable";
export const NEW_RS_CREATED = "NewReplicaSetCreated";
export const NEW_RS_AVAILABLE = "NewReplicaSetAvailable";
export const RS_UPDATED = "ReplicaSetUpdated";
export const TIMED_OUT = "ProgressDeadlineExceeded";

const MAX_INT32 = 2 ** 31 - 1;

// ---- the pod-template-hash -------------------------------------------------------------------

function canonicalJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJSON(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/** FNV-1a, 32 bits (Go's hash/fnv New32a). */
function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, "utf8")) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** k8s: apimachinery/pkg/util/rand/rand.go SafeEncodeString (no vowels, no 0/1/3). */
function safeEncode(s: string): string {
  const alphanums = "bcdfghjklmnpqrstvwxz2456789";
  return [...Buffer.from(s)].map((b) => alphanums[b % alphanums.length]).join("");
}

/** The pod-template-hash label value (ComputeHash: the template, then the collision count). */
export function podTemplateHash(template: unknown, collisionCount?: number): string {
  const text =
    canonicalJSON(template) + (collisionCount !== undefined ? String(collisionCount) : "");
  return safeEncode(String(fnv32a(text)));
}

// ---- Deployment status -----------------------------------------------------------------------

/** intstr.GetScaledValueFromIntOrPercent */
function scaledValue(v: number | string, total: number, roundUp: boolean): number {
  if (typeof v === "number") return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) return Number.isNaN(Number(v)) ? 0 : Number(v);
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** k8s: deployment_util.go MaxUnavailable (with ResolveFenceposts and the API defaults). */
export function maxUnavailable(spec: DeploymentSpec): number {
  const replicas = spec.replicas ?? 1;
  const type = spec.strategy?.type ?? "RollingUpdate";
  if (type !== "RollingUpdate" || replicas === 0) return 0;
  const ru = spec.strategy?.rollingUpdate ?? {};
  const surge = scaledValue(ru.maxSurge ?? "25%", replicas, true);
  let unavailable = scaledValue(ru.maxUnavailable ?? "25%", replicas, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return Math.min(unavailable, replicas);
}

/** k8s: deployment_util.go SetDeploymentCondition — no change when status and reason are kept. */
function setCondition(conds: DeploymentCondition[], c: DeploymentCondition): DeploymentCondition[] {
  const current = conds.find((x) => x.type === c.type);
  if (current && current.status === c.status && current.reason === c.reason) return conds;
  const next = { ...c };
  if (current && current.status === c.status) next.lastTransitionTime = current.lastTransitionTime;
  return [...conds.filter((x) => x.type !== c.type), next];
}

function newCondition(
  type: string,
  status: string,
  reason: string,
  message: string,
  now: Date,
): DeploymentCondition {
  const t = rfc3339(now);
  return { type, status, lastUpdateTime: t, lastTransitionTime: t, reason, message };
}

function omitZero<T extends object>(o: T): T {
  const out = {} as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === 0 || (Array.isArray(v) && v.length === 0)) continue;
    out[k] = v;
  }
  return out as T;
}

/** What the deployment controller counts of its ReplicaSets' Pods (calculateStatus). */
export interface PodCounts {
  /** Active Pods of every ReplicaSet of the Deployment. */
  replicas: number;
  /** Active Pods of the ReplicaSet of the current template. */
  updated: number;
  /** Ready ones among the active Pods. */
  ready: number;
  /** Available ones (Ready; minReadySeconds is not simulated). */
  available: number;
}

/**
 * The status the deployment controller would write after one sync, given its Pods' counts (a
 * number: that many Ready Pods, all of the current template, spec.replicas of them active).
 * `scale` multiplies progressDeadlineSeconds (simulated time).
 */
export function nextDeploymentStatus(
  d: StoredObject,
  pods: number | PodCounts,
  now: Date,
  scale = 1,
): DeploymentStatus {
  const spec = (d.spec ?? {}) as DeploymentSpec;
  const prev = (d.status ?? {}) as DeploymentStatus;
  const replicas = spec.replicas ?? 1;
  const template = (d.spec as Json | undefined)?.template;
  const rsName = `${d.metadata.name}-${podTemplateHash(template, prev.collisionCount)}`;
  const deadline = spec.progressDeadlineSeconds ?? 600;
  const hasDeadline = deadline !== MAX_INT32;

  // getNewReplicaSet: the ReplicaSet of this template is created (a first rollout or a new
  // template) — Progressing NewReplicaSetCreated is recorded, and its pods start from zero.
  let conds = [...(prev.conditions ?? [])];
  let old: DeploymentStatus = prev;
  const progressing = conds.find((c) => c.type === "Progressing");
  if (!progressing?.message?.includes(`"${rsName}"`)) {
    if (hasDeadline) {
      conds = setCondition(
        conds,
        newCondition(
          "Progressing",
          "True",
          NEW_RS_CREATED,
          `Created new replica set "${rsName}"`,
          now,
        ),
      );
    }
    old = { ...prev, updatedReplicas: 0, readyReplicas: 0, availableReplicas: 0 };
  }

  // calculateStatus
  const counts: PodCounts =
    typeof pods === "number"
      ? {
          replicas,
          updated: replicas,
          ready: Math.min(pods, replicas),
          available: Math.min(pods, replicas),
        }
      : pods;
  const available = counts.available;
  const next: DeploymentStatus = {
    observedGeneration: Number(d.metadata.generation ?? 0),
    replicas: counts.replicas,
    updatedReplicas: counts.updated,
    readyReplicas: counts.ready,
    availableReplicas: available,
    unavailableReplicas: Math.max(0, Math.max(replicas, counts.replicas) - available),
  };
  conds = setCondition(
    conds,
    available >= replicas - maxUnavailable(spec)
      ? newCondition(
          "Available",
          "True",
          MINIMUM_REPLICAS_AVAILABLE,
          "Deployment has minimum availability.",
          now,
        )
      : newCondition(
          "Available",
          "False",
          MINIMUM_REPLICAS_UNAVAILABLE,
          "Deployment does not have minimum availability.",
          now,
        ),
  );

  // syncRolloutStatus
  if (!hasDeadline) conds = conds.filter((c) => c.type !== "Progressing");
  const current = conds.find((c) => c.type === "Progressing");
  const complete = next.replicas === next.updatedReplicas && current?.reason === NEW_RS_AVAILABLE;
  if (hasDeadline && !complete) {
    const deploymentComplete =
      next.updatedReplicas === replicas &&
      next.replicas === replicas &&
      next.availableReplicas === replicas;
    const oldOld = (old.replicas ?? 0) - (old.updatedReplicas ?? 0);
    const newOld = (next.replicas ?? 0) - (next.updatedReplicas ?? 0);
    const madeProgress =
      (next.updatedReplicas ?? 0) > (old.updatedReplicas ?? 0) ||
      newOld < oldOld ||
      (next.readyReplicas ?? 0) > (old.readyReplicas ?? 0) ||
      (next.availableReplicas ?? 0) > (old.availableReplicas ?? 0);
    if (deploymentComplete) {
      conds = setCondition(
        conds,
        newCondition(
          "Progressing",
          "True",
          NEW_RS_AVAILABLE,
          `ReplicaSet "${rsName}" has successfully progressed.`,
          now,
        ),
      );
    } else if (madeProgress) {
      const c = newCondition(
        "Progressing",
        "True",
        RS_UPDATED,
        `ReplicaSet "${rsName}" is progressing.`,
        now,
      );
      if (current?.status === "True") c.lastTransitionTime = current.lastTransitionTime;
      conds = [...conds.filter((x) => x.type !== "Progressing"), c];
    } else if (current && current.reason !== NEW_RS_AVAILABLE) {
      const from = Date.parse(current.lastUpdateTime ?? "");
      const timedOut =
        current.reason === TIMED_OUT || from + deadline * 1000 * scale < now.getTime();
      if (timedOut) {
        conds = setCondition(
          conds,
          newCondition(
            "Progressing",
            "False",
            TIMED_OUT,
            `ReplicaSet "${rsName}" has timed out progressing.`,
            now,
          ),
        );
      }
    }
  }
  return omitZero({
    ...next,
    conditions: conds,
    ...(prev.collisionCount !== undefined ? { collisionCount: prev.collisionCount } : {}),
  });
}

/** When the progress deadline of a rollout in progress passes (store clock ms), if any. */
export function progressDeadlineAt(d: StoredObject, scale = 1): number | undefined {
  const spec = (d.spec ?? {}) as DeploymentSpec;
  const deadline = spec.progressDeadlineSeconds ?? 600;
  if (deadline === MAX_INT32) return undefined;
  const c = ((d.status ?? {}) as DeploymentStatus).conditions?.find(
    (x) => x.type === "Progressing",
  );
  if (!c || c.status !== "True" || c.reason === NEW_RS_AVAILABLE) return undefined;
  const from = Date.parse(c.lastUpdateTime ?? "");
  return Number.isNaN(from) ? undefined : from + deadline * 1000 * scale;
}

// ---- DaemonSet status ------------------------------------------------------------------------

/** k8s: daemon_controller.go updateDaemonSetStatus, with a daemon pod on every node it should run on. */
export function nextDaemonSetStatus(ds: StoredObject, nodes: NodeLike[]): Json {
  const prev = (ds.status ?? {}) as Json;
  const { spec } = templateOf(ds);
  const scheduled = nodes.filter((n) => daemonShouldRun(spec, n));
  const ready = scheduled.filter((n) => podWouldBeReady(spec, n)).length;
  const desired = scheduled.length;
  const out: Json = {
    currentNumberScheduled: desired,
    numberMisscheduled: 0,
    desiredNumberScheduled: desired,
    numberReady: ready,
  };
  Object.assign(
    out,
    omitZero({
      observedGeneration: Number(ds.metadata.generation ?? 0),
      updatedNumberScheduled: desired,
      numberAvailable: ready,
      numberUnavailable: desired - ready,
    }),
  );
  if (prev.collisionCount !== undefined) out.collisionCount = prev.collisionCount;
  if (Array.isArray(prev.conditions) && prev.conditions.length > 0)
    out.conditions = prev.conditions;
  return out;
}

// ---- the controllers -------------------------------------------------------------------------

const keyOf = (o: StoredObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

function startStatusController(
  ctx: ControllerContext,
  name: string,
  kind: "Deployment" | "DaemonSet",
  compute: (o: StoredObject, nodes: NodeLike[]) => Json,
  after?: (current: StoredObject, key: string) => void,
): { stop: StopFn; enqueue: (key: string) => void } {
  const { store, log } = ctx;
  const queue = new WorkQueue(
    (key) => {
      const [namespace, objName] = key.split("/") as [string, string];
      const o = store.get({ apiVersion: "apps/v1", kind, namespace, name: objName });
      if (!o || o.metadata.deletionTimestamp) return;
      const nodes = store.list("v1", "Node") as unknown as NodeLike[];
      const status = compute(o, nodes);
      if (deepEqual(status, o.status ?? {})) {
        after?.(o, key);
        return;
      }
      try {
        // The object read carries its resourceVersion: a newer one is a conflict, looked at again.
        const written = store.update({ ...o, status }, { subresource: "status" });
        after?.(written, key);
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 409) queue.add(key);
        else if (code !== 404) throw e;
      }
    },
    (key, e) => log(`${name}: ${kind} ${key}: ${(e as Error).message}`),
  );
  const enqueueAll = () => {
    for (const o of store.list("apps/v1", kind)) queue.add(keyOf(o));
  };
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.group === "" && ev.resource.kind === "Node") enqueueAll();
    else if (ev.resource.group === "apps" && ev.resource.kind === kind && ev.type !== "DELETED") {
      queue.add(keyOf(ev.object));
    }
  });
  enqueueAll();
  return {
    enqueue: (key) => queue.add(key),
    stop: () => {
      unsubscribe();
      queue.stop();
    },
  };
}

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** getNewReplicaSet: the ReplicaSet of the Deployment's current template, at spec.replicas. */
export function replicaSetFor(d: StoredObject): Json {
  const spec = (d.spec ?? {}) as Json & { selector?: Selector; template?: Json };
  const status = (d.status ?? {}) as DeploymentStatus;
  const hash = podTemplateHash(spec.template, status.collisionCount);
  const template = structuredClone(spec.template ?? {}) as Json & {
    metadata?: { labels?: Record<string, string> };
  };
  const labels = { ...template.metadata?.labels, [POD_TEMPLATE_HASH]: hash };
  template.metadata = { ...template.metadata, labels };
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name: `${d.metadata.name}-${hash}`,
      namespace: d.metadata.namespace,
      labels,
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          name: d.metadata.name,
          uid: d.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      replicas: (spec.replicas as number | undefined) ?? 1,
      selector: {
        ...spec.selector,
        matchLabels: { ...spec.selector?.matchLabels, [POD_TEMPLATE_HASH]: hash },
      },
      template,
    },
  };
}

/** calculateStatus's counts over the Pods of the Deployment's ReplicaSets. */
export function deploymentPodCounts(
  current: string,
  replicaSets: StoredObject[],
  pods: StoredObject[],
): PodCounts {
  const counts: PodCounts = { replicas: 0, updated: 0, ready: 0, available: 0 };
  for (const rs of replicaSets) {
    const active = ownedBy(pods, rs.metadata.uid).filter(podIsActive);
    counts.replicas += active.length;
    if (rs.metadata.name === current) counts.updated += active.length;
    const ready = active.filter(podIsReady).length;
    counts.ready += ready;
    counts.available += ready;
  }
  return counts;
}

export const POD_TEMPLATE_HASH = "pod-template-hash";

/** One sync of a Deployment: its ReplicaSets scaled, its status computed from their Pods. */
function syncDeployment(ctx: ControllerContext, d: StoredObject, timeScale: number): StoredObject {
  const { store, log } = ctx;
  const namespace = d.metadata.namespace ?? "";
  const wanted = replicaSetFor(d);
  const name = (wanted.metadata as { name: string }).name;
  const owned = ownedBy(store.list(RS.apiVersion, RS.kind, { namespace }), d.metadata.uid);
  const replicas = ((d.spec ?? {}) as DeploymentSpec).replicas ?? 1;
  let current = owned.find((rs) => rs.metadata.name === name);
  if (!current && !store.get({ ...RS, namespace, name })) {
    current = store.create(wanted, { fieldValidation: "Ignore" });
    log(`deployment-controller: ${namespace}/${d.metadata.name}: created ReplicaSet ${name}`);
  }
  for (const rs of owned) {
    const want = rs.metadata.name === name ? replicas : 0;
    if (Number((rs.spec as Json | undefined)?.replicas ?? 1) === want) continue;
    store.update({ ...rs, spec: { ...(rs.spec as Json), replicas: want } });
    log(`deployment-controller: scaled ReplicaSet ${namespace}/${rs.metadata.name} to ${want}`);
  }
  const all = current && !owned.includes(current) ? [...owned, current] : owned;
  const counts = deploymentPodCounts(name, all, store.list("v1", "Pod", { namespace }));
  const status = nextDeploymentStatus(d, counts, store.now(), timeScale) as Json;
  if (deepEqual(status, d.status ?? {})) return d;
  return store.update({ ...d, status }, { subresource: "status" });
}

/**
 * deployment-controller: ReplicaSets per template, status from their Pods. `timeScale`
 * multiplies progressDeadlineSeconds.
 */
export function startDeploymentController(ctx: ControllerContext, timeScale = 1): StopFn {
  const { store, log } = ctx;
  const timers = new Map<string, NodeJS.Timeout>();
  const queue: WorkQueue = new WorkQueue(
    (key): void => {
      const [namespace, name] = key.split("/") as [string, string];
      const d = store.get({ apiVersion: "apps/v1", kind: "Deployment", namespace, name });
      if (!d || d.metadata.deletionTimestamp) return;
      let written: StoredObject;
      try {
        written = syncDeployment(ctx, d, timeScale);
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 409) queue.add(key);
        else if (code !== 404) throw e;
        return;
      }
      requeueStuck(written, key);
    },
    (key, e) => log(`deployment-controller: Deployment ${key}: ${(e as Error).message}`),
  );
  // k8s: deployment_controller.go requeueStuckDeployment — look again when the progress
  // deadline of a rollout that is not complete passes.
  const requeueStuck = (current: StoredObject, key: string) => {
    clearTimeout(timers.get(key));
    timers.delete(key);
    const at = progressDeadlineAt(current, timeScale);
    if (at === undefined) return;
    const t = setTimeout(
      () => {
        timers.delete(key);
        queue.add(key);
      },
      Math.max(5, at - store.now().getTime() + 5),
    );
    t.unref();
    timers.set(key, t);
  };
  const unsubscribe = store.subscribe((ev) => {
    const r = ev.resource;
    if (r.group !== "apps") return;
    if (r.kind === "Deployment" && ev.type !== "DELETED") queue.add(keyOf(ev.object));
    if (r.kind === RS.kind) {
      const owner = controllerOf(ev.object);
      if (owner?.kind === "Deployment") {
        queue.add(`${ev.object.metadata.namespace ?? ""}/${owner.name}`);
      }
    }
  });
  for (const d of store.list("apps/v1", "Deployment")) queue.add(keyOf(d));
  return () => {
    unsubscribe();
    queue.stop();
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
  };
}

/** daemonset-controller: DaemonSet status as if its daemon pods ran on every node they fit. */
export function startDaemonSetController(ctx: ControllerContext): StopFn {
  return startStatusController(ctx, "daemonset-controller", "DaemonSet", (ds, nodes) =>
    nextDaemonSetStatus(ds, nodes),
  ).stop;
}
