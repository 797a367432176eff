// SIMULATION (test double). BootstrapSigner: keeps one `jws-kubeconfig-<tokenID>` key on
// kube-public/cluster-info per bootstrap token valid for signing, removes keys of tokens that are
// gone, and writes only when something changed.
// k8s: pkg/controller/bootstrap/bootstrapsigner.go (signConfigMap; Update errors Conflict and
// NotFound are ignored, the next event retries), pkg/controller/bootstrap/util.go.
import type { StoredObject } from "../store.js";
import { expiration, TOKEN_SECRET_TYPE, tokenForSigning } from "./bootstrap-tokens.js";
import type { ControllerContext, StopFn } from "./context.js";
import { computeDetachedSignature } from "./jws.js";
import { WorkQueue } from "./queue.js";

const PREFIX = "jws-kubeconfig-";
const KEY = "kube-public/cluster-info";

export function startBootstrapSigner(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const queue = new WorkQueue(sign, (_k, e) => log(`bootstrapsigner: ${(e as Error).message}`));

  function tokens(): Map<string, string> {
    const out = new Map<string, string>();
    const now = store.now();
    for (const s of store.list("v1", "Secret", {
      namespace: "kube-system",
      fieldSelector: `type=${TOKEN_SECRET_TYPE}`,
    })) {
      const t = tokenForSigning(s, now);
      if (t && !out.has(t.id)) out.set(t.id, t.secret);
      // Stand-in for the informer resync: look again when a token expires.
      const { ttlMs, expired } = expiration(s, now);
      if (!expired && ttlMs > 0) queue.addAfter(KEY, ttlMs + 10);
    }
    return out;
  }

  function sign(): void {
    const cm = store.get({
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: "kube-public",
      name: "cluster-info",
    });
    if (!cm) return;
    const data = { ...((cm.data ?? {}) as Record<string, string>) };
    const content = data.kubeconfig;
    if (content === undefined) return;
    const old = new Map<string, string>();
    for (const k of Object.keys(data)) {
      if (k.startsWith(PREFIX)) {
        old.set(k.slice(PREFIX.length), data[k]!);
        delete data[k];
      }
    }
    let changed = false;
    for (const [id, secret] of tokens()) {
      const sig = computeDetachedSignature(content, id, secret);
      if (old.get(id) !== sig) changed = true;
      old.delete(id);
      data[PREFIX + id] = sig;
    }
    if (old.size > 0) changed = true;
    if (!changed) return;
    try {
      store.update({ ...cm, data });
      log(`bootstrapsigner: signed kube-public/cluster-info`);
    } catch (e) {
      const code = (e as { code?: number }).code;
      if (code !== 409 && code !== 404) throw e;
    }
  }

  const relevant = (o: StoredObject, kind: string) =>
    (kind === "ConfigMap" &&
      o.metadata.namespace === "kube-public" &&
      o.metadata.name === "cluster-info") ||
    (kind === "Secret" && o.metadata.namespace === "kube-system" && o.type === TOKEN_SECRET_TYPE);
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.group === "" && relevant(ev.object, ev.resource.kind)) queue.add(KEY);
  });
  queue.add(KEY);
  return () => {
    unsubscribe();
    queue.stop();
  };
}
