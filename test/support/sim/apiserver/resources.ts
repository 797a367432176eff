// SIMULATION (test double). The resources the fake API server serves: the kinds kubeadm and
// kubelets use. Names, short names, verbs and subresources are those kube-apiserver publishes in
// discovery. k8s: pkg/registry/*/rest/storage_*.go (which resources exist per group/version),
// pkg/registry/<group>/<resource>/storage/storage.go (ShortNames, categories, subresources).

export interface ResourceInfo {
  group: string;
  version: string;
  /** Plural, lower-case: "configmaps". */
  resource: string;
  kind: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  verbs: string[];
  /** Subresource → verbs. */
  subresources: Record<string, string[]>;
  /** The @kubernetes/client-node model class that describes the body (V1ConfigMap). */
  model: string;
  /** Create-only virtual resources (reviews): never stored. */
  virtual?: boolean;
  /** PUT of a missing object creates it. k8s: <resource>/strategy.go AllowCreateOnUpdate. */
  allowCreateOnUpdate?: boolean;
  /** DELETE answers with the object (graceful kinds) instead of a Status. */
  returnsDeletedObject?: boolean;
  /** metadata.generation is maintained (set to 1, bumped on spec changes). */
  hasGeneration?: boolean;
  /** A custom resource: the name of the CustomResourceDefinition that defines it. */
  crd?: string;
  /** Listed in discovery; false for a custom resource whose CRD is not Established yet. */
  discoverable?: boolean;
}

const ALL = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const STATUS = ["get", "patch", "update"];

function r(
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  extra: Partial<ResourceInfo> = {},
): ResourceInfo {
  return {
    group,
    version,
    resource,
    kind,
    singular: kind.toLowerCase(),
    namespaced,
    verbs: ALL,
    subresources: {},
    model: `V1${kind}`,
    ...extra,
  };
}

// Built-in resources first; custom resources are added and removed as their CRDs come and go
// (custom-resources.ts), as apiextensions-apiserver's crdHandler serves them.
const resources: ResourceInfo[] = [
  // core/v1. k8s: pkg/registry/core/rest/storage_core.go
  r("", "v1", "namespaces", "Namespace", false, {
    shortNames: ["ns"],
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    subresources: { status: STATUS, finalize: ["update"] },
    returnsDeletedObject: true,
  }),
  r("", "v1", "configmaps", "ConfigMap", true, { shortNames: ["cm"] }),
  r("", "v1", "secrets", "Secret", true),
  r("", "v1", "nodes", "Node", false, { shortNames: ["no"], subresources: { status: STATUS } }),
  r("", "v1", "pods", "Pod", true, {
    shortNames: ["po"],
    categories: ["all"],
    subresources: { status: STATUS, binding: ["create"], eviction: ["create"] },
    returnsDeletedObject: true,
  }),
  r("", "v1", "services", "Service", true, {
    shortNames: ["svc"],
    categories: ["all"],
    subresources: { status: STATUS },
  }),
  r("", "v1", "serviceaccounts", "ServiceAccount", true, {
    shortNames: ["sa"],
    subresources: { token: ["create"] },
  }),
  r("", "v1", "endpoints", "Endpoints", true, {
    shortNames: ["ep"],
    singular: "endpoints",
    allowCreateOnUpdate: true,
  }),
  r("", "v1", "events", "Event", true, {
    shortNames: ["ev"],
    model: "CoreV1Event",
    allowCreateOnUpdate: true,
  }),
  // apps/v1. k8s: pkg/registry/apps/rest/storage_apps.go
  r("apps", "v1", "deployments", "Deployment", true, {
    shortNames: ["deploy"],
    categories: ["all"],
    subresources: { status: STATUS, scale: STATUS },
    hasGeneration: true,
  }),
  r("apps", "v1", "replicasets", "ReplicaSet", true, {
    shortNames: ["rs"],
    categories: ["all"],
    subresources: { status: STATUS, scale: STATUS },
    hasGeneration: true,
  }),
  r("apps", "v1", "daemonsets", "DaemonSet", true, {
    shortNames: ["ds"],
    categories: ["all"],
    subresources: { status: STATUS },
    hasGeneration: true,
  }),
  // batch/v1. k8s: pkg/registry/batch/rest/storage_batch.go, pkg/registry/batch/job/storage/
  // storage.go (category "all", a status subresource; the strategy sets metadata.generation)
  r("batch", "v1", "jobs", "Job", true, {
    categories: ["all"],
    subresources: { status: STATUS },
    hasGeneration: true,
  }),
  // policy/v1. k8s: pkg/registry/policy/rest/storage_policy.go,
  // pkg/registry/policy/poddisruptionbudget/storage/storage.go (ShortNames "pdb")
  r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, {
    shortNames: ["pdb"],
    subresources: { status: STATUS },
    hasGeneration: true,
  }),
  // apiextensions.k8s.io/v1, served by the apiextensions-apiserver kube-apiserver embeds.
  // k8s: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/apiserver.go,
  // .../pkg/registry/customresourcedefinition/etcd.go (ShortNames "crd", "crds"; category
  // "api-extensions"; a status subresource)
  r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false, {
    shortNames: ["crd", "crds"],
    categories: ["api-extensions"],
    subresources: { status: STATUS },
    hasGeneration: true,
  }),
  // rbac.authorization.k8s.io/v1. k8s: pkg/registry/rbac/rest/storage_rbac.go
  r("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
  r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
  r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
  r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false),
  // storage.k8s.io/v1. k8s: pkg/registry/storage/rest/storage_storage.go,
  // pkg/registry/storage/storageclass/storage/storage.go (ShortNames "sc", cluster-scoped)
  r("storage.k8s.io", "v1", "storageclasses", "StorageClass", false, { shortNames: ["sc"] }),
  // certificates.k8s.io/v1. k8s: pkg/registry/certificates/rest/storage_certificates.go
  r("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false, {
    shortNames: ["csr"],
    subresources: { approval: STATUS, status: STATUS },
  }),
  // coordination.k8s.io/v1. k8s: pkg/registry/coordination/lease/strategy.go (AllowCreateOnUpdate)
  r("coordination.k8s.io", "v1", "leases", "Lease", true, { allowCreateOnUpdate: true }),
  // Reviews: create-only, answered from the authorizer, never stored.
  // k8s: pkg/registry/authorization/*review/rest.go, pkg/registry/authentication/selfsubjectreview
  r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, {
    verbs: ["create"],
    virtual: true,
  }),
  r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false, {
    verbs: ["create"],
    virtual: true,
  }),
  r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", false, {
    verbs: ["create"],
    virtual: true,
  }),
];

