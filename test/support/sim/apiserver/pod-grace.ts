// SIMULATION (test double). Graceful deletion of a Pod, as the Pod registry's strategy decides it:
// a Pod bound to a node and not finished is not removed by a DELETE but marked (deletionTimestamp
// now + grace, deletionGracePeriodSeconds grace); its node's kubelet stops its containers and
// then deletes it with grace 0. An unbound or finished Pod, or a grace of 0, goes at once.
// k8s: pkg/registry/core/pod/strategy.go (podStrategy.CheckGracefulDelete: the request's
// gracePeriodSeconds, else spec.terminationGracePeriodSeconds (API default 30); 0 when
// spec.nodeName is empty or the phase is Failed/Succeeded), staging/src/k8s.io/apiserver/pkg/
// registry/rest/delete.go (BeforeDelete: a second delete can only shorten the grace),
// staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go (202 while the object remains).
import type { StoredObject } from "./store.js";

/** The grace period (seconds) a delete of `pod` gets; 0 means the Pod is removed at once. */
export function podDeletionGrace(pod: StoredObject, requested?: number): number {
  const spec = (pod.spec ?? {}) as { nodeName?: string; terminationGracePeriodSeconds?: number };
  const phase = ((pod.status ?? {}) as { phase?: string }).phase;
  if (!spec.nodeName || phase === "Failed" || phase === "Succeeded") return 0;
  return Math.max(0, requested ?? spec.terminationGracePeriodSeconds ?? 30);
}

/**
 * The marked Pod a graceful delete stores, or undefined when it is removed at once. A Pod
 * already marked keeps its mark unless the new deadline is earlier.
 */
export function markedForDeletion(
  pod: StoredObject,
  now: Date,
  requested?: number,
): StoredObject | undefined {
  const grace = podDeletionGrace(pod, requested);
  if (grace === 0) return undefined;
  const deadline = new Date(now.getTime() + grace * 1000);
  const current = pod.metadata.deletionTimestamp as string | undefined;
  if (current && Date.parse(current) <= deadline.getTime()) return pod;
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      deletionTimestamp: deadline.toISOString().replace(/\.\d{3}Z$/, "Z"),
      deletionGracePeriodSeconds: grace,
    },
  };
}
