// SIMULATION (test double). PodDisruptionBudgets: the disruption controller's status, and the
// check the pods/eviction subresource makes against it (server.ts). Both over the Pods in the
// store — the simulation runs no pods but static ones, so these are mirror pods and the Pods a
// test creates.
// k8s: pkg/controller/disruption/disruption.go (trySync: getPodsForPdb — a nil selector selects
// nothing, an empty one every Pod of the namespace; getExpectedPodCount — minAvailable as a
// number: desiredHealthy = minAvailable, expectedCount = the number of Pods; maxUnavailable or a
// percentage: scaled from expectedCount, rounded up; countHealthyPods — Ready and not being
// deleted, less the Pods still in disruptedPods; buildDisruptedPodMap — entries expire after
// DeletionTimeout, 2 minutes, or when the Pod is gone or being deleted; updatePdbStatus —
// disruptionsAllowed = currentHealthy − desiredHealthy, at least 0, and 0 when expectedCount
// is 0; the DisruptionAllowed condition with reason SufficientPods or InsufficientPods),
// pkg/registry/core/pod/storage/eviction.go (EvictionREST.Create: canIgnorePDB for Pods that
// are Succeeded, Failed, Pending or being deleted; more than one PDB is a 500; checkAndDecrement:
// a PDB not yet observed (observedGeneration < generation) or with no disruptions allowed is
// 429 TooManyRequests "Cannot evict pod as it would violate the pod's disruption budget." with a
// DisruptionBudget cause; the IfHealthyBudget unhealthy-pod rule; otherwise disruptionsAllowed
// is decremented, the Pod recorded in disruptedPods, then the Pod deleted).
// SIMULATION differences: expectedCount for a percentage or maxUnavailable is the number of
// matching Pods (the real controller reads the scale of their controller); MaxDisruptedPodSize
// is not enforced.
import { matchesLabelSelectorObject } from "../selectors.js";
import { failure, internalError, type StatusError } from "../status.js";
import type { Json, ObjectStore, StoredObject } from "../store.js";
import { rfc3339 } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { WorkQueue } from "./queue.js";

const PDB = { apiVersion: "policy/v1", kind: "PodDisruptionBudget" };
/** k8s: disruption.go DeletionTimeout. */
export const DELETION_TIMEOUT_MS = 2 * 60_000;

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

interface PdbSpec {
  selector?: Selector | null;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  unhealthyPodEvictionPolicy?: "IfHealthyBudget" | "AlwaysAllow";
}

export interface PdbStatus {
  observedGeneration?: number;
  disruptedPods?: Record<string, string>;
  disruptionsAllowed: number;
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  conditions?: Json[];
}

