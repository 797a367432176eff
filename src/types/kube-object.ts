// Kubernetes objects as plain JSON: what the pure builders (manifests/) return and the API layer
// (kube/) sends. Shared types sit at the bottom of the layering, so both sides import them.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  resourceVersion?: string;
  uid?: string;
  creationTimestamp?: string | null;
  [field: string]: unknown;
}

/** Any Kubernetes object, as the API serves it in JSON. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** Names one object: enough to build its request path. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  /** Absent for cluster-scoped kinds (Node, ClusterRole...). */
  namespace?: string;
}
