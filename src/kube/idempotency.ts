import {
  apiErrorOf,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isNotFound,
  isTransient,
} from "./errors.js";
import { poll, type PollOptions } from "./poll.js";
import { allOrFirstError } from "../remote/fleet.js";
import { displayName } from "./resources.js";
import { createTwoWayMergePatch, NODE_MERGE_LISTS } from "./two-way-patch.js";
import { refOf, type KubeClient, type KubeObject, type ObjectRef } from "./types.js";

// kubeadm's util/apiclient/idempotency.go (v1.33+ generic shapes): every helper is a
// wait.PollUntilContextTimeout loop at KubernetesAPICallRetryInterval (500 ms) bounded by the
// v1beta4 timeouts.kubernetesAPICall. kubeadm's conditions retry on *every* error; that matters
// for 403/401, which are transient while a new RBAC binding reaches the authorizer's cache (init
// creates kubeadm:cluster-admins and uses admin.conf right after). We keep retrying those, and
// stop at once only on errors a retry cannot change: a rejected body (Invalid, BadRequest...) or
// a failure of our own code (unknown kind, a mutator refusing the object).

export interface ApiCallOptions {
  /** timeouts.kubernetesAPICall. */
  timeoutMs: number;
  /** Default 500 ms (kubeadm's KubernetesAPICallRetryInterval). */
  intervalMs?: number;
  signal?: AbortSignal;
  /** Errors that end the retries at once. Default: isPermanent. */
  failFast?: (error: unknown) => boolean;
  /**
   * The objects most likely exist (an upgrade re-applies what init created): the create-or-update
   * helpers write the update first and create on 404, one request where kubeadm's order (create,
   * 409, update) takes two. The objects end the same.
   */
  updateFirst?: boolean;
}

const PERMANENT_REASONS = new Set([
  "Invalid",
  "BadRequest",
  "MethodNotAllowed",
  "NotAcceptable",
  "UnsupportedMediaType",
  "RequestEntityTooLarge",
]);

/** An error no retry can change: a request the server rejects as malformed, or not an API error. */
export function isPermanent(error: unknown): boolean {
  const api = apiErrorOf(error);
  return api === undefined || PERMANENT_REASONS.has(api.reason);
}

function describe(ref: Pick<ObjectRef, "kind" | "name" | "namespace">): string {
  return `${ref.kind} ${displayName(ref)}`;
}

function pollOptions(opts: ApiCallOptions, what: string): PollOptions {
  const failFast = opts.failFast ?? isPermanent;
  return {
    timeoutMs: opts.timeoutMs,
    what,
    retryIf: (e) => !failFast(e),
    ...(opts.intervalMs === undefined ? {} : { intervalMs: opts.intervalMs }),
    ...(opts.signal === undefined ? {} : { signal: opts.signal }),
  };
}

/** kubeadm CreateOrUpdate: create; when it already exists, update it (PUT of `obj` as given). */
export function createOrUpdate<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  opts: ApiCallOptions,
): Promise<T> {
  return poll(
    opts.updateFirst ? () => updateElseCreate(client, obj) : () => createElseUpdate(client, obj),
    pollOptions(opts, `${describe(refOf(obj))} to be created or updated`),
  );
}

async function createElseUpdate<T extends KubeObject>(client: KubeClient, obj: T): Promise<T> {
  try {
    return await client.create(obj);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
  }
  return await client.update(obj);
}