export const RESOURCES: readonly ResourceInfo[] = resources;

/**
 * Replaces the custom resources of one CRD (none: it is gone or serves nothing yet).
 * k8s: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go
 */
export function setCustomResources(crd: string, infos: ResourceInfo[]): void {
  for (let i = resources.length - 1; i >= 0; i--) {
    if (resources[i]!.crd === crd) resources.splice(i, 1);
  }
  resources.push(...infos.map((info) => ({ ...info, crd })));
}

/**
 * Groups in the order kube-apiserver lists them in /apis (core first, by priority); the groups
 * of custom resources follow. k8s: pkg/controlplane/apiserver/aggregator.go
 * (apiVersionPriorities: batch 17400 between authorization 17600 and certificates 17300;
 * rbac 17000, storage 16800, coordination 16500 before apiextensions 16400),
 * staging/src/k8s.io/kube-aggregator/pkg/controllers/autoregister and
 * pkg/controlplane/controller/crdregistration (CRD groups at priority 1000, after every built-in).
 */
export const GROUP_ORDER = [
  "apps",
  "authentication.k8s.io",
  "authorization.k8s.io",
  "batch",
  "certificates.k8s.io",
  "policy",
  "rbac.authorization.k8s.io",
  "storage.k8s.io",
  "coordination.k8s.io",
  "apiextensions.k8s.io",
];

export function apiVersionOf(info: ResourceInfo): string {
  return info.group === "" ? info.version : `${info.group}/${info.version}`;
}

export function splitAPIVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf("/");
  return i < 0
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

export function resourceFor(
  group: string,
  version: string,
  resource: string,
): ResourceInfo | undefined {
  return RESOURCES.find(
    (x) => x.group === group && x.version === version && x.resource === resource,
  );
}

export function resourceForKind(apiVersion: string, kind: string): ResourceInfo | undefined {
  const { group, version } = splitAPIVersion(apiVersion);
  return RESOURCES.find((x) => x.group === group && x.version === version && x.kind === kind);
}

/** "/api/v1/namespaces/kube-system/configmaps/x": the path of one object or a collection. */
export function pathOf(info: ResourceInfo, namespace?: string, name?: string): string {
  const base = info.group === "" ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && namespace ? `/namespaces/${namespace}` : "";
  return `${base}${ns}/${info.resource}${name ? `/${name}` : ""}`;
}