function podReady(pod: StoredObject): boolean {
  const conds = ((pod.status ?? {}) as { conditions?: { type: string; status: string }[] })
    .conditions;
  return (conds ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** intstr.GetScaledValueFromIntOrPercent with roundUp. */
function scaled(v: number | string, total: number): number {
  if (typeof v === "number") return v;
  const m = /^(\d+)%$/.exec(v);
  return m ? Math.ceil((Number(m[1]) * total) / 100) : Number(v) || 0;
}

/** getPodsForPdb: a nil selector selects nothing, an empty one everything. */
export function podsOfPdb(store: ObjectStore, pdb: StoredObject): StoredObject[] {
  const selector = ((pdb.spec ?? {}) as PdbSpec).selector;
  if (!selector) return [];
  return store
    .list("v1", "Pod", { namespace: pdb.metadata.namespace ?? "" })
    .filter((p) => matchesLabelSelectorObject(selector, p.metadata.labels));
}

/** The status the disruption controller writes for `pdb` given its Pods, at `now`. */
export function nextPdbStatus(pdb: StoredObject, pods: StoredObject[], now: Date): PdbStatus {
  const spec = (pdb.spec ?? {}) as PdbSpec;
  const prev = (pdb.status ?? {}) as Partial<PdbStatus>;
  const live = new Map(pods.map((p) => [p.metadata.name, p]));
  const disrupted: Record<string, string> = {};
  for (const [name, at] of Object.entries(prev.disruptedPods ?? {})) {
    const pod = live.get(name);
    if (!pod || pod.metadata.deletionTimestamp) continue;
    if (Date.parse(at) + DELETION_TIMEOUT_MS <= now.getTime()) continue;
    disrupted[name] = at;
  }
  let expectedCount = pods.length;
  let desiredHealthy = 0;
  if (spec.maxUnavailable !== undefined) {
    desiredHealthy = Math.max(0, expectedCount - scaled(spec.maxUnavailable, expectedCount));
  } else if (spec.minAvailable !== undefined) {
    desiredHealthy = scaled(spec.minAvailable, expectedCount);
    if (typeof spec.minAvailable === "number") expectedCount = pods.length;
  }
  const currentHealthy = pods.filter(
    (p) => podReady(p) && !p.metadata.deletionTimestamp && !(p.metadata.name in disrupted),
  ).length;
  const disruptionsAllowed = expectedCount <= 0 ? 0 : Math.max(0, currentHealthy - desiredHealthy);
  const sufficient = disruptionsAllowed > 0;
  const prevCond = (
    prev.conditions as { type: string; status: string; lastTransitionTime?: string }[] | undefined
  )?.find((c) => c.type === "DisruptionAllowed");
  const status = sufficient ? "True" : "False";
  return {
    observedGeneration: Number(pdb.metadata.generation ?? 1),
    ...(Object.keys(disrupted).length > 0 ? { disruptedPods: disrupted } : {}),
    disruptionsAllowed,
    currentHealthy,
    desiredHealthy,
    expectedPods: expectedCount,
    conditions: [
      {
        type: "DisruptionAllowed",
        status,
        observedGeneration: Number(pdb.metadata.generation ?? 1),
        lastTransitionTime:
          prevCond?.status === status && prevCond.lastTransitionTime
            ? prevCond.lastTransitionTime
            : rfc3339(now),
        reason: sufficient ? "SufficientPods" : "InsufficientPods",
        message: "",
      },
    ],
  };
}

/** disruption-controller: PDB status recomputed on every Pod and PDB event. */
export function startDisruptionController(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const queue = new WorkQueue(
    (key) => {
      const [namespace, name] = key.split("/") as [string, string];
      const pdb = store.get({ ...PDB, namespace, name });
      if (!pdb || pdb.metadata.deletionTimestamp) return;
      const status = nextPdbStatus(pdb, podsOfPdb(store, pdb), store.now());
      if (JSON.stringify(status) === JSON.stringify(pdb.status ?? {})) return;
      try {
        store.update({ ...pdb, status: status }, { subresource: "status" });
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 409) queue.add(key);
        else if (code !== 404) throw e;
      }
      const expiring = Object.values(status.disruptedPods ?? {}).map(
        (at) => Date.parse(at) + DELETION_TIMEOUT_MS - store.now().getTime(),
      );
      if (expiring.length > 0) queue.addAfter(key, Math.min(...expiring) + 5);
    },
    (key, e) => log(`disruption-controller: PodDisruptionBudget ${key}: ${(e as Error).message}`),
  );
  const enqueueNamespace = (namespace: string | undefined) => {
    for (const p of store.list(PDB.apiVersion, PDB.kind, { namespace: namespace ?? "" })) {
      queue.add(`${p.metadata.namespace ?? ""}/${p.metadata.name}`);
    }
  };
  const unsubscribe = store.subscribe((ev) => {
    const r = ev.resource;
    if ((r.group === "" && r.kind === "Pod") || (r.group === "policy" && r.kind === PDB.kind)) {
      enqueueNamespace(ev.object.metadata.namespace);
    }
  });
  for (const p of store.list(PDB.apiVersion, PDB.kind)) {
    queue.add(`${p.metadata.namespace ?? ""}/${p.metadata.name}`);
  }
  return () => {
    unsubscribe();
    queue.stop();
  };
}

const TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget.";

function tooManyRequests(cause: string, retryAfterSeconds: number): StatusError {
  return failure(429, "TooManyRequests", TOO_MANY, {
    causes: [{ reason: "DisruptionBudget", message: cause }],
    ...(retryAfterSeconds > 0 ? { retryAfterSeconds } : {}),
  });
}

/**
 * EvictionREST.Create's budget check: throws the Status kube-apiserver answers, or records the
 * disruption in the PDB's status. The caller then deletes the Pod.
 */
export function checkEviction(store: ObjectStore, pod: StoredObject, dryRun = false): void {
  const phase = ((pod.status ?? {}) as { phase?: string }).phase;
  // canIgnorePDB
  if (
    phase === "Succeeded" ||
    phase === "Failed" ||
    phase === "Pending" ||
    pod.metadata.deletionTimestamp
  ) {
    return;
  }
  const pdbs = store
    .list(PDB.apiVersion, PDB.kind, { namespace: pod.metadata.namespace ?? "" })
    .filter((pdb) => {
      const selector = ((pdb.spec ?? {}) as PdbSpec).selector;
      return !!selector && matchesLabelSelectorObject(selector, pod.metadata.labels);
    });
  if (pdbs.length === 0) return;
  if (pdbs.length > 1) {
    throw internalError(
      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );
  }
  const pdb = pdbs[0]!;
  const spec = (pdb.spec ?? {}) as PdbSpec;
  const status = (pdb.status ?? {}) as Partial<PdbStatus>;
  const desired = status.desiredHealthy ?? 0;
  const current = status.currentHealthy ?? 0;
  // The unhealthy-pod rule: a Pod that is not Ready may go when the budget is met (the
  // default IfHealthyBudget) or always (AlwaysAllow), without using up a disruption.
  if (!podReady(pod)) {
    if (spec.unhealthyPodEvictionPolicy === "AlwaysAllow") return;
    if (current >= desired && desired > 0) return;
  }
  if ((status.observedGeneration ?? 0) < Number(pdb.metadata.generation ?? 1)) {
    throw tooManyRequests(
      `The disruption budget ${pdb.metadata.name} is still being processed by the server.`,
      10,
    );
  }
  const allowed = status.disruptionsAllowed ?? 0;
  if (allowed < 0) {
    throw failure(
      403,
      "Forbidden",
      `poddisruptionbudget.policy "${pdb.metadata.name}" is forbidden: pdb disruptions allowed is negative`,
    );
  }
  if (allowed === 0) {
    throw tooManyRequests(
      `The disruption budget ${pdb.metadata.name} needs ${desired} healthy pods and has ${current} currently`,
      0,
    );
  }
  if (dryRun) return;
  const next = {
    ...status,
    disruptionsAllowed: allowed - 1,
    disruptedPods: { ...status.disruptedPods, [pod.metadata.name]: rfc3339(store.now()) },
  };
  // A conflict here is kube-apiserver's too: the eviction fails and is retried by its client.
  store.update({ ...pdb, status: next }, { subresource: "status" });
}
