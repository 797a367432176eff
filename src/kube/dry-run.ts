import { applyPatch, type Operation } from "fast-json-patch";
import { toYAML } from "../config/yaml.js";
import { ApiError, operationOf } from "./errors.js";
import { collectionPath, objectPath, resourceFor, type ResourceInfo } from "./resources.js";
import type {
  ClusterAccess,
  KubeClient,
  KubeObject,
  ListOptions,
  ObjectRef,
  PatchType,
  ProbeOptions,
  RawResponse,
} from "./types.js";

// `--dry-run` for the API (kubeadm util/apiclient/dryrun.go and the dry-run client of
// cmd/init.go): nothing is sent. Every write is printed as a YAML document preceded by
// `# <VERB> <request path>`, so stdout can be piped to a file or to kubectl, and remembered so
// later reads see it (owner references need the uid a create returns). Reads of anything never
// written are NotFound, except Nodes: like kubeadm's GetNodeReactor/PatchNodeReactor, any Node
// is answered with a stand-in carrying its kubernetes.io/hostname label, so mark-control-plane
// computes and prints its PATCH.

type Writer = (text: string) => void;
type Logger = (line: string) => void;

function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function refOfObject(obj: KubeObject): ObjectRef {
  const { apiVersion, kind } = obj;
  const { name, namespace } = obj.metadata;
  return namespace ? { apiVersion, kind, name, namespace } : { apiVersion, kind, name };
}

/** kubeadm's getNode (dryrun.go): a Node with only its hostname label. */
function standInNode(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "kubernetes.io/hostname": name } },
  };
}

/** RFC 7386 JSON merge patch; strategic merge patches are applied the same way (lists replaced). */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return plain(patch);
  const base =
    typeof target === "object" && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (key.startsWith("$")) continue; // strategic-merge directives
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

// Label selectors (k8s.io/apimachinery labels.Parse): =, ==, !=, in, notin, exists, !exists.
function matchesSelector(labels: Record<string, string>, selector: string | undefined): boolean {
  if (!selector?.trim()) return true;
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const c of selector) {
    if (c === "(") depth++;
    if (c === ")") depth--;
    if (c === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else current += c;
  }
  terms.push(current);
  return terms.every((raw) => {
    const term = raw.trim();
    let m = /^(\S+?)\s*(==|!=|=)\s*(\S*)$/.exec(term);
    if (m) {
      const [, key, op, value] = m;
      return op === "!=" ? labels[key!] !== value : labels[key!] === value;
    }
    m = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
    if (m) {
      const values = m[3]!.split(",").map((v) => v.trim());
      const has = labels[m[1]!] !== undefined && values.includes(labels[m[1]!]!);
      return m[2] === "in" ? has : !has;
    }
    if (term.startsWith("!")) return labels[term.slice(1).trim()] === undefined;
    return labels[term] !== undefined;
  });
}

/** A KubeClient that prints writes instead of sending them. */
export class DryRunKubeClient implements KubeClient {
  private readonly objects = new Map<string, KubeObject>();
  private serial = 0;

  constructor(
    private readonly write: Writer,
    private readonly log: Logger = () => {},
    readonly description = "the dry-run client",
  ) {}

  private print(verb: "CREATE" | "UPDATE" | "PATCH" | "DELETE", path: string, doc: unknown): void {
    this.write(`---\n# ${verb} ${path}\n${toYAML(plain(doc))}`);
  }

  // Deterministic stand-ins for what the server would assign: a dry run prints the same
  // owner references every time.
  private nextIdentity(): { uid: string; resourceVersion: string } {
    this.serial++;
    const uid = `00000000-0000-4000-8000-${this.serial.toString(16).padStart(12, "0")}`;
    return { uid, resourceVersion: String(this.serial) };
  }

  private notFound(verb: "get" | "update" | "patch", ref: ObjectRef): ApiError {
    const plural = resourceFor(ref.apiVersion, ref.kind).plural;
    return new ApiError({
      operation: operationOf(verb, ref),
      code: 404,
      reason: "NotFound",
      statusMessage: `${plural} "${ref.name}" not found`,
    });
  }

  private current(ref: ObjectRef): KubeObject | undefined {
    const stored = this.objects.get(objectPath(ref));
    if (stored) return stored;
    return ref.kind === "Node" ? standInNode(ref.name) : undefined;
  }

