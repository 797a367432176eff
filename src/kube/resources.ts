import type { KubeObject, ObjectRef } from "./types.js";

// The kinds kubeforge reads or writes, with what their request paths need. A fixed table instead
// of discovery: kubeadm's typed clientset also knows every path at compile time, and a dry run
// has no server to ask. Groups, versions and plurals are those of k8s.io/api (the REST paths of
// kube-apiserver's built-in resources). Objects of other kinds (a user's CNI manifest) are
// resolved by the API client through the server's discovery, as kubectl does.

export interface ResourceInfo {
  kind: string;
  /** "" for the core group. */
  group: string;
  version: string;
  /** Lower-case plural used in paths ("configmaps"). */
  plural: string;
  namespaced: boolean;
}

const RBAC = "rbac.authorization.k8s.io";

export const RESOURCES: readonly ResourceInfo[] = [
  { kind: "Namespace", group: "", version: "v1", plural: "namespaces", namespaced: false },
  { kind: "ConfigMap", group: "", version: "v1", plural: "configmaps", namespaced: true },
  { kind: "Secret", group: "", version: "v1", plural: "secrets", namespaced: true },
  { kind: "Node", group: "", version: "v1", plural: "nodes", namespaced: false },
  { kind: "Pod", group: "", version: "v1", plural: "pods", namespaced: true },
  { kind: "Service", group: "", version: "v1", plural: "services", namespaced: true },
  { kind: "ServiceAccount", group: "", version: "v1", plural: "serviceaccounts", namespaced: true },
  { kind: "Role", group: RBAC, version: "v1", plural: "roles", namespaced: true },
  { kind: "RoleBinding", group: RBAC, version: "v1", plural: "rolebindings", namespaced: true },
  { kind: "ClusterRole", group: RBAC, version: "v1", plural: "clusterroles", namespaced: false },
  {
    kind: "ClusterRoleBinding",
    group: RBAC,
    version: "v1",
    plural: "clusterrolebindings",
    namespaced: false,
  },
  { kind: "Deployment", group: "apps", version: "v1", plural: "deployments", namespaced: true },
  { kind: "DaemonSet", group: "apps", version: "v1", plural: "daemonsets", namespaced: true },
  { kind: "Job", group: "batch", version: "v1", plural: "jobs", namespaced: true },
  {
    kind: "CertificateSigningRequest",
    group: "certificates.k8s.io",
    version: "v1",
    plural: "certificatesigningrequests",
    namespaced: false,
  },
  {
    kind: "StorageClass",
    group: "storage.k8s.io",
    version: "v1",
    plural: "storageclasses",
    namespaced: false,
  },
  {
    kind: "PodDisruptionBudget",
    group: "policy",
    version: "v1",
    plural: "poddisruptionbudgets",
    namespaced: true,
  },
  {
    kind: "Lease",
    group: "coordination.k8s.io",
    version: "v1",
    plural: "leases",
    namespaced: true,
  },
];

/** "v1" for the core group, "group/version" otherwise. */
export function apiVersionOf(info: Pick<ResourceInfo, "group" | "version">): string {
  return info.group === "" ? info.version : `${info.group}/${info.version}`;
}

/** The table row of exactly this apiVersion and kind, or undefined. */
export function knownResource(apiVersion: string, kind: string): ResourceInfo | undefined {
  return RESOURCES.find((r) => r.kind === kind && apiVersionOf(r) === apiVersion);
}

/** The table row of a kind; throws naming the kind when kubeforge does not know it. */
export function resourceFor(apiVersion: string, kind: string): ResourceInfo {
  const info = RESOURCES.find((r) => r.kind === kind);
  if (!info) {
    const known = RESOURCES.map((r) => r.kind).join(", ");
    throw new Error(
      `unknown kind "${kind}" (apiVersion "${apiVersion}"): kubeforge only reads and writes ${known}`,
    );
  }
  if (apiVersionOf(info) !== apiVersion) {
    throw new Error(
      `kind ${kind} is served as apiVersion "${apiVersionOf(info)}", not "${apiVersion}"`,
    );
  }
  return info;
}

function groupVersionPath(info: ResourceInfo): string {
  return info.group === "" ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
}

function segment(value: string, what: string): string {
  if (value === "" || value === "." || value === ".." || value.includes("/")) {
    throw new Error(`${what} "${value}" cannot be part of a request path`);
  }
  return encodeURIComponent(value);
}

/**
 * Path of a collection: where objects are created and listed. A namespaced kind without a
 * namespace gives the all-namespaces path (valid for list only).
 */
export function collectionPath(apiVersion: string, kind: string, namespace?: string): string {
  return collectionPathOf(resourceFor(apiVersion, kind), namespace);
}

/** collectionPath for a resource known by other means (discovery). */
export function collectionPathOf(info: ResourceInfo, namespace?: string): string {
  const base = groupVersionPath(info);
  if (info.namespaced && namespace !== undefined && namespace !== "") {
    return `${base}/namespaces/${segment(namespace, "namespace")}/${info.plural}`;
  }
  return `${base}/${info.plural}`;
}

/**
 * Path of one object. A namespaced kind needs a namespace; a namespace given for a cluster-scoped
 * kind is ignored, as kube-apiserver ignores metadata.namespace on cluster-scoped objects.
 */
export function objectPath(ref: ObjectRef): string {
  return objectPathOf(resourceFor(ref.apiVersion, ref.kind), ref);
}

/** objectPath for a resource known by other means (discovery). */
export function objectPathOf(info: ResourceInfo, ref: ObjectRef): string {
  if (info.namespaced && (ref.namespace === undefined || ref.namespace === "")) {
    throw new Error(`${ref.kind} "${ref.name}" needs a namespace: ${ref.kind} is namespaced`);
  }
  const collection = collectionPathOf(info, ref.namespace);
  return `${collection}/${segment(ref.name, `${ref.kind} name`)}`;
}

/** "kube-system/kubeadm-config" for namespaced objects, the bare name otherwise. */
export function displayName(ref: Pick<ObjectRef, "name" | "namespace">): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** What kubectl uses for a namespaced object without one (admin.conf sets no namespace). */
export const DEFAULT_NAMESPACE = "default";

/** The namespace a namespaced object goes to: its own, else kubectl's default. */
export const namespaceOrDefault = (o: KubeObject): string =>
  o.metadata.namespace || DEFAULT_NAMESPACE;

/** The object as kubectl sends it: a namespaced one without a namespace in the default one. */
export function withDefaultNamespace(o: KubeObject, namespaced: boolean): KubeObject {
  return namespaced && !o.metadata.namespace
    ? { ...o, metadata: { ...o.metadata, namespace: DEFAULT_NAMESPACE } }
    : o;
}
