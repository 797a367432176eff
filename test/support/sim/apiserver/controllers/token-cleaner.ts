// SIMULATION (test double). TokenCleaner: deletes expired bootstrap-token Secrets (with a UID
// precondition), and looks again when a token's expiration comes.
// k8s: pkg/controller/bootstrap/tokencleaner.go evalSecret.
import type { StoredObject } from "../store.js";
import { expiration, TOKEN_SECRET_TYPE } from "./bootstrap-tokens.js";
import type { ControllerContext, StopFn } from "./context.js";
import { WorkQueue } from "./queue.js";

export function startTokenCleaner(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const queue = new WorkQueue(evaluate, (k, e) =>
    log(`tokencleaner: ${k}: ${(e as Error).message}`),
  );

  function evaluate(name: string): void {
    const secret = store.get({ apiVersion: "v1", kind: "Secret", namespace: "kube-system", name });
    if (!secret || secret.type !== TOKEN_SECRET_TYPE) return;
    const { ttlMs, expired } = expiration(secret, store.now());
    if (expired) {
      try {
        store.delete(
          { apiVersion: "v1", kind: "Secret", namespace: "kube-system", name },
          { preconditions: { uid: String(secret.metadata.uid) } },
        );
        log(`tokencleaner: deleted expired kube-system/${name}`);
      } catch (e) {
        if ((e as { code?: number }).code !== 404) throw e;
      }
    } else if (ttlMs > 0) {
      queue.addAfter(name, ttlMs + 5);
    }
  }

  const watchable = (o: StoredObject) =>
    o.metadata.namespace === "kube-system" && o.type === TOKEN_SECRET_TYPE;
  const unsubscribe = store.subscribe((ev) => {
    if (
      ev.type !== "DELETED" &&
      ev.resource.kind === "Secret" &&
      ev.resource.group === "" &&
      watchable(ev.object)
    ) {
      queue.add(ev.object.metadata.name);
    }
  });
  for (const s of store.list("v1", "Secret", {
    namespace: "kube-system",
    fieldSelector: `type=${TOKEN_SECRET_TYPE}`,
  })) {
    queue.add(s.metadata.name);
  }
  return () => {
    unsubscribe();
    queue.stop();
  };
}
