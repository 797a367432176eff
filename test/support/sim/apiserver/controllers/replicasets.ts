// SIMULATION (test double). The replicaset controller: a ReplicaSet's Pods are created from its
// template (generateName "<replicaset>-": the API server appends 5 random characters,
// apimachinery rand.String) or deleted (gracefully, as a DELETE of the API) until as many
// active Pods as spec.replicas exist, and its status counts them.
// k8s: pkg/controller/replicaset/replica_set.go (manageReplicas, syncReplicaSet),
// pkg/controller/replicaset/replica_set_utils.go (calculateStatus: replicas,
// fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration),
// pkg/controller/controller_utils.go (GetPodFromTemplate: labels, annotations, the controller
// owner reference, generateName "<name>-").
// SIMULATION LIMITS: no adoption or release of Pods by label (only Pods whose controller
// reference names the ReplicaSet count); minReadySeconds is not simulated (a Ready Pod is
// available); no slow-start batches (every missing Pod is created at once).
import { deepEqual } from "../patch.js";
import type { Json, StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { controllerOf, ownedBy, podIsActive, podIsReady, podsToDelete } from "./pods.js";
import { WorkQueue } from "./queue.js";

export const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;

interface Template {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Json;
}

/** GetPodFromTemplate: the Pod a ReplicaSet creates. */
export function podFromTemplate(rs: StoredObject): Json {
  const template = ((rs.spec ?? {}) as { template?: Template }).template ?? {};
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: `${rs.metadata.name}-`,
      namespace: rs.metadata.namespace,
      labels: { ...template.metadata?.labels },
      ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
      ownerReferences: [
        {
          apiVersion: RS.apiVersion,
          kind: RS.kind,
          name: rs.metadata.name,
          uid: rs.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: structuredClone(template.spec ?? {}),
  };
}

/** calculateStatus over the ReplicaSet's own Pods. */
export function replicaSetStatus(rs: StoredObject, pods: StoredObject[]): Json {
  const active = pods.filter(podIsActive);
  const labels = ((rs.spec ?? {}) as { template?: Template }).template?.metadata?.labels ?? {};
  const fullyLabeled = active.filter((p) =>
    Object.entries(labels).every(([k, v]) => p.metadata.labels?.[k] === v),
  ).length;
  const ready = active.filter(podIsReady).length;
  const prev = (rs.status ?? {}) as Json;
  return {
    replicas: active.length,
    ...(fullyLabeled > 0 ? { fullyLabeledReplicas: fullyLabeled } : {}),
    ...(ready > 0 ? { readyReplicas: ready, availableReplicas: ready } : {}),
    observedGeneration: Number(rs.metadata.generation ?? 1),
    ...(prev.conditions ? { conditions: prev.conditions } : {}),
  };
}

const keyOf = (o: StoredObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** replicaset-controller: Pods created and deleted to match spec.replicas, status written. */
export function startReplicaSetController(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const sync = (key: string) => {
    const [namespace, name] = key.split("/") as [string, string];
    const rs = store.get({ ...RS, namespace, name });
    if (!rs || rs.metadata.deletionTimestamp) return;
    const pods = ownedBy(store.list("v1", "Pod", { namespace }), rs.metadata.uid);
    const active = pods.filter(podIsActive);
    const diff = Number((rs.spec as Json | undefined)?.replicas ?? 1) - active.length;
    for (let i = 0; i < diff; i++) {
      const pod = store.create(podFromTemplate(rs), { fieldValidation: "Ignore" });
      log(`replicaset-controller: ${key}: created pod ${pod.metadata.name}`);
    }
    for (const p of podsToDelete(active, -diff)) {
      store.delete(
        { apiVersion: "v1", kind: "Pod", namespace, name: p.metadata.name },
        {
          graceful: true,
          preconditions: { uid: String(p.metadata.uid) },
        },
      );
      log(`replicaset-controller: ${key}: deleted pod ${p.metadata.name}`);
    }
    if (diff !== 0) return; // the Pod events bring this key back for the status
    const status = replicaSetStatus(rs, pods);
    if (!deepEqual(status, rs.status ?? {}))
      store.update({ ...rs, status }, { subresource: "status" });
  };
  const queue = new WorkQueue(
    (key) => {
      try {
        sync(key);
      } catch (e) {
        if ((e as { code?: number }).code === 409) queue.add(key);
        else if ((e as { code?: number }).code !== 404) throw e;
      }
    },
    (key, e) => log(`replicaset-controller: ReplicaSet ${key}: ${(e as Error).message}`),
  );
  const unsubscribe = store.subscribe((ev) => {
    const r = ev.resource;
    if (r.group === "apps" && r.kind === RS.kind && ev.type !== "DELETED")
      queue.add(keyOf(ev.object));
    if (r.group === "" && r.kind === "Pod") {
      const owner = controllerOf(ev.object);
      if (owner?.kind === RS.kind) queue.add(`${ev.object.metadata.namespace ?? ""}/${owner.name}`);
    }
  });
  for (const rs of store.list(RS.apiVersion, RS.kind)) queue.add(keyOf(rs));
  return () => {
    unsubscribe();
    queue.stop();
  };
}
