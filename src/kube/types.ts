import type { KubeObject, ObjectRef } from "../types/kube-object.js";
import type { ResourceInfo } from "./resources.js";

export type { KubeObject, ObjectMeta, ObjectRef, OwnerReference } from "../types/kube-object.js";

// The shapes the kube/ layer speaks: plain Kubernetes objects (as JSON), references to them and
// the client port phases use. Phases never see @kubernetes/client-node directly, so a dry run can
// swap in a recorder (DESIGN.md "Dry-run is a property of the data").

/** Content types of PATCH: strategic merge (Nodes), JSON merge (RFC 7386), JSON patch (RFC 6902). */
export type PatchType = "strategic" | "merge" | "json";

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface RawResponse {
  status: number;
  body: string;
}

/** How a read is made. */
export interface ReadOptions {
  /**
   * One attempt, even when the connection is reset (a probe's sample is one request); by default
   * a reset read is tried again, as client-go does (kube/get-retry.ts).
   */
  singleAttempt?: boolean;
}

/**
 * One authenticated view of the API. Methods throw ApiError (kube/errors.ts) for any response
 * that is not a success, with a short message naming the verb and the object.
 */
export interface KubeClient {
  /** What the client authenticates as, for messages: "/etc/kubernetes/admin.conf". */
  readonly description: string;
  get<T extends KubeObject = KubeObject>(ref: ObjectRef, opts?: ReadOptions): Promise<T>;
  list<T extends KubeObject = KubeObject>(
    apiVersion: string,
    kind: string,
    opts?: ListOptions,
  ): Promise<T[]>;
  create<T extends KubeObject>(obj: T): Promise<T>;
  /** PUT; `obj.metadata.resourceVersion`, when set, makes a stale write a 409 Conflict. */
  update<T extends KubeObject>(obj: T): Promise<T>;
  patch<T extends KubeObject = KubeObject>(
    ref: ObjectRef,
    patch: unknown,
    type: PatchType,
  ): Promise<T>;
  delete(ref: ObjectRef): Promise<void>;
  /** POST to a subresource of the object ("eviction" of a Pod); returns the answer's body. */
  createSubresource<T = unknown>(ref: ObjectRef, subresource: string, body: unknown): Promise<T>;
  /** GET of an absolute API path ("/livez") with this client's credentials; never throws on status. */
  getRaw(path: string, opts?: ReadOptions): Promise<RawResponse>;
  /**
   * Where objects of a kind live: kubeforge's own table, else (for the real client) the server's
   * discovery, as kubectl resolves a manifest's kinds. Throws UnservedKindError when the server
   * serves no such kind in that apiVersion.
   */
  resource(apiVersion: string, kind: string): Promise<ResourceInfo>;
  /**
   * Every object of a kind, in every namespace, and each change to it as it happens: a list,
   * then a watch from its resourceVersion (client-node's ListWatch informer, which lists again
   * after 410 Gone); a watch that breaks lists and watches again after `retryMs`. Resolves once
   * the first list arrived. Absent where nothing can stream (dry runs).
   */
  watch?(
    apiVersion: string,
    kind: string,
    on: (type: WatchEventType, obj: KubeObject) => void,
    opts?: WatchOptions,
  ): Promise<CollectionWatch>;
}

/** What happened to an object a watch streams: client-node's informer verbs. */
export type WatchEventType = "add" | "update" | "delete";

/** A running watch of a kind (KubeClient.watch). */
export interface CollectionWatch {
  stop(): void;
}

export interface WatchOptions {
  /** After the watch broke (the API server restarting): how long until it lists again. */
  retryMs?: number;
  /** Each time the watch broke. */
  onError?: (e: unknown) => void;
}

/** Reference of an object. */
export function refOf(obj: KubeObject): ObjectRef {
  const { apiVersion, kind } = obj;
  const { name, namespace } = obj.metadata;
  return namespace === undefined
    ? { apiVersion, kind, name }
    : { apiVersion, kind, name, namespace };
}

export interface ProbeOptions {
  /** Health endpoints of kube-controller-manager and kube-scheduler are probed without TLS checks. */
  insecureSkipTLSVerify?: boolean;
  timeoutMs: number;
}

/**
 * How a workflow reaches the cluster it builds. Implementations: the node's own view (kubeconfig
 * files read through the Host), and the dry-run recorder that prints every write.
 */
export interface ClusterAccess {
  /**
   * A client authenticated by a kubeconfig file on the node ("/etc/kubernetes/admin.conf");
   * `server` replaces the server of every cluster entry (kubeadm's WaitControlPlaneClient).
   */
  clientFor(kubeconfigPath: string, opts?: { server?: string }): Promise<KubeClient>;
  /**
   * An unauthenticated GET made from the node itself (kubelet and component health endpoints
   * listen on the node's loopback). Rejects only when no HTTP response arrives.
   */
  probe(url: string, opts: ProbeOptions): Promise<RawResponse>;
}
