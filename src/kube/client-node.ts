import {
  ApiException,
  createConfiguration,
  HttpMethod,
  KubeConfig,
  KubernetesObjectApi,
  ListWatch,
  Watch,
} from "@kubernetes/client-node";
import type {
  Cluster,
  Configuration,
  DispatcherOptions,
  KubernetesObject,
  RequestContext,
  User,
} from "@kubernetes/client-node";
import type { AgentOptions } from "node:https";
import type { ConnectionOptions } from "node:tls";
import {
  ApiError,
  apiErrorFromNetwork,
  apiErrorFromResponse,
  operationOf,
  UnservedKindError,
  type ApiOperation,
} from "./errors.js";
import { withGetRetry } from "./get-retry.js";
import { collectionPathOf, knownResource, objectPathOf, type ResourceInfo } from "./resources.js";
import type {
  CollectionWatch,
  KubeClient,
  KubeObject,
  ListOptions,
  ObjectRef,
  PatchType,
  RawResponse,
  ReadOptions,
  WatchEventType,
  WatchOptions,
} from "./types.js";

// KubeClient over @kubernetes/client-node: its KubeConfig turns the kubeconfig's TLS settings and
// credentials into each request (client certificate, bearer token, CA, insecure-skip-tls-verify)
// and its HTTP library sends it. Paths come from our resource table (no discovery round trips);
// kinds outside it (a user's manifest) from the server's discovery through client-node's
// KubernetesObjectApi, which caches each group version's resource list. Bodies go out and come back as plain JSON: client-node's typed (de)serializers would turn
// timestamps into Date objects and drop fields its models do not know.

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Exposes KubernetesObjectApi's discovery lookup (kind → resource name and scope). */
class ResourceDiscovery extends KubernetesObjectApi {
  find(apiVersion: string, kind: string) {
    return this.resource(apiVersion, kind);
  }
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  strategic: "application/strategic-merge-patch+json",
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
};

/** client-node builds request contexts from the Configuration its KubeConfig makes. */
class ConfigurationHolder {
  constructor(readonly configuration: Configuration) {}
}

type Dispatcher = ReturnType<RequestContext["getDispatcher"]>;

interface SendOptions extends ReadOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | undefined>;
}

/**
 * A KubeConfig whose connections verify the server certificate against the original server
 * name while connecting to a routed address (client-node builds its undici dispatcher here).
 */
class RoutedKubeConfig extends KubeConfig {
  constructor(private readonly identity: ConnectionOptions) {
    super();
  }

  override createDispatcherOptions(
    cluster: Cluster | null,
    agentOptions: AgentOptions,
  ): DispatcherOptions {
    const options = super.createDispatcherOptions(cluster, agentOptions);
    if (Object.keys(this.identity).length === 0) return options;
    if (options.type === "agent") {
      return { ...options, connect: { ...options.connect, ...this.identity } };
    }
    if (options.type === "none") {
      // No TLS setting of its own (the system's CAs): still an agent, to carry the identity.
      return {
        type: "agent",
        connect: { ...this.identity, keepAlive: true, keepAliveInitialDelay: 30_000 },
      };
    }
    return options;
  }
}

class KubeConfigClient implements KubeClient {
  private readonly configuration: Configuration;
  private dispatcher: Dispatcher;
  private discovery: ResourceDiscovery | undefined;

  constructor(
    private readonly kc: KubeConfig,
    readonly description: string,
    private readonly server: string,
    private readonly requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
  ) {
    this.configuration = kc.makeApiClient(ConfigurationHolder).configuration;
  }

