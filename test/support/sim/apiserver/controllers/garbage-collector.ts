// SIMULATION (test double). The garbage collector: when an owner is deleted, dependents whose
// every owner is gone are deleted (background propagation) or, with propagationPolicy Orphan,
// lose the reference; an object created with ownerReferences none of which resolves to a live
// object (same name, kind and uid) is deleted too; dangling references beside a live owner are
// removed. k8s: pkg/controller/garbagecollector/garbagecollector.go (attemptToDeleteItem,
// classifyReferences: solid/dangling/waitingForDependentsDeletion), .../graph_builder.go.
import { RESOURCES, resourceForKind } from "../resources.js";
import type { Json, StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { WorkQueue } from "./queue.js";

interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

interface Coords {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

const SEP = "\u0000";
const encode = (c: Coords) => [c.apiVersion, c.kind, c.namespace ?? "", c.name].join(SEP);
function decode(key: string): Coords {
  const [apiVersion, kind, namespace, name] = key.split(SEP) as [string, string, string, string];
  return namespace ? { apiVersion, kind, namespace, name } : { apiVersion, kind, name };
}

export function startGarbageCollector(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const queue = new WorkQueue(attemptToDelete, (k, e) =>
    log(`garbagecollector: ${decode(k).name}: ${(e as Error).message}`),
  );

  function ownerState(dependent: StoredObject, ref: OwnerRef): "solid" | "dangling" | "unknown" {
    const info = resourceForKind(ref.apiVersion, ref.kind);
    if (!info || info.virtual) return "unknown"; // kinds the simulation does not serve: leave alone
    if (info.namespaced && !dependent.metadata.namespace) return "unknown"; // invalid reference
    const owner = store.get({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      name: ref.name,
      ...(info.namespaced ? { namespace: dependent.metadata.namespace } : {}),
    });
    return owner && owner.metadata.uid === ref.uid ? "solid" : "dangling";
  }

  function attemptToDelete(key: string): void {
    const c = decode(key);
    const obj = store.get(c);
    if (!obj) return;
    const refs = (obj.metadata.ownerReferences ?? []) as OwnerRef[];
    if (refs.length === 0) return;
    const states = refs.map((r) => ownerState(obj, r));
    if (states.some((s) => s === "solid" || s === "unknown")) {
      const dangling = refs.filter((_, i) => states[i] === "dangling");
      if (dangling.length === 0) return;
      const keep = refs.filter((_, i) => states[i] !== "dangling");
      store.patch(c, { metadata: { ownerReferences: keep } }, "merge");
      log(
        `garbagecollector: removed dangling owner references from ${c.kind} ${c.namespace ?? ""}/${c.name}`,
      );
      return;
    }
    store.delete(c, { preconditions: { uid: String(obj.metadata.uid) } });
    log(
      `garbagecollector: deleted ${c.kind} ${c.namespace ? `${c.namespace}/` : ""}${c.name} (owner gone)`,
    );
  }

  function orphan(ownerUID: string): void {
    for (const dep of dependentsOf(ownerUID)) {
      const refs = ((dep.metadata.ownerReferences ?? []) as OwnerRef[]).filter(
        (r) => r.uid !== ownerUID,
      );
      store.patch(
        coords(dep),
        { metadata: { ownerReferences: refs.length > 0 ? refs : null } },
        "merge",
      );
    }
  }

  function coords(o: StoredObject): Coords {
    return {
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata.name,
      ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    };
  }

  function dependentsOf(uid: string): StoredObject[] {
    const out: StoredObject[] = [];
    for (const r of RESOURCES) {
      if (r.virtual) continue;
      for (const o of store.listIn(r)) if (hasOwner(o, uid)) out.push(o);
    }
    return out;
  }

  const hasOwner = (o: StoredObject, uid: string) =>
    ((o.metadata.ownerReferences ?? []) as Json[]).some((r) => r.uid === uid);

  const unsubscribe = store.subscribe((ev) => {
    if (ev.type === "DELETED") {
      const uid = String(ev.object.metadata.uid ?? "");
      if (ev.propagationPolicy === "Orphan") {
        setImmediate(() => {
          try {
            orphan(uid);
          } catch (e) {
            log(`garbagecollector: orphaning dependents of ${uid}: ${(e as Error).message}`);
          }
        });
        return;
      }
      setImmediate(() => {
        for (const d of dependentsOf(uid)) queue.add(encode(coords(d)));
      });
      return;
    }
    if (((ev.object.metadata.ownerReferences ?? []) as unknown[]).length > 0)
      queue.add(encode(coords(ev.object)));
  });
  return () => {
    unsubscribe();
    queue.stop();
  };
}
