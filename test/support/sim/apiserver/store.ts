// SIMULATION (test double). The object store behind the fake API server: the generic registry's
// create/get/update/patch/delete semantics over an in-memory map, with one global resourceVersion
// (etcd's revision) and change events (what watches and controllers' informers see).
// k8s: staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go (Create, Update,
// Delete, AllowCreateOnUpdate, preconditions, finalizers, ReturnDeletedObject),
// staging/src/k8s.io/apiserver/pkg/registry/rest/create.go, update.go (BeforeCreate/BeforeUpdate:
// uid, creationTimestamp, generateName, namespace checks), staging/src/k8s.io/apiserver/pkg/
// storage/etcd3/store.go (GuaranteedUpdate: a write that changes nothing keeps the
// resourceVersion), plugin/pkg/admission/namespace/lifecycle/admission.go (namespace must
// exist; default, kube-system and kube-public may not be deleted).
//
// Two storage modes, one API:
// - In memory (new ObjectStore()): the map is the truth; the revision is a counter.
// - In etcd (await ObjectStore.open({ etcd })), what kube-apiserver does with --etcd-servers:
//   the objects live in a real etcd cluster, shared by every API server on it, and the map is a
//   cache fed by one etcd watch, like kube-apiserver's watch cache
//   (k8s: staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go, etcd3/watcher.go).
//   * Keys: kube-apiserver's layout, <--etcd-prefix "/registry">/<resource>/<namespace>/<name>
//     (cluster-scoped: no namespace; services/specs, services/endpoints and minions for
//     services, endpoints and nodes) — storage-keys.ts. Values: the object as JSON (kube-apiserver
//     writes protobuf for built-in kinds), without metadata.resourceVersion.
//   * resourceVersion: the key's mod_revision; a list's is the revision the cache has reached;
//     a deleted object carries the deletion's revision (k8s: etcd3/store.go, APIObjectVersioner).
//   * Writes go to etcd first, as transactions guarded on the mod_revision the new state was
//     computed from: create "mod_revision == 0 → put", update "== rv → put", delete "== rv →
//     delete" (k8s: etcd3/store.go Create, GuaranteedUpdate, conditionalDelete). Then the call
//     waits until the watch has brought its own change into the cache ("through revision N"),
//     so listeners see it before the call returns, in revision order with everybody else's.
//   * A failed comparison means the cache was behind: it is brought up to what etcd has and the
//     whole operation runs again from the fresh state (GuaranteedUpdate's retry); a request's own
//     resourceVersion precondition then fails with 409 Conflict as it should.
//   * Synchronous API kept: etcd is called from a worker thread (etcd-worker.ts) through the
//     JSON gateway, this thread waiting with Atomics.wait (etcd-backend.ts). get/list read the
//     cache (an informer's view, updated asynchronously by the watch); the server makes reads
//     with no resourceVersion consistent first (syncObject/syncResource: a keys-only range,
//     then waiting for the watch), as kube-apiserver reads them from etcd.
import { defaultJob } from "./job-defaults.js";
import { markedForDeletion } from "./pod-grace.js";
import { allocateService, type ServiceRanges } from "./service-allocation.js";
import { str } from "./json.js";
import { randomInt, randomUUID } from "node:crypto";
import { applyObjectPatch, deepEqual, type PatchType } from "./patch.js";
import {
  pathOf,
  resourceFor,
  resourceForKind,
  RESOURCES,
  apiVersionOf,
  type ResourceInfo,
} from "./resources.js";
import { checkSchema, dropUnknownFields } from "./schema.js";
import { CRD_KIND, defaultCrd, prepareCrdForCreate, trackCrd } from "./custom-resources.js";
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from "./selectors.js";
import {
  alreadyExists,
  badRequest,
  conflict,
  failure,
  forbidden,
  gone,
  internalError,
  notFound,
  StatusError,
} from "./status.js";
import { validateObject, validateUpdate } from "./validation.js";
import {
  EtcdBackend,
  type BackendMessage,
  type EtcdOptions,
  type KV,
  type TxnOp,
} from "./etcd-backend.js";
import { parseStorageKey, storageKey, storageRange } from "./storage-keys.js";

export type Json = Record<string, unknown>;

/** A stored object as JSON: apiVersion, kind, metadata and the kind's own fields. */
export interface StoredObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

/** Who makes a request. k8s: staging/src/k8s.io/apiserver/pkg/authentication/user/user.go */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** Names one object, like src/kube/types.ts ObjectRef. */
export interface ObjectKey {
  apiVersion: string;
  kind: string;
  name: string;
  /** Absent for cluster-scoped kinds. */
  namespace?: string;
}

export type FieldValidation = "Strict" | "Warn" | "Ignore";

export interface WriteOptions {
  /** The requester (CertificateSigningRequest creation records it in spec.username/groups). */
  user?: UserInfo;
  /** "status", "approval" (CSRs), "finalize" (namespaces): write only that part. */
  subresource?: string;
  /** Unknown-field handling; the store default is Strict. */
  fieldValidation?: FieldValidation;
  /** Collects `unknown field "x"` warnings when fieldValidation is Warn. */
  warnings?: string[];
  /** Validate, but do not persist (?dryRun=All). */
  dryRun?: boolean;
  /** The API server's Service ranges (service-allocation.ts); default: the node port range only. */
  serviceRanges?: ServiceRanges;
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  /** Background (default), Foreground (treated as Background here) or Orphan. */
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  dryRun?: boolean;
  /**
   * A DELETE of the API (and an eviction): a Pod bound to a node is deleted gracefully
   * (pod-grace.ts). Without it (the store's own callers) every object is removed at once.
   */
  graceful?: boolean;
  /** DeleteOptions.gracePeriodSeconds of the request. */
  gracePeriodSeconds?: number;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

export interface StoreEvent {
  type: EventType;
  object: StoredObject;
  resource: ResourceInfo;
  /** The store revision after this change. */
  resourceVersion: number;
  /** On DELETED: what the deleter asked dependents to undergo (garbage collector input). */
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
}

export type StoreListener = (ev: StoreEvent) => void;

export interface ObjectStoreOptions {
  /** Clock for creationTimestamp and expiry checks (tests may fix it). */
  now?: () => Date;
  /** Create default, kube-system, kube-public and kube-node-lease, as kube-apiserver does at start. */
  systemNamespaces?: boolean;
  /** Changes kept for watches that resume (etcd's uncompacted history); default 2000. */
  historyLimit?: number;
}

export interface EtcdStoreOptions extends ObjectStoreOptions {
  /** The etcd cluster that holds the objects (kube-apiserver's --etcd-* flags). */
  etcd: EtcdOptions;
  log?: (line: string) => void;
  /** Gives up waiting for etcd (the API server is stopped before etcd answered). */
  signal?: AbortSignal;
}

/**
 * The cache was behind etcd (a write's mod_revision comparison failed); it has been brought up
 * to date and the operation is tried again from the start (GuaranteedUpdate's retry).
 */
class StaleCache extends Error {}

// k8s: etcd3/store.go GuaranteedUpdate retries as long as the comparison fails; a bound keeps
// a bug from spinning forever.
const MAX_ATTEMPTS = 20;

// k8s: pkg/controlplane/controller/systemnamespaces/system_namespaces_controller.go
export const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];
// k8s: plugin/pkg/admission/namespace/lifecycle/admission.go immortalNamespaces
const IMMORTAL_NAMESPACES = ["default", "kube-system", "kube-public"];
// k8s: staging/src/k8s.io/apiserver/pkg/storage/names/generate.go
const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