  async resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const known = knownResource(apiVersion, kind);
    if (known) return known;
    // Discovery requests get the same bound and connection pool as every other request.
    this.discovery ??= new ResourceDiscovery(
      createConfiguration({
        baseServer: this.configuration.baseServer,
        authMethods: { default: this.kc },
        promiseMiddleware: [
          {
            pre: (ctx) => {
              if (this.dispatcher !== undefined) ctx.setDispatcher(this.dispatcher);
              ctx.setSignal(AbortSignal.timeout(this.requestTimeoutMs));
              return Promise.resolve(ctx);
            },
            post: (res) => Promise.resolve(res),
          },
        ],
      }),
    );
    const op: ApiOperation = { verb: "getRaw", path: discoveryPath(apiVersion) };
    let found: Awaited<ReturnType<ResourceDiscovery["find"]>>;
    try {
      found = await this.discovery.find(apiVersion, kind);
    } catch (e) {
      if (!(e instanceof ApiException))
        throw apiErrorFromNetwork(op, this.server, e, this.requestTimeoutMs);
      // A group version the server does not serve at all: 404.
      if (e.code !== 404) {
        const body = typeof e.body === "string" ? e.body : JSON.stringify(e.body ?? "");
        throw apiErrorFromResponse(op, e.code, body, this.server);
      }
      found = undefined;
    }
    // Subresources ("pods/status") share their parent's kind in discovery.
    if (!found || found.name.includes("/"))
      throw new UnservedKindError(apiVersion, kind, this.server);
    const slash = apiVersion.indexOf("/");
    return {
      kind,
      group: slash < 0 ? "" : apiVersion.slice(0, slash),
      version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1),
      plural: found.name,
      namespaced: found.namespaced,
    };
  }

  /**
   * One request; rejects with an ApiError only when no response arrived. A GET whose connection
   * was reset is tried again as client-go does (get-retry.ts), unless the caller asks for one
   * attempt.
   */
  private async send(
    op: ApiOperation,
    method: HttpMethod,
    path: string,
    opts: SendOptions = {},
  ): Promise<RawResponse> {
    try {
      if (method !== HttpMethod.GET || opts.singleAttempt) {
        return await this.sendOnce(method, path, opts, this.requestTimeoutMs);
      }
      return await withGetRetry(this.requestTimeoutMs, (left) =>
        this.sendOnce(method, path, opts, left),
      );
    } catch (e) {
      throw apiErrorFromNetwork(op, this.server, e, this.requestTimeoutMs);
    }
  }

  private async sendOnce(
    method: HttpMethod,
    path: string,
    opts: SendOptions,
    timeoutMs: number,
  ): Promise<RawResponse> {
    const cfg = this.configuration;
    let ctx = cfg.baseServer.makeRequestContext(path, method);
    ctx.setHeaderParam("Accept", "application/json, */*");
    for (const [key, value] of Object.entries(opts.query ?? {})) {
      if (value !== undefined && value !== "") ctx.setQueryParam(key, value);
    }
    if (opts.body !== undefined) {
      ctx.setHeaderParam("Content-Type", opts.contentType ?? "application/json");
      ctx.setBody(JSON.stringify(opts.body));
    }
    await this.kc.applySecurityAuthentication(ctx);
    // client-node makes a new connection pool per request; keep the first one so requests
    // reuse connections (its idle sockets do not hold the process open).
    if (this.dispatcher === undefined) this.dispatcher = ctx.getDispatcher();
    else ctx.setDispatcher(this.dispatcher);
    for (const middleware of cfg.middleware) ctx = await middleware.pre(ctx).toPromise();
    ctx.setSignal(AbortSignal.timeout(timeoutMs));
    let response = await cfg.httpApi.send(ctx).toPromise();
    for (const middleware of cfg.middleware) {
      response = await middleware.post(response).toPromise();
    }
    return { status: response.httpStatusCode, body: await response.body.text() };
  }

  /** A request whose success carries a JSON object. */
  private async call<T>(
    op: ApiOperation,
    method: HttpMethod,
    path: string,
    opts?: SendOptions,
  ): Promise<T> {
    const res = await this.send(op, method, path, opts);
    if (res.status < 200 || res.status > 299) {
      throw apiErrorFromResponse(op, res.status, res.body, this.server);
    }
    try {
      return JSON.parse(res.body) as T;
    } catch (e) {
      throw new ApiError({
        operation: op,
        code: res.status,
        reason: "Unknown",
        statusMessage: "the response body is not JSON",
        server: this.server,
        cause: e,
      });
    }
  }

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef, opts: ReadOptions = {}): Promise<T> {
    const path = objectPathOf(await this.resource(ref.apiVersion, ref.kind), ref);
    return await this.call<T>(operationOf("get", ref), HttpMethod.GET, path, opts);
  }

  async list<T extends KubeObject = KubeObject>(
    apiVersion: string,
    kind: string,
    opts: ListOptions = {},
  ): Promise<T[]> {
    const op: ApiOperation = {
      verb: "list",
      kind,
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
    };
    const info = await this.resource(apiVersion, kind);
    const list = await this.call<{ items?: T[] | null }>(
      op,
      HttpMethod.GET,
      collectionPathOf(info, opts.namespace),
      { query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector } },
    );
    // List items come without apiVersion and kind (the List carries them).
    return (list.items ?? []).map((item) => ({ ...item, apiVersion, kind }));
  }

  async create<T extends KubeObject>(obj: T): Promise<T> {
    const { apiVersion, kind } = obj;
    const { name, namespace } = obj.metadata;
    const info = await this.resource(apiVersion, kind);
    if (info.namespaced && !namespace) {
      throw new Error(`${kind} "${name}" needs a namespace: ${kind} is namespaced`);
    }
    const op = operationOf("create", {
      apiVersion,
      kind,
      name,
      ...(namespace ? { namespace } : {}),
    });
    return await this.call<T>(op, HttpMethod.POST, collectionPathOf(info, namespace), {
      body: obj,
    });
  }

  async update<T extends KubeObject>(obj: T): Promise<T> {
    const ref = refOfObject(obj);
    const path = objectPathOf(await this.resource(ref.apiVersion, ref.kind), ref);
    return await this.call<T>(operationOf("update", ref), HttpMethod.PUT, path, {
      body: obj,
    });
  }

  async patch<T extends KubeObject = KubeObject>(
    ref: ObjectRef,
    patch: unknown,
    type: PatchType,
  ): Promise<T> {
    const path = objectPathOf(await this.resource(ref.apiVersion, ref.kind), ref);
    return await this.call<T>(operationOf("patch", ref), HttpMethod.PATCH, path, {
      body: patch,
      contentType: PATCH_CONTENT_TYPES[type],
    });
  }

  async delete(ref: ObjectRef): Promise<void> {
    const path = objectPathOf(await this.resource(ref.apiVersion, ref.kind), ref);
    await this.call<unknown>(operationOf("delete", ref), HttpMethod.DELETE, path);
  }

  async createSubresource<T = unknown>(
    ref: ObjectRef,
    subresource: string,
    body: unknown,
  ): Promise<T> {
    const path = `${objectPathOf(await this.resource(ref.apiVersion, ref.kind), ref)}/${subresource}`;
    return await this.call<T>(operationOf("create", ref), HttpMethod.POST, path, { body });
  }

  async watch(
    apiVersion: string,
    kind: string,
    on: (type: WatchEventType, obj: KubeObject) => void,
    opts: WatchOptions = {},
  ): Promise<CollectionWatch> {
    const path = collectionPathOf(await this.resource(apiVersion, kind), undefined);
    // client-node types its objects its own way; the JSON is the same.
    const typed = (o: unknown): KubeObject => ({ ...(o as KubeObject), apiVersion, kind });
    const list = async () => {
      const answer = await this.call<{
        metadata?: { resourceVersion?: string };
        items?: KubeObject[];
      }>({ verb: "list", kind }, HttpMethod.GET, path);
      return {
        metadata: answer.metadata ?? {},
        items: (answer.items ?? []).map(typed) as unknown as KubernetesObject[],
      };
    };
    const informer = new ListWatch<KubernetesObject>(path, new Watch(this.kc), list, false);
    for (const type of ["add", "update", "delete"] as const) {
      informer.on(type, (o) => on(type, typed(o)));
    }
    let stopped = false;
    // The informer stops at an error (kube-apiserver restarting, a refused connection): the
    // next attempt lists afresh, so nothing between is missed for good.
    informer.on("error", (e) => {
      if (stopped) return;
      opts.onError?.(e);
      setTimeout(() => {
        if (!stopped) informer.start().catch(() => undefined);
      }, opts.retryMs ?? 1000).unref();
    });
    await informer.start();
    return {
      stop: () => {
        stopped = true;
        void informer.stop();
      },
    };
  }

  async getRaw(path: string, opts: ReadOptions = {}): Promise<RawResponse> {
    const absolute = path.startsWith("/") ? path : `/${path}`;
    return await this.send({ verb: "getRaw", path: absolute }, HttpMethod.GET, absolute, opts);
  }
}

function discoveryPath(apiVersion: string): string {
  return apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

function refOfObject(obj: KubeObject): ObjectRef {
  const { apiVersion, kind } = obj;
  const { name, namespace } = obj.metadata;
  return namespace ? { apiVersion, kind, name, namespace } : { apiVersion, kind, name };
}

/** The client of `cluster` and `user` (kubeconfig entries with their files read in). */
export function kubeConfigClient(
  cluster: Cluster,
  user: User,
  o: {
    description: string;
    /** The server as the kubeconfig names it (messages), when `cluster.server` is routed. */
    server: string;
    /** TLS settings that check the server's certificate against its own name (routed). */
    identity?: ConnectionOptions;
    requestTimeoutMs?: number;
  },
): KubeClient {
  const kc = o.identity ? new RoutedKubeConfig(o.identity) : new KubeConfig();
  kc.loadFromClusterAndUser(cluster, user);
  return new KubeConfigClient(kc, o.description, o.server, o.requestTimeoutMs);
}
