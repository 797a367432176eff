// SIMULATION (test double). The pod garbage collector's orphan pass: a Pod bound to a Node that
// no longer exists is deleted at once (grace 0), since no kubelet will ever finish it.
// k8s: pkg/controller/podgc/gc_controller.go (gcOrphaned: pods whose spec.nodeName names no
// Node, after the node has been missing for a quarantine of 40 s; force deletion).
// SIMULATION LIMITS: no quarantine (the Node's deletion is its own proof here); the terminated
// pods threshold and the unscheduled-terminating pass are not simulated.
import type { StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";

/** The Pods bound to a node absent from `nodeNames`. */
export function orphanedPods(pods: StoredObject[], nodeNames: Set<string>): StoredObject[] {
  return pods.filter((p) => {
    const node = ((p.spec ?? {}) as { nodeName?: string }).nodeName;
    return !!node && !nodeNames.has(node);
  });
}

export function startPodGC(ctx: ControllerContext, periodMs: number): StopFn {
  const { store, log } = ctx;
  const sweep = () => {
    const nodes = new Set(store.list("v1", "Node").map((n) => n.metadata.name));
    for (const p of orphanedPods(store.list("v1", "Pod"), nodes)) {
      try {
        store.delete(
          { apiVersion: "v1", kind: "Pod", namespace: p.metadata.namespace, name: p.metadata.name },
          { preconditions: { uid: String(p.metadata.uid) } },
        );
        log(
          `pod-garbage-collector: deleted orphaned pod ${p.metadata.namespace}/${p.metadata.name}`,
        );
      } catch (e) {
        if (![404, 409].includes((e as { code?: number }).code ?? 0)) throw e;
      }
    }
  };
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.group === "" && ev.resource.kind === "Node" && ev.type === "DELETED") {
      setImmediate(sweep);
    }
  });
  const timer = setInterval(sweep, periodMs);
  timer.unref();
  return () => {
    unsubscribe();
    clearInterval(timer);
  };
}
