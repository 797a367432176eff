// SIMULATION — a TEST DOUBLE of kube-apiserver and of the kube-controller-manager controllers
// kubeadm relies on. No kube-apiserver binary can run on the test machines, so API phases are
// tested against this; every behaviour it emulates cites the Kubernetes source it follows.
// It is independent of kubeforge's own code (no imports from src/).
//
// Use:
//   const api = await startFakeApiServer({ securePort: 0, tlsCertFile, tlsPrivateKeyFile,
//     clientCAFile, enableBootstrapTokenAuth: true });
//   const kcm = startFakeControllers(api.store, { clusterSigningCertFile, clusterSigningKeyFile });
//   api.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "kube-public", name: "cluster-info" });
//   await api.store.waitFor(() => ..., 5000);
//   api.faults.inject({ method: "POST", pathPrefix: "/api/v1/namespaces/kube-system/secrets", times: 1, respond: "drop" });
//   kcm.stop(); await api.stop();
//
// ObjectStore: get (undefined when absent) / list / create / update / patch / delete (these
// throw StatusError, whose .status is the exact Status body and .code the HTTP code) /
// subscribe(listener) / waitFor(check, timeoutMs). Objects are plain JSON with apiVersion and
// kind; writes are schema-checked (strict) and validated as the API server does.
//
// Storage: with `etcd` (FakeApiServerOptions; from kube-apiserver.yaml's --etcd-servers,
// --etcd-cafile, --etcd-certfile, --etcd-keyfile through apiServerOptionsFromCommand) the objects
// live in that real etcd cluster, in kube-apiserver's key layout with resourceVersion = etcd's
// mod_revision, and every fake API server on the same etcd serves the same cluster: reads with no
// resourceVersion are consistent across servers, writes are compare-and-swap transactions, and a
// watch keeps each server's cache (what RBAC, token authentication and the controllers read) up
// to date. Start waits until etcd answers. Without `etcd` the store is in memory. Design, and
// the Kubernetes sources it follows: store.ts; the etcd client: etcd-backend.ts, etcd-worker.ts.
//   const api = await startFakeApiServer({ ..., etcd: { servers: ["https://127.0.0.1:2379"],
//     caFile, certFile, keyFile } });
//
// Deliberate differences: fieldValidation defaults to Strict (kube-apiserver: Warn) so typos in
// kubeforge's objects fail loudly; only JSON and YAML bodies (no protobuf: kubectl's typed
// commands such as `create configmap` get 415); no OpenAPI documents. Garbage collection, like
// in a real cluster, is a controller (startFakeControllers), not part of the store. A store used
// without a server has no RBAC bootstrap policy until ensureBootstrapPolicy(store) is called.
// SIMULATION LIMITS of the etcd mode: a synchronous store call blocks its process's event loop
// while etcd answers (bounded by requestTimeoutMs, 15 s by default; an etcd without quorum holds
// requests about 7 s; a call that holds it 500 ms or more is logged, "etcd <op> held the API
// server for <n> ms"); the propagation policy of a deletion reaches only the garbage collector
// of the server that deleted (others see a plain deletion: Background); controllers run on every
// node that runs them (no leader election), relying on conflicts to settle races; values are
// JSON, so the simulation cannot read a real kube-apiserver's protobuf data, nor it ours. Reads
// that etcd answers Unavailable ("leader changed") are sent again as clientv3 does; an etcd that
// cannot be reached fails a read at once (etcd-worker.ts).
export { startFakeApiServer, type FakeApiServer, type FakeApiServerOptions } from "./server.js";
export {
  startFakeControllers,
  isControllerEnabled,
  type FakeControllersOptions,
} from "./controllers/index.js";
export { startFakeScheduler } from "./controllers/pod-scheduler.js";
export {
  apiServerOptionsFromCommand,
  controllersOptionsFromCommand,
  parseGoDuration,
} from "./flags.js";
export type { EtcdOptions } from "./etcd-backend.js";
export { storageKey, DEFAULT_STORAGE_PREFIX } from "./storage-keys.js";
export {
  ObjectStore,
  SYSTEM_NAMESPACES,
  createUnlessExists,
  type EtcdStoreOptions,
  type DeleteOptions,
  type EventType,
  type FieldValidation,
  type ListOptions,
  type ObjectKey,
  type ObjectStoreOptions,
  type StoreEvent,
  type StoreListener,
  type StoredObject,
  type UserInfo,
  type WriteOptions,
} from "./store.js";
export { StatusError, type Status, type StatusDetails } from "./status.js";
export { FaultInjector, type FaultSpec, type FaultResponse } from "./faults.js";
export { ensureBootstrapPolicy } from "./bootstrap-policy.js";
export { buildAuthorizer, type Attributes, type Authorizer } from "./authz.js";
export { authenticateBootstrapToken } from "./authn.js";
export { computeDetachedSignature } from "./controllers/jws.js";
export { RESOURCES, pathOf, type ResourceInfo } from "./resources.js";
export type { PatchType } from "./patch.js";
