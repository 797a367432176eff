// SIMULATION (test double). What the simulated workload controllers read of a Pod: its
// controller owner, whether it is active, Ready, and which to delete first.
// k8s: pkg/controller/controller_utils.go (FilterActivePods: not Succeeded/Failed and no
// deletionTimestamp; ActivePods ordering: unassigned < assigned, Pending < Unknown < Running,
// not Ready < Ready, newer < older), pkg/api/v1/pod/util.go (IsPodReady: the Ready condition),
// staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/controller_ref.go (GetControllerOf).
import type { StoredObject } from "../store.js";

interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

interface PodStatusLike {
  phase?: string;
  podIP?: string;
  conditions?: { type: string; status: string }[];
}

export const statusOf = (pod: StoredObject) => (pod.status ?? {}) as PodStatusLike;

/** The owner reference with controller: true, if any. */
export function controllerOf(o: StoredObject): OwnerRef | undefined {
  return ((o.metadata.ownerReferences ?? []) as OwnerRef[]).find((r) => r.controller === true);
}

/** Objects among `all` whose controller is the object with `uid`. */
export function ownedBy<T extends StoredObject>(all: T[], uid: string | undefined): T[] {
  return all.filter((o) => uid !== undefined && controllerOf(o)?.uid === uid);
}

/** k8s: IsPodReady */
export function podIsReady(pod: StoredObject): boolean {
  return (statusOf(pod).conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** k8s: IsPodActive */
export function podIsActive(pod: StoredObject): boolean {
  const phase = statusOf(pod).phase;
  return phase !== "Succeeded" && phase !== "Failed" && !pod.metadata.deletionTimestamp;
}

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

/** The `n` Pods a scale-down deletes first (ActivePods' order). */
export function podsToDelete(pods: StoredObject[], n: number): StoredObject[] {
  const nodeOf = (p: StoredObject) => ((p.spec ?? {}) as { nodeName?: string }).nodeName;
  const key = (p: StoredObject): [number, number, number, number] => [
    nodeOf(p) ? 1 : 0,
    PHASE_RANK[statusOf(p).phase ?? "Pending"] ?? 0,
    podIsReady(p) ? 1 : 0,
    -Date.parse((p.metadata.creationTimestamp as string | undefined) ?? "") || 0,
  ];
  return [...pods]
    .sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! - kb[i]!;
      return 0;
    })
    .slice(0, Math.max(0, n));
}