  /** Only kubeforge's own kinds: a dry run has no server to discover others from. */
  resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    return new Promise((resolve) => resolve(resourceFor(apiVersion, kind)));
  }

  get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T> {
    const obj = this.current(ref);
    if (!obj) return Promise.reject(this.notFound("get", ref));
    return Promise.resolve(structuredClone(obj) as T);
  }

  list<T extends KubeObject = KubeObject>(
    apiVersion: string,
    kind: string,
    opts: ListOptions = {},
  ): Promise<T[]> {
    resourceFor(apiVersion, kind); // an unknown kind is an error, as with the real client
    const items = [...this.objects.values()].filter(
      (obj) =>
        obj.kind === kind &&
        obj.apiVersion === apiVersion &&
        (!opts.namespace || obj.metadata.namespace === opts.namespace) &&
        matchesSelector(obj.metadata.labels ?? {}, opts.labelSelector),
    );
    return Promise.resolve(items.map((obj) => structuredClone(obj) as T));
  }

  create<T extends KubeObject>(obj: T): Promise<T> {
    const ref = refOfObject(obj);
    if (resourceFor(ref.apiVersion, ref.kind).namespaced && !ref.namespace) {
      return Promise.reject(
        new Error(`${ref.kind} "${ref.name}" needs a namespace: ${ref.kind} is namespaced`),
      );
    }
    const path = objectPath(ref);
    if (this.objects.has(path)) {
      const plural = resourceFor(ref.apiVersion, ref.kind).plural;
      return Promise.reject(
        new ApiError({
          operation: operationOf("create", ref),
          code: 409,
          reason: "AlreadyExists",
          statusMessage: `${plural} "${ref.name}" already exists`,
        }),
      );
    }
    this.print("CREATE", collectionPath(ref.apiVersion, ref.kind, ref.namespace), obj);
    const stored = plain(obj);
    stored.metadata = { ...stored.metadata, ...this.nextIdentity() };
    this.objects.set(path, stored);
    return Promise.resolve(structuredClone(stored));
  }

  update<T extends KubeObject>(obj: T): Promise<T> {
    const ref = refOfObject(obj);
    const path = objectPath(ref);
    const existing = this.objects.get(path);
    if (!existing) return Promise.reject(this.notFound("update", ref));
    const expected = obj.metadata.resourceVersion;
    // "0" parses as no precondition: an unconditional update (kubeadm's kube-dns Service relies
    // on it), as kube-apiserver's storage treats a zero resourceVersion.
    if (expected && expected !== "0" && expected !== existing.metadata.resourceVersion) {
      return Promise.reject(
        new ApiError({
          operation: operationOf("update", ref),
          code: 409,
          reason: "Conflict",
          statusMessage: `Operation cannot be fulfilled on ${resourceFor(ref.apiVersion, ref.kind).plural} "${ref.name}": the object has been modified; please apply your changes to the latest version and try again`,
        }),
      );
    }
    this.print("UPDATE", path, obj);
    const stored = plain(obj);
    stored.metadata = {
      ...stored.metadata,
      uid: existing.metadata.uid,
      resourceVersion: this.nextIdentity().resourceVersion,
    };
    this.objects.set(path, stored);
    return Promise.resolve(structuredClone(stored));
  }

  patch<T extends KubeObject = KubeObject>(
    ref: ObjectRef,
    patch: unknown,
    type: PatchType,
  ): Promise<T> {
    const existing = this.current(ref);
    if (!existing) return Promise.reject(this.notFound("patch", ref));
    const path = objectPath(ref);
    let result: KubeObject;
    if (type === "json") {
      this.print("PATCH", path, patch);
      result = applyPatch(
        structuredClone(existing),
        plain(patch) as Operation[],
        false,
        false,
      ).newDocument;
    } else {
      // The patch as sent (nulls, which delete, included) plus the object's identity: still a
      // valid patch, and readable by kubectl.
      const body = (typeof patch === "object" && patch !== null ? patch : {}) as {
        metadata?: Record<string, unknown> | null;
      };
      this.print("PATCH", path, {
        ...body,
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: { ...(body.metadata ?? {}), ...identityMeta(ref) },
      });
      result = mergePatch(existing, patch) as KubeObject;
    }
    result.metadata = { ...result.metadata, resourceVersion: this.nextIdentity().resourceVersion };
    this.objects.set(path, result);
    return Promise.resolve(structuredClone(result) as T);
  }

  delete(ref: ObjectRef): Promise<void> {
    const path = objectPath(ref);
    this.print("DELETE", path, {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: identityMeta(ref),
    });
    this.objects.delete(path);
    return Promise.resolve();
  }

  createSubresource<T = unknown>(ref: ObjectRef, subresource: string, body: unknown): Promise<T> {
    this.print("CREATE", `${objectPath(ref)}/${subresource}`, body);
    return Promise.resolve(structuredClone(body) as T);
  }

  getRaw(path: string): Promise<RawResponse> {
    this.log(`[dryrun] Would GET ${path}`);
    return Promise.resolve({ status: 200, body: "ok" });
  }

  /**
   * Makes an object that exists on a real server known (a read-through dry run, as kubeadm
   * upgrade's dry-run client): later updates and patches of it are printed, not refused.
   */
  remember(obj: KubeObject): void {
    const path = objectPath(refOfObject(obj));
    if (!this.objects.has(path)) this.objects.set(path, plain(obj));
  }

  /** What a later read would see: for tests and messages. */
  stored(ref: ObjectRef): KubeObject | undefined {
    const obj = this.objects.get(objectPath(ref));
    return obj && structuredClone(obj);
  }
}

function identityMeta(ref: ObjectRef): { name: string; namespace?: string } {
  return ref.namespace ? { name: ref.name, namespace: ref.namespace } : { name: ref.name };
}

/** ClusterAccess of a dry run: one shared recorder for every kubeconfig; probes always succeed. */
export class DryRunClusterAccess implements ClusterAccess {
  readonly client: DryRunKubeClient;

  constructor(
    write: Writer,
    private readonly log: Logger = () => {},
  ) {
    this.client = new DryRunKubeClient(write, log);
  }

  clientFor(_kubeconfigPath: string, _opts?: { server?: string }): Promise<KubeClient> {
    return Promise.resolve(this.client);
  }

  probe(url: string, _opts: ProbeOptions): Promise<RawResponse> {
    this.log(`[dryrun] Would GET ${url}`);
    return Promise.resolve({ status: 200, body: "ok" });
  }
}
