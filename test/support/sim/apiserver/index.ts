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
// Deliberate differences: fieldValidation defaults to Strict (kube-apiserver: Warn) so typos in
// kubeforge's objects fail loudly; only JSON and YAML bodies (no protobuf: kubectl's typed
// commands such as `create configmap` get 415); no OpenAPI documents. Garbage collection, like
// in a real cluster, is a controller (startFakeControllers), not part of the store. A store used
// without a server has no RBAC bootstrap policy until ensureBootstrapPolicy(store) is called.
export { startFakeApiServer, type FakeApiServer, type FakeApiServerOptions } from "./server.js";
export {
  startFakeControllers,
  isControllerEnabled,
  type FakeControllersOptions,
} from "./controllers/index.js";
export {
  apiServerOptionsFromCommand,
  controllersOptionsFromCommand,
  parseGoDuration,
} from "./flags.js";
export {
  ObjectStore,
  SYSTEM_NAMESPACES,
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