const isCoreService = (info: ResourceInfo) =>
  info.group === "" && info.kind === "Service" && !info.crd;

function clone<T>(v: T): T {
  return structuredClone(v);
}

function isMap(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** RFC 3339 with second precision, as metav1.Time marshals. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

// metav1.ObjectMeta field order, so responses read like the real server's.
const META_ORDER = [
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
];

function normalize(info: ResourceInfo, obj: Json): StoredObject {
  const meta = (obj.metadata ?? {}) as Json;
  const orderedMeta: Json = {};
  for (const k of META_ORDER)
    if (meta[k] !== undefined && meta[k] !== null) orderedMeta[k] = meta[k];
  for (const [k, v] of Object.entries(meta))
    if (!(k in orderedMeta) && v !== undefined && v !== null) orderedMeta[k] = v;
  const out: Json = { kind: info.kind, apiVersion: apiVersionOf(info), metadata: orderedMeta };
  for (const [k, v] of Object.entries(obj)) {
    if (k === "kind" || k === "apiVersion" || k === "metadata" || v === undefined) continue;
    out[k] = v;
  }
  return out as StoredObject;
}

function keyOf(info: ResourceInfo, namespace: string | undefined, name: string): string {
  return `${info.group}/${info.resource}/${info.namespaced ? (namespace ?? "") : ""}/${name}`;
}

function metaOf(obj: Json): Json {
  if (!isMap(obj.metadata)) obj.metadata = {};
  return obj.metadata as Json;
}

function specChanged(a: Json, b: Json): boolean {
  return !deepEqual(a.spec, b.spec);
}

/** Kinds whose main resource ignores status (it has a status subresource). */
function hasStatusSubresource(info: ResourceInfo): boolean {
  return "status" in info.subresources;
}

/** The object cache; a CRD entering or leaving it defines or retires its custom resources. */
class ObjectCache extends Map<string, StoredObject> {
  override set(key: string, obj: StoredObject): this {
    super.set(key, obj);
    if (obj.kind === CRD_KIND && obj.apiVersion === "apiextensions.k8s.io/v1") {
      trackCrd(obj.metadata.name, obj);
    }
    return this;
  }

  override delete(key: string): boolean {
    const old = this.get(key);
    const deleted = super.delete(key);
    if (old?.kind === CRD_KIND && old.apiVersion === "apiextensions.k8s.io/v1") {
      trackCrd(old.metadata.name, undefined);
    }
    return deleted;
  }
}

export class ObjectStore {
  private readonly objects = new ObjectCache();
  private readonly listeners = new Set<StoreListener>();
  private readonly history: StoreEvent[] = [];
  /** Watches may resume from this revision on; older ones get 410 Gone. */
  private historyFloor = 0;
  private readonly queue: StoreEvent[] = [];
  private dispatching = false;
  private revision = 1;
  readonly now: () => Date;
  private readonly historyLimit: number;
  /** Set when the objects live in etcd (ObjectStore.open); the map is then a watch-fed cache. */
  private backend: EtcdBackend | undefined;
  private log: (line: string) => void = () => {};
  /** Propagation policies of this store's own deletions in flight, by etcd key. */
  private readonly deletePolicies = new Map<string, StoreEvent["propagationPolicy"]>();
  /** Nesting of write operations: only the outermost one retries after a stale read. */
  private depth = 0;

  constructor(opts: ObjectStoreOptions = {}) {
    this.now = opts.now ?? (() => new Date());
    this.historyLimit = opts.historyLimit ?? 2000;
    if (opts.systemNamespaces ?? true) {
      for (const ns of SYSTEM_NAMESPACES) {
        this.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
      }
    }
  }

  /**
   * A store whose objects live in etcd, shared with every other store (API server) on the same
   * etcd cluster. Waits, retrying, until etcd answers, then lists the storage prefix and
   * watches it from that revision on. The system namespaces are created when missing.
   */
  static async open(opts: EtcdStoreOptions): Promise<ObjectStore> {
    const store = new ObjectStore({ ...opts, systemNamespaces: false });
    store.log = opts.log ?? (() => {});
    const { backend, snapshot } = await EtcdBackend.open(opts.etcd, store.log, opts.signal);
    store.backend = backend;
    // CRDs first: the keys of their custom resources parse only once the CRDs are known.
    const crdKeys = `${storageRange(backend.prefix, resourceFor("apiextensions.k8s.io", "v1", "customresourcedefinitions")!)}`;
    const kvs = [...snapshot.kvs].sort(
      (a, b) => Number(!a.key.startsWith(crdKeys)) - Number(!b.key.startsWith(crdKeys)),
    );
    for (const kv of kvs) {
      const loc = parseStorageKey(backend.prefix, kv.key);
      const obj = loc && store.decodeStored(loc.info, kv);
      if (loc && obj) store.objects.set(keyOf(loc.info, loc.namespace, loc.name), obj);
    }
    store.revision = snapshot.revision;
    store.historyFloor = snapshot.revision;
    backend.start((m, live) => {
      store.applyBackendMessage(m);
      if (live) store.flush();
    });
    if (opts.systemNamespaces ?? true) {
      // k8s: pkg/controlplane/controller/systemnamespaces — create what is missing; another
      // API server may create the same namespaces at the same time.
      for (const ns of SYSTEM_NAMESPACES) {
        if (store.get({ apiVersion: "v1", kind: "Namespace", name: ns })) continue;
        try {
          store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
        } catch (e) {
          if (!(e instanceof StatusError && e.reason === "AlreadyExists")) {
            backend.close();
            throw e;
          }
        }
      }
    }
    return store;
  }

  /** Whether the objects live in etcd. */
  get etcdBacked(): boolean {
    return this.backend !== undefined;
  }

  /** The etcd client options of an etcd-backed store. */
  get etcdOptions(): EtcdOptions | undefined {
    return this.backend?.options;
  }

  /** False while an etcd-backed store's watch is down (the "etcd" health check). */
  get healthy(): boolean {
    return this.backend ? this.backend.healthy : true;
  }

  /** Stops the etcd client of an etcd-backed store (no-op in memory). */
  close(): void {
    this.backend?.close();
  }

  /** The current revision (a list's metadata.resourceVersion). */
  get resourceVersion(): string {
    return String(this.revision);
  }

  // ---- public API by apiVersion/kind -------------------------------------------------------

  /** The object, or undefined when it does not exist. */
  get<T extends StoredObject = StoredObject>(ref: ObjectKey): T | undefined {
    const info = this.infoForKind(ref.apiVersion, ref.kind);
    const o = this.objects.get(keyOf(info, ref.namespace, ref.name));
    return o ? (clone(o) as T) : undefined;
  }

  /** Objects of a kind, sorted as etcd's keys are (namespace, then name). */
  list<T extends StoredObject = StoredObject>(
    apiVersion: string,
    kind: string,
    opts: ListOptions = {},
  ): T[] {
    return this.listIn(this.infoForKind(apiVersion, kind), opts) as T[];
  }

  create<T extends StoredObject = StoredObject>(obj: Json, opts: WriteOptions = {}): T {
    const info = this.infoForKind(str(obj.apiVersion), str(obj.kind));
    const ns = info.namespaced ? (metaOf(obj).namespace as string | undefined) : undefined;
    return this.createIn(info, ns, obj, opts) as T;
  }

  update<T extends StoredObject = StoredObject>(obj: Json, opts: WriteOptions = {}): T {
    const info = this.infoForKind(str(obj.apiVersion), str(obj.kind));
    const meta = metaOf(obj);
    const ns = info.namespaced ? (meta.namespace as string | undefined) : undefined;
    return this.updateIn(info, ns, str(meta.name), obj, opts) as T;
  }

  patch<T extends StoredObject = StoredObject>(
    ref: ObjectKey,
    patch: unknown,
    type: PatchType,
    opts: WriteOptions = {},
  ): T {
    const info = this.infoForKind(ref.apiVersion, ref.kind);
    return this.patchIn(info, ref.namespace, ref.name, patch, type, opts) as T;
  }

  delete(ref: ObjectKey, opts: DeleteOptions = {}): StoredObject {
    const info = this.infoForKind(ref.apiVersion, ref.kind);
    return this.deleteIn(info, ref.namespace, ref.name, opts);
  }

  /** Calls `listener` for every change, in revision order. Returns the unsubscribe function. */
  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves with the first non-undefined value of `check`, evaluated now and after every change;
   * rejects after `timeoutMs`. For tests and the simulated kubelet ("until the CSR is signed").
   */
  waitFor<T>(check: () => T | undefined, timeoutMs: number, what = "condition"): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const first = check();
      if (first !== undefined) return resolve(first);
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const unsubscribe = this.subscribe(() => {
        let v: T | undefined;
        try {
          v = check();
        } catch (e) {
          clearTimeout(timer);
          unsubscribe();
          reject(e instanceof Error ? e : new Error(String(e)));
          return;
        }
        if (v !== undefined) {
          clearTimeout(timer);
          unsubscribe();
          resolve(v);
        }
      });
    });
  }

  /** Events after `resourceVersion` (for watches that resume), or a 410 Gone when too old. */
  eventsSince(resourceVersion: number): StoreEvent[] {
    if (resourceVersion < this.historyFloor) {
      throw gone(`too old resource version: ${resourceVersion} (${this.historyFloor})`);
    }
    return this.history
      .filter((e) => e.resourceVersion > resourceVersion)
      .map((e) => ({ ...e, object: clone(e.object) }));
  }

  // ---- by ResourceInfo (the server's entry points) -----------------------------------------

  infoForKind(apiVersion: string, kind: string): ResourceInfo {
    const info = resourceForKind(apiVersion, kind);
    if (!info || info.virtual) {
      throw badRequest(
        `no kind "${kind}" is registered for version "${apiVersion}" in the simulated API server`,
      );
    }
    return info;
  }

  getIn(info: ResourceInfo, namespace: string | undefined, name: string): StoredObject {
    const o = this.lookup(info, namespace, name);
    if (!o) throw notFound(info.group, info.resource, name);
    return clone(o);
  }

  /**
   * etcd-backed stores: brings one cached object up to etcd's current state, as a read with no
   * resourceVersion sees it (kube-apiserver serves those from etcd). A no-op in memory.
   * k8s: staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go (Get with resourceVersion ""
   * delegates to etcd).
   */
  syncObject(info: ResourceInfo, namespace: string | undefined, name: string): void {
    const backend = this.backend;
    if (!backend) return;
    const ek = storageKey(backend.prefix, info, namespace, name);
    const cached = this.objects.get(keyOf(info, namespace, name));
    const cachedRV = cached ? Number(cached.metadata.resourceVersion) : 0;
    const { revision, kvs } = backend.range(ek, { keysOnly: true });
    const kv = kvs[0];
    if (kv && kv.modRevision > cachedRV) backend.through(kv.modRevision);
    else if (!kv && cached && cachedRV <= revision) backend.keyPast(ek, cachedRV);
    this.flush();
  }

  /**
   * etcd-backed stores: brings the cached objects of a resource (in one namespace) up to etcd's
   * current state, for a consistent list. A no-op in memory.
   * k8s: staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go (ConsistentListFromCache:
   * the cache waits until it has etcd's current revision).
   */
  syncResource(info: ResourceInfo, namespace?: string): void {
    const backend = this.backend;
    if (!backend) return;
    const prefix = storageRange(backend.prefix, info, namespace);
    const { revision, kvs } = backend.range(prefix, {
      rangeEnd: rangeEndOf(prefix),
      keysOnly: true,
    });
    const inEtcd = new Set(kvs.map((kv) => kv.key));
    const newest = Math.max(0, ...kvs.map((kv) => kv.modRevision));
    if (newest > this.revision) backend.through(newest);
    for (const o of this.listIn(info, namespace ? { namespace } : {})) {
      const ek = storageKey(backend.prefix, info, o.metadata.namespace, o.metadata.name);
      const rv = Number(o.metadata.resourceVersion);
      if (!inEtcd.has(ek) && rv <= revision) backend.keyPast(ek, rv);
    }
    this.flush();
  }

  listIn(info: ResourceInfo, opts: ListOptions = {}): StoredObject[] {
    const labels = parseLabelSelector(opts.labelSelector);
    const fields = parseFieldSelector(opts.fieldSelector, info.kind);
    const prefix = `${info.group}/${info.resource}/`;
    const out: StoredObject[] = [];
    for (const [k, o] of this.objects) {
      if (!k.startsWith(prefix)) continue;
      if (info.namespaced && opts.namespace && o.metadata.namespace !== opts.namespace) continue;
      if (!matchesLabels(labels, o.metadata.labels)) continue;
      if (!matchesFields(fields, o)) continue;
      out.push(clone(o));
    }
    return out.sort((a, b) => {
      const ka = `${a.metadata.namespace ?? ""}/${a.metadata.name}`;
      const kb = `${b.metadata.namespace ?? ""}/${b.metadata.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  }

  createIn(
    info: ResourceInfo,
    namespace: string | undefined,
    body: Json,
    opts: WriteOptions = {},
  ): StoredObject {
    return this.guarded(() => this.createOnce(info, namespace, body, opts));
  }

  private createOnce(
    info: ResourceInfo,
    namespace: string | undefined,
    body: Json,
    opts: WriteOptions,
  ): StoredObject {
    const obj = this.decode(info, body, opts);
    const meta = metaOf(obj);
    // k8s: rest/create.go BeforeCreate
    if (info.namespaced) {
      const bodyNs = meta.namespace as string | undefined;
      if (bodyNs && namespace && bodyNs !== namespace) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      const ns = namespace ?? bodyNs;
      if (!ns)
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      meta.namespace = ns;
      this.requireNamespace(ns);
    } else {
      delete meta.namespace;
    }
    if (!meta.name && typeof meta.generateName === "string" && meta.generateName !== "") {
      let suffix = "";
      for (let i = 0; i < 5; i++) suffix += GENERATE_ALPHABET[randomInt(GENERATE_ALPHABET.length)];
      meta.name = `${meta.generateName}${suffix}`;
    }
    // k8s: storage/etcd3/store.go Create — the version must parse to 0: "" or "0" (kubeadm's
    // kube-dns Service template carries resourceVersion "0").
    if (!unsetVersion(meta.resourceVersion)) {
      throw badRequest("resourceVersion should not be set on objects to be created");
    }
    delete meta.resourceVersion;
    applyDefaults(info, obj);
    this.prepareForCreate(info, obj, opts.user);
    meta.uid = randomUUID();
    // The Job strategy's generateSelector needs the UID (pkg/registry/batch/job/strategy.go).
    if (info.group === "batch" && info.kind === "Job" && !info.crd) defaultJob(obj);
    if (isCoreService(info)) {
      allocateService(obj, this.otherServices(info, meta), opts.serviceRanges ?? {});
    }
    meta.creationTimestamp = rfc3339(this.now());
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.selfLink;
    delete meta.managedFields;
    validateObject(info, obj);
    const key = keyOf(info, meta.namespace as string | undefined, str(meta.name));
    if (this.objects.has(key)) {
      // The cache may still hold an object deleted through another API server.
      this.syncObject(info, meta.namespace as string | undefined, str(meta.name));
      if (this.objects.has(key)) throw alreadyExists(info.group, info.resource, str(meta.name));
    }
    const stored = normalize(info, obj);
    if (opts.dryRun) return stored;
    return this.persist(info, key, stored, "ADDED");
  }

  updateIn(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    body: Json,
    opts: WriteOptions = {},
  ): StoredObject {
    return this.guarded(() =>
      this.updateDecoded(info, namespace, name, this.decode(info, body, opts), opts),
    );
  }

  patchIn(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType,
    opts: WriteOptions = {},
  ): StoredObject {
    // k8s: endpoints/handlers/patch.go — the patch is applied again to the object read anew
    // when the write meets a newer version.
    return this.guarded(() => {
      const current = this.getIn(info, namespace, name);
      const patched = applyObjectPatch(current, patch, type, info.model);
      // The patched object is decoded and validated like an update body.
      const obj = this.decode(info, patched, opts);
      return this.updateDecoded(info, namespace, name, obj, opts);
    });
  }

  deleteIn(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): StoredObject {
    return this.guarded(() => this.deleteOnce(info, namespace, name, opts));
  }

  private deleteOnce(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions,
  ): StoredObject {
    const key = keyOf(info, namespace, name);
    const existing = this.lookup(info, namespace, name);
    if (!existing) throw notFound(info.group, info.resource, name);
    const pre = opts.preconditions ?? {};
    const stale = () => this.staleRead(info, namespace, name, existing);
    // k8s: staging/src/k8s.io/apiserver/pkg/storage/interfaces.go Preconditions.Check
    if (pre.uid && pre.uid !== existing.metadata.uid) {
      stale();
      throw conflict(
        info.group,
        info.resource,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`,
      );
    }
    if (pre.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
      stale();
      throw conflict(
        info.group,
        info.resource,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion}`,
      );
    }
    if (info.kind === "Namespace") {
      if (IMMORTAL_NAMESPACES.includes(name)) {
        throw forbidden("", "namespaces", name, "this namespace may not be deleted");
      }
      if (opts.dryRun) return clone(existing);
      // Simplified namespace lifecycle: the namespace controller's cleanup happens at once.
      // k8s: pkg/controller/namespace/deletion/namespaced_resources_deleter.go
      for (const r of RESOURCES) {
        if (!r.namespaced || r.virtual) continue;
        for (const o of this.listIn(r, { namespace: name })) {
          this.remove(r, keyOf(r, name, o.metadata.name), opts.propagationPolicy);
        }
      }
      const terminating = clone(existing);
      terminating.metadata.deletionTimestamp = rfc3339(this.now());
      terminating.status = { phase: "Terminating" };
      this.remove(info, key, opts.propagationPolicy);
      return terminating;
    }
    if (opts.dryRun) return clone(existing);
    if (opts.graceful && info.kind === "Pod") {
      const marked = markedForDeletion(existing, this.now(), opts.gracePeriodSeconds);
      if (marked === existing) return clone(existing);
      if (marked) return this.persist(info, key, clone(marked), "MODIFIED");
    }
    const finalizers = existing.metadata.finalizers as string[] | undefined;
    if (finalizers && finalizers.length > 0) {
      // k8s: registry/generic/registry/store.go updateForGracefulDeletionAndFinalizers
      if (existing.metadata.deletionTimestamp) return clone(existing);
      const next = clone(existing);
      next.metadata.deletionTimestamp = rfc3339(this.now());
      next.metadata.deletionGracePeriodSeconds = 0;
      return this.persist(info, key, next, "MODIFIED");
    }
    return this.remove(info, key, opts.propagationPolicy);
  }

  // ---- internals ----------------------------------------------------------------------------

  /** Schema check and unknown-field handling of a request body; returns a private copy. */
  private decode(info: ResourceInfo, body: Json, opts: WriteOptions): Json {
    if (!isMap(body)) throw badRequest("the body of the request could not be decoded as an object");
    const obj = clone(body);
    const wantVersion = apiVersionOf(info);
    if (obj.apiVersion !== undefined && obj.apiVersion !== wantVersion) {
      throw badRequest(
        `the API version in the data (${str(obj.apiVersion)}) does not match the expected API version (${wantVersion})`,
      );
    }
    if (obj.kind !== undefined && obj.kind !== info.kind) {
      throw badRequest(
        `the kind in the data (${str(obj.kind)}) does not match the expected kind (${info.kind})`,
      );
    }
    // Custom resources have no model to check against (custom-resources.ts: SIMULATION LIMITS).
    const { unknownFields } = info.crd
      ? { unknownFields: [] }
      : checkSchema(info.model, info.kind, info.version, obj);
    const level = opts.fieldValidation ?? "Strict";
    if (unknownFields.length > 0) {
      if (level === "Strict") {
        throw badRequest(
          `strict decoding error: ${unknownFields.map((f) => `unknown field "${f}"`).join(", ")}`,
        );
      }
      if (level === "Warn")
        opts.warnings?.push(...unknownFields.map((f) => `unknown field "${f}"`));
      dropUnknownFields(info.model, obj);
    }
    stripNulls(obj);
    obj.apiVersion = wantVersion;
    obj.kind = info.kind;
    return obj;
  }

  private requireNamespace(ns: string): void {
    const nsInfo = resourceFor("", "v1", "namespaces")!;
    // k8s: plugin/pkg/admission/namespace/lifecycle/admission.go — a namespace missing from the
    // informer's cache is looked up live before the request is refused.
    const found = this.lookup(nsInfo, undefined, ns);
    if (!found) throw notFound("", "namespaces", ns);
    if (found.metadata.deletionTimestamp) {
      throw forbidden(
        "",
        "namespaces",
        ns,
        `unable to create new content in namespace ${ns} because it is being terminated`,
      );
    }
  }

  /** The stored Services other than the one `meta` names: what holds cluster IPs and node ports. */
  private otherServices(info: ResourceInfo, meta: Json): StoredObject[] {
    return this.listIn(info).filter(
      (s) => s.metadata.namespace !== meta.namespace || s.metadata.name !== meta.name,
    );
  }

  /** k8s: pkg/registry/<group>/<kind>/strategy.go PrepareForCreate */
  private prepareForCreate(info: ResourceInfo, obj: Json, user?: UserInfo): void {
    const meta = metaOf(obj);
    if (info.hasGeneration || info.kind === "Pod") meta.generation = 1;
    else delete meta.generation;
    switch (info.kind) {
      case "Namespace": {
        // k8s: pkg/registry/core/namespace/strategy.go — finalizer, phase, metadata.name label
        obj.spec = { finalizers: ["kubernetes"], ...(isMap(obj.spec) ? obj.spec : {}) };
        obj.status = { phase: "Active" };
        meta.labels = {
          ...(meta.labels ?? {}),
          "kubernetes.io/metadata.name": meta.name ?? meta.generateName,
        };
        break;
      }
      case "Pod": {
        // k8s: pkg/registry/core/pod/strategy.go PrepareForCreate; plugin/pkg/admission/priority
        const spec = isMap(obj.spec) ? obj.spec : {};
        const classes: Record<string, number> = {
          "system-node-critical": 2000001000,
          "system-cluster-critical": 2000000000,
        };
        const pc = spec.priorityClassName as string | undefined;
        if (spec.priority === undefined) spec.priority = pc && pc in classes ? classes[pc] : 0;
        obj.status = { phase: "Pending", qosClass: qosClass(spec) };
        break;
      }
      case "Deployment":
      case "ReplicaSet":
      case "DaemonSet":
        obj.status = {};
        break;
      case CRD_KIND:
        prepareCrdForCreate(obj);
        break;
      case "CertificateSigningRequest": {
        // k8s: pkg/registry/certificates/certificates/strategy.go PrepareForCreate — the
        // requester's identity is recorded; nobody can create a pre-approved request.
        const spec = isMap(obj.spec) ? obj.spec : {};
        delete spec.username;
        delete spec.uid;
        delete spec.groups;
        delete spec.extra;
        if (user) {
          spec.username = user.username;
          if (user.uid) spec.uid = user.uid;
          spec.groups = [...user.groups];
          if (user.extra && Object.keys(user.extra).length > 0) spec.extra = user.extra;
        }
        obj.spec = spec;
        obj.status = {};
        break;
      }
      case "Node": {
        // k8s: pkg/registry/core/node/strategy.go — status kept (the kubelet registers with it)
        if (isMap(obj.spec)) delete obj.spec.configSource;
        break;
      }
    }
  }

  /** k8s: <kind>/strategy.go PrepareForUpdate and the status/approval strategies. */
  private prepareForUpdate(
    info: ResourceInfo,
    next: Json,
    prev: StoredObject,
    subresource?: string,
  ): Json {
    const keepMeta = (from: Json, into: Json) => {
      const m = metaOf(into);
      const pm = (from.metadata ?? {}) as Json;
      for (const k of [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
      ]) {
        if (pm[k] !== undefined) m[k] = pm[k];
        else delete m[k];
      }
      m.name = pm.name;
      if (pm.namespace !== undefined) m.namespace = pm.namespace;
    };
    let out: Json;
    if (subresource === "status" || subresource === "approval" || subresource === "finalize") {
      // Status-like writes change only their part; metadata stays (ResetObjectMetaForStatus).
      out = clone(prev);
      const nextStatus = isMap(next.status) ? next.status : {};
      if (subresource === "finalize") {
        out.spec = {
          ...(isMap(out.spec) ? out.spec : {}),
          finalizers: (next.spec as Json | undefined)?.finalizers ?? [],
        };
      } else if (info.kind === "CertificateSigningRequest") {
        const prevStatus = isMap(prev.status) ? prev.status : {};
        const isApproval = (c: Json) => c.type === "Approved" || c.type === "Denied";
        const newConds = ((nextStatus.conditions ?? []) as Json[]).map((c) =>
          stampCondition(c, this.now()),
        );
        const oldConds = (prevStatus.conditions ?? []) as Json[];
        if (subresource === "approval") {
          out.status = { ...prevStatus, conditions: newConds };
        } else {
          out.status = {
            ...nextStatus,
            conditions: [...newConds.filter((c) => !isApproval(c)), ...oldConds.filter(isApproval)],
          };
        }
        if (((out.status as Json).conditions as unknown[]).length === 0)
          delete (out.status as Json).conditions;
      } else {
        out.status = nextStatus;
      }
      return out;
    }
    out = next;
    keepMeta(prev, out);
    if (hasStatusSubresource(info) || info.kind === "CertificateSigningRequest") {
      if (prev.status !== undefined) out.status = clone(prev.status);
      else delete out.status;
    }
    if (info.kind === "CertificateSigningRequest") out.spec = clone(prev.spec);
    if (info.kind === "Namespace") {
      out.spec = clone(prev.spec);
      const m = metaOf(out);
      m.labels = {
        ...(m.labels ?? {}),
        "kubernetes.io/metadata.name": prev.metadata.name,
      };
    }
    if ((info.hasGeneration || info.kind === "Pod") && specChanged(out, prev)) {
      metaOf(out).generation = Number(prev.metadata.generation ?? 0) + 1;
    }
    return out;
  }

  private updateDecoded(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    obj: Json,
    opts: WriteOptions,
  ): StoredObject {
    const meta = metaOf(obj);
    // k8s: rest/update.go BeforeUpdate and handlers/update.go (name must match the URL)
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(
        `the name of the object (${str(meta.name)}) does not match the name on the URL (${name})`,
      );
    }
    meta.name = name;
    if (info.namespaced) {
      if (
        meta.namespace !== undefined &&
        meta.namespace !== "" &&
        namespace &&
        meta.namespace !== namespace
      ) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      meta.namespace = namespace ?? meta.namespace;
    } else delete meta.namespace;
    const key = keyOf(info, meta.namespace as string | undefined, name);
    const prev = this.lookup(info, meta.namespace as string | undefined, name);
    if (!prev) {
      // k8s: registry/generic/registry/store.go Update — creating through PUT needs no
      // resourceVersion; one that names a version of a missing object is NotFound.
      const wantsVersion = !unsetVersion(meta.resourceVersion);
      if (info.allowCreateOnUpdate && !opts.subresource && !wantsVersion) {
        delete meta.resourceVersion;
        return this.createIn(info, meta.namespace as string | undefined, obj, {
          ...opts,
          fieldValidation: "Ignore",
        });
      }
      throw notFound(info.group, info.resource, name);
    }
    // k8s: registry/generic/registry/store.go Update — version 0 ("" or "0") is an
    // unconditional update.
    const rv = meta.resourceVersion;
    if (!unsetVersion(rv) && rv !== prev.metadata.resourceVersion) {
      // The caller may know a newer version than this API server's cache does.
      this.staleRead(info, meta.namespace as string | undefined, name, prev);
      throw conflict(info.group, info.resource, name);
    }
    applyDefaults(info, obj);
    const next = this.prepareForUpdate(info, obj, prev, opts.subresource);
    if (isCoreService(info) && !opts.subresource) {
      allocateService(next, this.otherServices(info, meta), opts.serviceRanges ?? {}, prev);
    }
    validateUpdate(info, next, prev);
    validateObject(info, next);
    const stored = normalize(info, next);
    stored.metadata.resourceVersion = prev.metadata.resourceVersion;
    // k8s: etcd3/store.go GuaranteedUpdate — identical bytes are not written again.
    if (deepEqual(stored, prev)) return clone(prev);
    if (opts.dryRun) return stored;
    const finalizers = stored.metadata.finalizers as string[] | undefined;
    if (stored.metadata.deletionTimestamp && (!finalizers || finalizers.length === 0)) {
      // The last finalizer is gone: the deletion completes.
      this.persist(info, key, stored, "MODIFIED");
      return this.remove(info, key, "Background");
    }
    return this.persist(info, key, stored, "MODIFIED");
  }

  private persist(
    info: ResourceInfo,
    key: string,
    obj: StoredObject,
    type: EventType,
  ): StoredObject {
    if (this.backend) return this.persistInEtcd(this.backend, info, key, obj, type);
    this.revision++;
    obj.metadata.resourceVersion = String(this.revision);
    this.objects.set(key, obj);
    this.emit({ type, object: clone(obj), resource: info, resourceVersion: this.revision });
    return clone(obj);
  }

  private remove(
    info: ResourceInfo,
    key: string,
    propagationPolicy?: "Background" | "Foreground" | "Orphan",
  ): StoredObject {
    if (this.backend) return this.removeInEtcd(this.backend, info, key, propagationPolicy);
    const existing = this.objects.get(key)!;
    this.objects.delete(key);
    this.revision++;
    const gone = clone(existing);
    gone.metadata.resourceVersion = String(this.revision);
    const ev: StoreEvent = {
      type: "DELETED",
      object: clone(gone),
      resource: info,
      resourceVersion: this.revision,
    };
    if (propagationPolicy) ev.propagationPolicy = propagationPolicy;
    this.emit(ev);
    return gone;
  }

  // ---- etcd ---------------------------------------------------------------------------------
  // k8s: staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go — Create is a transaction
  // "mod_revision(key) == 0 → put"; GuaranteedUpdate and conditional Delete compare the
  // mod_revision the update was computed from and, when it moved, retry from the current state
  // (here: the cache, brought up to date by the watch first). The object is stored without its
  // resourceVersion (APIObjectVersioner.PrepareObjectForStorage); the resourceVersion read back
  // is the key's mod_revision, and a list's is the revision the cache has reached.

  /** Runs a write operation, again from the start while it met a stale cache. */
  private guarded<T>(op: () => T): T {
    if (!this.backend || this.depth > 0) return op();
    this.depth++;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return op();
        } catch (e) {
          if (!(e instanceof StaleCache)) throw e;
          if (attempt >= MAX_ATTEMPTS)
            throw internalError(`the object kept changing in etcd over ${attempt} attempts`);
        }
      }
    } finally {
      this.depth--;
    }
  }

  /** The cached object; an etcd-backed store that lacks it asks etcd first. */
  private lookup(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
  ): StoredObject | undefined {
    const key = keyOf(info, namespace, name);
    if (!this.objects.has(key) && this.backend) this.syncObject(info, namespace, name);
    return this.objects.get(key);
  }

  /** Before a precondition failure: retries instead when the cache was behind etcd. */
  private staleRead(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    seen: StoredObject,
  ): void {
    if (!this.backend) return;
    this.syncObject(info, namespace, name);
    const now = this.objects.get(keyOf(info, namespace, name));
    if (now?.metadata.resourceVersion !== seen.metadata.resourceVersion) throw new StaleCache();
  }

  private persistInEtcd(
    backend: EtcdBackend,
    info: ResourceInfo,
    key: string,
    obj: StoredObject,
    type: EventType,
  ): StoredObject {
    const ek = storageKey(backend.prefix, info, obj.metadata.namespace, obj.metadata.name);
    // The version the new state was computed from (GuaranteedUpdate's origState).
    const from = obj.metadata.resourceVersion ?? this.objects.get(key)?.metadata.resourceVersion;
    const expected = type === "ADDED" ? 0 : Number(from ?? 0);
    const { resourceVersion: _rv, ...meta } = obj.metadata;
    const value = JSON.stringify({ ...obj, metadata: meta });
    const r = backend.txn(
      [{ key: ek, modRevision: expected }],
      [{ put: { key: ek, value } }],
      [{ range: { key: ek } }],
    );
    if (!r.succeeded) this.catchUp(backend, ek, expected, r.kvs[0]);
    backend.through(r.revision);
    this.flush();
    const cached = this.objects.get(key);
    if (cached?.metadata.resourceVersion === String(r.revision)) return clone(cached);
    return normalize(info, {
      ...clone(obj),
      metadata: { ...meta, resourceVersion: String(r.revision) },
    });
  }

  private removeInEtcd(
    backend: EtcdBackend,
    info: ResourceInfo,
    key: string,
    propagationPolicy?: "Background" | "Foreground" | "Orphan",
  ): StoredObject {
    const existing = this.objects.get(key);
    if (!existing) throw new StaleCache(); // deleted meanwhile: the operation starts over
    const ek = storageKey(
      backend.prefix,
      info,
      existing.metadata.namespace,
      existing.metadata.name,
    );
    const expected = Number(existing.metadata.resourceVersion);
    // Set before the transaction: the watch may hand its event over while the call is drained.
    if (propagationPolicy) this.deletePolicies.set(ek, propagationPolicy);
    const ops: TxnOp[] = [{ delete: { key: ek } }];
    let r;
    try {
      r = backend.txn([{ key: ek, modRevision: expected }], ops, [{ range: { key: ek } }]);
    } catch (e) {
      this.deletePolicies.delete(ek);
      throw e;
    }
    if (!r.succeeded) {
      this.deletePolicies.delete(ek);
      this.catchUp(backend, ek, expected, r.kvs[0]);
    }
    backend.through(r.revision);
    this.flush();
    const gone = clone(existing);
    gone.metadata.resourceVersion = String(r.revision);
    return gone;
  }

  /** After a failed comparison: waits until the cache has what etcd has, then retries. */
  private catchUp(backend: EtcdBackend, ek: string, expected: number, current?: KV): never {
    if (current) backend.through(current.modRevision);
    else backend.keyPast(ek, expected);
    this.flush();
    throw new StaleCache();
  }

  /** An object as stored in etcd, with its mod_revision as resourceVersion. */
  private decodeStored(
    info: ResourceInfo,
    kv: { key: string; value?: string; modRevision: number },
  ): StoredObject | undefined {
    try {
      const obj = JSON.parse(kv.value ?? "") as Json;
      if (!isMap(obj) || !isMap(obj.metadata)) throw new Error("no metadata");
      obj.metadata.resourceVersion = String(kv.modRevision);
      return normalize(info, obj);
    } catch (e) {
      // kube-apiserver's own values are protobuf ("k8s\0..."): not readable here.
      this.log(
        `etcd key ${kv.key}: not a JSON object the simulation stored (${(e as Error).message})`,
      );
      return undefined;
    }
  }

  /** Applies watch events to the cache and queues them for listeners (flush delivers them). */
  private applyBackendMessage(m: BackendMessage): void {
    const backend = this.backend!;
    const floor = this.revision;
    if (m.type === "reset") {
      this.resetTo(backend, m.revision, m.kvs);
      return;
    }
    for (const ev of m.events) {
      if (ev.modRevision <= floor) continue; // already applied (a list at a later revision)
      const loc = parseStorageKey(backend.prefix, ev.key);
      if (!loc) continue;
      const key = keyOf(loc.info, loc.namespace, loc.name);
      if (ev.type === "PUT") {
        const obj = this.decodeStored(loc.info, ev);
        if (!obj) continue;
        this.objects.set(key, obj);
        // k8s: etcd3/event.go — a creation is a PUT whose create_revision is its mod_revision.
        const type = ev.createRevision === ev.modRevision ? "ADDED" : "MODIFIED";
        this.enqueue({
          type,
          object: clone(obj),
          resource: loc.info,
          resourceVersion: ev.modRevision,
        });
        continue;
      }
      const last =
        this.objects.get(key) ??
        (ev.prevValue !== undefined
          ? this.decodeStored(loc.info, {
              key: ev.key,
              value: ev.prevValue,
              modRevision: ev.modRevision,
            })
          : undefined);
      this.objects.delete(key);
      const policy = this.deletePolicies.get(ev.key);
      this.deletePolicies.delete(ev.key);
      if (!last) continue;
      // k8s: etcd3/watcher.go — a deleted object carries the deletion's revision.
      const gone = clone(last);
      gone.metadata.resourceVersion = String(ev.modRevision);
      const sev: StoreEvent = {
        type: "DELETED",
        object: gone,
        resource: loc.info,
        resourceVersion: ev.modRevision,
      };
      if (policy) sev.propagationPolicy = policy;
      this.enqueue(sev);
    }
    this.revision = Math.max(this.revision, m.revision);
  }

  /** After a compaction: the cache becomes the new list; the differences become events. */
  private resetTo(backend: EtcdBackend, revision: number, kvs: KV[]): void {
    const seen = new Set<string>();
    for (const kv of kvs) {
      const loc = parseStorageKey(backend.prefix, kv.key);
      const obj = loc && this.decodeStored(loc.info, kv);
      if (!loc || !obj) continue;
      const key = keyOf(loc.info, loc.namespace, loc.name);
      seen.add(key);
      const old = this.objects.get(key);
      if (old?.metadata.resourceVersion === obj.metadata.resourceVersion) continue;
      this.objects.set(key, obj);
      this.enqueue({
        type: old ? "MODIFIED" : "ADDED",
        object: clone(obj),
        resource: loc.info,
        resourceVersion: kv.modRevision,
      });
    }
    for (const [key, old] of [...this.objects]) {
      if (seen.has(key)) continue;
      this.objects.delete(key);
      const info = this.infoForKind(old.apiVersion, old.kind);
      const gone = clone(old);
      gone.metadata.resourceVersion = String(revision);
      this.enqueue({ type: "DELETED", object: gone, resource: info, resourceVersion: revision });
    }
    this.revision = revision;
    this.history.length = 0;
    this.historyFloor = revision;
  }

  // ---- events -------------------------------------------------------------------------------

  private emit(ev: StoreEvent): void {
    this.enqueue(ev);
    this.flush();
  }

  private enqueue(ev: StoreEvent): void {
    this.history.push(ev);
    if (this.history.length > this.historyLimit) {
      this.historyFloor = this.history.shift()!.resourceVersion;
    }
    this.queue.push(ev);
  }

  /** Delivers queued events to listeners, in order; nested calls leave it to the outer one. */
  private flush(): void {
    if (this.dispatching) return; // delivered in order by the outer loop
    this.dispatching = true;
    try {
      while (this.queue.length > 0) {
        const next = this.queue.shift()!;
        for (const l of [...this.listeners]) {
          try {
            l({ ...next, object: clone(next.object) });
          } catch {
            // A listener's failure must not break the store (informer handlers are isolated too).
          }
        }
      }
    } finally {
      this.dispatching = false;
    }
  }
}

/** The end of the etcd range of keys that start with `prefix` (all ASCII here). */
function rangeEndOf(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/** JSON null decodes to Go's zero value, which is then omitted (maps, pointers, slices). */
function stripNulls(v: unknown): void {
  if (Array.isArray(v)) {
    for (const x of v) stripNulls(x);
  } else if (isMap(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (x === null) delete v[k];
      else stripNulls(x);
    }
  }
}

/** Condition timestamps the API server fills in. k8s: certificates/strategy.go populateConditionTimestamps */
function stampCondition(c: Json, now: Date): Json {
  const out = { ...c };
  if (!out.lastUpdateTime) out.lastUpdateTime = rfc3339(now);
  if (!out.lastTransitionTime) out.lastTransitionTime = rfc3339(now);
  if (!out.status) out.status = "True";
  return out;
}

/** k8s: pkg/apis/core/helper/qos/qos.go GetPodQOS (cpu and memory only). */
function qosClass(spec: Json): string {
  const containers = [
    ...((spec.containers ?? []) as Json[]),
    ...((spec.initContainers ?? []) as Json[]),
  ];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const res = (c.resources ?? {}) as { requests?: Json; limits?: Json };
    const req = res.requests ?? {};
    const lim = res.limits ?? {};
    for (const r of ["cpu", "memory"]) {
      if (req[r] !== undefined || lim[r] !== undefined) any = true;
      if (lim[r] === undefined || (req[r] !== undefined && str(req[r]) !== str(lim[r])))
        guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

export { StatusError, failure, pathOf };

/** Creates `obj`; another API server on the same etcd may have created it meanwhile. */
export function createUnlessExists(store: ObjectStore, obj: Json): void {
  try {
    store.create(obj);
  } catch (e) {
    if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
  }
}

/** A resourceVersion that parses to 0 (etcd3 APIObjectVersioner): none was given. */
function unsetVersion(rv: unknown): boolean {
  return rv === undefined || rv === "" || rv === "0";
}

/**
 * The API server's defaulting of decoded bodies, for the fields kubeadm leaves to it.
 * k8s: pkg/apis/rbac/v1/defaults.go SetDefaults_Subject — User and Group subjects get the RBAC
 * API group, ServiceAccount subjects the core group.
 */
function applyDefaults(info: ResourceInfo, obj: Json): void {
  if (info.kind === CRD_KIND && !info.crd) defaultCrd(obj);
  if (info.kind !== "RoleBinding" && info.kind !== "ClusterRoleBinding") return;
  if (!Array.isArray(obj.subjects)) return;
  for (const subject of obj.subjects) {
    if (!isMap(subject) || (subject.apiGroup !== undefined && subject.apiGroup !== "")) continue;
    if (subject.kind === "User" || subject.kind === "Group") {
      subject.apiGroup = "rbac.authorization.k8s.io";
    }
  }
}
