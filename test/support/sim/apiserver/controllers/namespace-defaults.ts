// SIMULATION (test double). What kube-controller-manager puts in every namespace: the "default"
// ServiceAccount and, with --root-ca-file, the kube-root-ca.crt ConfigMap.
// k8s: pkg/controller/serviceaccount/serviceaccounts_controller.go (syncNamespace),
// pkg/controller/certificates/rootcacertpublisher/publisher.go (name, key ca.crt, description
// annotation).
import type { StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { WorkQueue } from "./queue.js";

const ROOT_CA_DESCRIPTION =
  "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

function perNamespace(
  ctx: ControllerContext,
  name: string,
  ensure: (ns: string) => void,
  watchKind: string,
  watchName: string,
): StopFn {
  const { store, log } = ctx;
  const queue = new WorkQueue(
    (ns) => {
      const n = store.get({ apiVersion: "v1", kind: "Namespace", name: ns });
      if (!n || n.metadata.deletionTimestamp) return;
      ensure(ns);
    },
    (k, e) => log(`${name}: ${k}: ${(e as Error).message}`),
  );
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.group !== "") return;
    if (ev.resource.kind === "Namespace" && ev.type !== "DELETED")
      queue.add(ev.object.metadata.name);
    if (ev.resource.kind === watchKind && ev.object.metadata.name === watchName)
      queue.add(String(ev.object.metadata.namespace));
  });
  for (const n of store.list("v1", "Namespace")) queue.add(n.metadata.name);
  return () => {
    unsubscribe();
    queue.stop();
  };
}

export function startServiceAccountController(ctx: ControllerContext): StopFn {
  const { store } = ctx;
  return perNamespace(
    ctx,
    "serviceaccount",
    (ns) => {
      if (store.get({ apiVersion: "v1", kind: "ServiceAccount", namespace: ns, name: "default" }))
        return;
      store.create({
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: "default", namespace: ns },
      });
    },
    "ServiceAccount",
    "default",
  );
}

export function startRootCAPublisher(ctx: ControllerContext, rootCA: string): StopFn {
  const { store } = ctx;
  return perNamespace(
    ctx,
    "root-ca-cert-publisher",
    (ns) => {
      const want = { "ca.crt": rootCA };
      const cm = store.get<StoredObject>({
        apiVersion: "v1",
        kind: "ConfigMap",
        namespace: ns,
        name: "kube-root-ca.crt",
      });
      if (!cm) {
        store.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: {
            name: "kube-root-ca.crt",
            namespace: ns,
            annotations: { "kubernetes.io/description": ROOT_CA_DESCRIPTION },
          },
          data: want,
        });
      } else if (JSON.stringify(cm.data) !== JSON.stringify(want)) {
        store.update({ ...cm, data: want });
      }
    },
    "ConfigMap",
    "kube-root-ca.crt",
  );
}