/** One read of the object; undefined when the server says NotFound. */
async function getOrUndefined<T extends KubeObject>(
  client: KubeClient,
  ref: ObjectRef,
): Promise<T | undefined> {
  try {
    return await client.get<T>(ref);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** A create that meets an object made in between fails AlreadyExists: retried, as an update. */
async function updateElseCreate<T extends KubeObject>(client: KubeClient, obj: T): Promise<T> {
  try {
    return await client.update(obj);
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  return await client.create(obj);
}

/**
 * createOrUpdate of independent objects (RBAC rules and the like, which may name each other
 * before both exist) at once rather than one after another; the first failure in the list's
 * order is the one thrown, after every call has ended.
 */
export async function createOrUpdateAll(
  client: KubeClient,
  objs: readonly KubeObject[],
  opts: ApiCallOptions,
): Promise<void> {
  await allOrFirstError(objs.map((o) => createOrUpdate(client, o, opts)));
}

/** kubeadm CreateOrRetain: an existing object is kept as it is (and returned); else create. */
export function createOrRetain<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  opts: ApiCallOptions,
): Promise<T> {
  const ref = refOf(obj);
  return poll(
    async () => {
      try {
        return await client.get<T>(ref);
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      // A concurrent creation makes this an AlreadyExists, retried: the next GET finds it.
      return await client.create(obj);
    },
    pollOptions(opts, `${describe(ref)} to be created or found`),
  );
}

/** A GET retried like every call: the object, or undefined when it does not exist (404). */
export async function getIfExists<T extends KubeObject = KubeObject>(
  client: KubeClient,
  ref: ObjectRef,
  opts: ApiCallOptions,
): Promise<T | undefined> {
  const result = await poll(
    async () => ({ found: await getOrUndefined<T>(client, ref) }),
    pollOptions(opts, `${describe(ref)} to be read`),
  );
  return result.found;
}

/** Changes the object in place or returns its replacement; throwing refuses the object. */
export type Mutator<T> = (current: T) => T | void | Promise<T | void>;

/**
 * kubeadm CreateOrMutate / MutateConfigMap: create; when it already exists, get the latest
 * version, mutate a copy and update it. The update carries the fetched resourceVersion, so a
 * concurrent change is a 409 Conflict and the whole round is retried.
 */
export function createOrMutate<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  mutate: Mutator<T>,
  opts: ApiCallOptions,
): Promise<T> {
  const ref = refOf(obj);
  return poll(
    async () => {
      let current: T;
      if (opts.updateFirst) {
        const found = await getOrUndefined<T>(client, ref);
        if (!found) return await client.create(obj);
        current = found;
      } else {
        try {
          return await client.create(obj);
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
        current = await client.get<T>(ref);
      }
      const copy = structuredClone(current);
      const mutated = (await mutate(copy)) ?? copy;
      return await client.update(mutated);
    },
    pollOptions(opts, `${describe(ref)} to be created or mutated`),
  );
}

/** kubeadm's v1.LabelHostname, which PatchNodeOnce waits for. */
export const HOSTNAME_LABEL = "kubernetes.io/hostname";

class NotReady extends Error {}

// PatchNodeOnce retries a failed PATCH only on Timeout, Conflict, ServerTimeout and
// ServiceUnavailable; we also retry when no response or a 429 came back (a dropped connection).
function isRetriablePatchError(error: unknown): boolean {
  const reason = apiErrorOf(error)?.reason;
  return (
    isConflict(error) ||
    isTransient(error) ||
    reason === "Timeout" ||
    reason === "ServerTimeout" ||
    reason === "ServiceUnavailable"
  );
}

/**
 * kubeadm PatchNode / PatchNodeOnce: GET the Node (retrying until it exists and carries its
 * kubernetes.io/hostname label, which the kubelet sets at registration), mutate a deep copy,
 * send the two-way strategic merge patch old → new, and return the patched Node.
 */
export function patchNode(
  client: KubeClient,
  nodeName: string,
  mutate: Mutator<KubeObject>,
  opts: ApiCallOptions,
): Promise<KubeObject> {
  const ref: ObjectRef = { apiVersion: "v1", kind: "Node", name: nodeName };
  const fatal = new WeakSet<object>();
  const failFast = opts.failFast ?? isPermanent;
  return poll(
    async () => {
      const node = await client.get(ref);
      if (node.metadata.labels?.[HOSTNAME_LABEL] === undefined) {
        throw new NotReady(`the Node ${nodeName} has no ${HOSTNAME_LABEL} label yet`);
      }
      const copy = structuredClone(node);
      const modified = (await mutate(copy)) ?? copy;
      const patch = createTwoWayMergePatch(node, modified, NODE_MERGE_LISTS);
      try {
        return await client.patch(ref, patch, "strategic");
      } catch (e) {
        if (!isRetriablePatchError(e) && e instanceof Error) fatal.add(e);
        throw e;
      }
    },
    {
      ...pollOptions(opts, `the Node ${nodeName} to be patched`),
      retryIf: (e) =>
        e instanceof NotReady || (!(e instanceof Error && fatal.has(e)) && !failFast(e)),
    },
  );
}

/**
 * kubeadm's createDNSService (addons/dns/dns.go): create, and fall back to an update when the
 * Service exists or is Invalid ("provided IP is already allocated": the cluster IP belongs to
 * the existing Service). kubeadm tries once; we retry only when no answer came back.
 */
export function createOrUpdateService<T extends KubeObject>(
  client: KubeClient,
  service: T,
  opts: ApiCallOptions,
): Promise<T> {
  return poll(
    async () => {
      if (opts.updateFirst) return await updateElseCreate(client, service);
      try {
        return await client.create(service);
      } catch (e) {
        if (!isAlreadyExists(e) && !isInvalid(e)) throw e;
      }
      return await client.update(service);
    },
    {
      ...pollOptions(opts, `${describe(refOf(service))} to be created or updated`),
      // Updating first, a create that meets a Service made in between is retried as an update.
      retryIf: (e) => isTransient(e) || (opts.updateFirst === true && isAlreadyExists(e)),
    },
  );
}

/** kubeadm's constants.AnnotationKubeadmCRISocket. */
export const CRI_SOCKET_ANNOTATION = "kubeadm.alpha.kubernetes.io/cri-socket";

/**
 * kubeadm's phases/patchnode AnnotateCRISocket: without NodeLocalCRISocket the node's CRI socket
 * lives in a Node annotation, read back by upgrade and reset.
 */
export function annotateCRISocket(
  client: KubeClient,
  nodeName: string,
  criSocket: string,
  opts: ApiCallOptions,
  log: (line: string) => void,
): Promise<KubeObject> {
  log(
    `[patchnode] Uploading the CRI socket information "${criSocket}" to the Node API object "${nodeName}" as an annotation`,
  );
  return patchNode(
    client,
    nodeName,
    (node) => {
      node.metadata.annotations = {
        ...node.metadata.annotations,
        [CRI_SOCKET_ANNOTATION]: criSocket,
      };
    },
    opts,
  );
}
