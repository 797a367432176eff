// SIMULATION (test double). The HTTPS front of the fake kube-apiserver: the filter chain
// (authentication → authorization → admission) and the REST handlers over the ObjectStore.
// k8s: staging/src/k8s.io/apiserver/pkg/server/config.go DefaultBuildHandlerChain (order of the
// filters), staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go (401 body
// "Unauthorized"), .../filters/authorization.go (403), staging/src/k8s.io/apiserver/pkg/
// endpoints/handlers/{get,create,update,patch,delete,watch}.go (status codes: 201 on create,
// 200 on update/patch, 200 or 202 on delete; list items without kind/apiVersion; watch events as
// {"type","object"} JSON lines), staging/src/k8s.io/apiserver/pkg/server/healthz/healthz.go
// (/livez, /readyz, /healthz bodies), pkg/controlplane/controller/kubernetesservice/controller.go
// (the default/kubernetes Service), staging/src/k8s.io/component-base/version (GET /version).
import { logStalls } from "./stall-log.js";
import { checkEviction } from "./controllers/disruption.js";
import { proxyToService } from "./service-proxy.js";
import type { PortRange, ServiceRanges } from "./service-allocation.js";
import { str } from "./json.js";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import ipaddr from "ipaddr.js";
import { load } from "js-yaml";
import { admit } from "./admission.js";
import { authenticate, type AuthnOptions } from "./authn.js";
import { buildAuthorizer, forbiddenFor, type Attributes, type Authorizer } from "./authz.js";
import { ensureBootstrapPolicy } from "./bootstrap-policy.js";
import {
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  listKind,
  toTable,
} from "./discovery.js";
import { startCrdControllers } from "./custom-resources.js";
import { defaultReason, FaultInjector } from "./faults.js";
import { applyObjectPatch, PATCH_CONTENT_TYPES } from "./patch.js";
import { requestInfo, type RequestInfo } from "./requestinfo.js";
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from "./selectors.js";
import { apiVersionOf, resourceFor, type ResourceInfo } from "./resources.js";
import {
  badRequest,
  failure,
  internalError,
  methodNotSupported,
  resourceNotFoundAtPath,
  StatusError,
  success,
  unauthorized,
  unsupportedMediaType,
  type Status,
} from "./status.js";
import type { EtcdOptions } from "./etcd-backend.js";
import {
  createUnlessExists,
  ObjectStore,
  rfc3339,
  type DeleteOptions,
  type FieldValidation,
  type Json,
  type StoredObject,
  type UserInfo,
  type WriteOptions,
} from "./store.js";

export interface FakeApiServerOptions {
  /** Default "127.0.0.1". */
  bindAddress?: string;
  /** 0 picks a free port. */
  securePort: number;
  advertiseAddress?: string;
  /** Local absolute paths of the serving certificate and key (the generated apiserver.crt/key). */
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  /** x509 client authentication: user = CN, groups = O. */
  clientCAFile: string;
  enableBootstrapTokenAuth: boolean;
  /** Default true, as kube-apiserver. */
  anonymousAuth?: boolean;
  /** Share one store between servers; default a new store (in etcd with `etcd`, else in memory). */
  store?: ObjectStore;
  /**
   * --etcd-servers and its TLS files: the objects live in that etcd cluster, shared with every
   * API server on it (ignored when `store` is given). Start waits until etcd answers.
   */
  etcd?: EtcdOptions;
  log?: (line: string) => void;
  /** --authorization-mode; default ["Node", "RBAC"] as kubeadm sets it. */
  authorizationModes?: string[];
  /** Admission plugins beyond the always-on ones; default ["NodeRestriction"] as kubeadm enables. */
  admissionPlugins?: string[];
  /**
   * --service-cluster-ip-range: creates the default/kubernetes Service on its first address, and
   * Services get their clusterIP from it (service-allocation.ts).
   */
  serviceClusterIPRange?: string;
  /** --service-node-port-range (default 30000-32767): where NodePort Services get their ports. */
  serviceNodePortRange?: PortRange;
  /** gitVersion served on /version; default "v1.35.0". */
  version?: string;
  /** fieldValidation when a request does not say; default "Strict" (kube-apiserver: "Warn"). */
  defaultFieldValidation?: FieldValidation;
}

export interface FakeApiServer {
  readonly url: string;
  readonly port: number;
  readonly store: ObjectStore;
  faults: FaultInjector;
  /** Holds the CRD naming and establishing controllers; the returned function lets them go on. */
  holdCrdControllers(): () => void;
  stop(): Promise<void>;
}

// k8s: staging/src/k8s.io/apiserver/pkg/server/healthz (checks kube-apiserver registers).
const LIVEZ_CHECKS = [
  "ping",
  "log",
  "etcd",
  "poststarthook/start-apiserver-admission-initializer",
  "poststarthook/generic-apiserver-start-informers",
  "poststarthook/start-system-namespaces-controller",
  "poststarthook/bootstrap-controller",
  "poststarthook/rbac/bootstrap-roles",
  "poststarthook/start-kube-apiserver-admission-initializer",
];
const READYZ_CHECKS = [
  ...LIVEZ_CHECKS.slice(0, 3),
  "etcd-readiness",
  "informer-sync",
  ...LIVEZ_CHECKS.slice(3),
  "shutdown",
];

const ALWAYS_ON_ADMISSION = [
  "CertificateApproval",
  "CertificateSigning",
  "CertificateSubjectRestriction",
];

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function sendJSON(
  res: ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    "Content-Type": "application/json",
    "Cache-Control": "no-cache, private",
    "Content-Length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendStatus(res: ServerResponse, s: Status): void {
  sendJSON(res, s.code ?? 500, s);
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, {
    "Content-Type": "text/plain; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache, private",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

function decodeBody(raw: Buffer, contentType: string): unknown {
  const media = contentType.split(";")[0]!.trim().toLowerCase();
  if (
    media !== "" &&
    media !== "application/json" &&
    media !== "application/yaml" &&
    !media.endsWith("+json")
  ) {
    // k8s: endpoints/handlers/rest.go — the serializers kube-apiserver has; the simulation has no
    // protobuf or CBOR serializer, so it lists only the ones it has.
    throw unsupportedMediaType(
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
    );
  }
  const text = raw.toString("utf8");
  if (text.trim() === "") throw badRequest("the body of the request is empty");
  try {
    if (contentType.includes("yaml")) return load(text);
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw badRequest(`the body of the request could not be decoded: ${(e as Error).message}`);
  }
}

function hostForURL(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

function withoutTypeMeta(o: StoredObject): Json {
  const { kind: _k, apiVersion: _a, ...rest } = o;
  return rest;
}

/** First address of a CIDR (the kubernetes Service IP). k8s: pkg/controlplane/services.go */
function firstServiceIP(cidr: string): string {
  const [addr, bits] = ipaddr.parseCIDR(cidr.split(",")[0]!.trim());
  const bytes = addr.toByteArray();
  const prefix = Number(bits);
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    bytes[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! + 1;
  return ipaddr.fromByteArray(bytes).toString();
}

export async function startFakeApiServer(opts: FakeApiServerOptions): Promise<FakeApiServer> {
  const log = opts.log ?? (() => {});
  const ownsStore = !opts.store;
  const store =
    opts.store ??
    (opts.etcd ? await ObjectStore.open({ etcd: opts.etcd, log }) : new ObjectStore());
  try {
    return await serve(store, opts, log, ownsStore);
  } catch (e) {
    if (ownsStore) store.close();
    throw e;
  }
}

async function serve(
  store: ObjectStore,
  opts: FakeApiServerOptions,
  log: (line: string) => void,
  ownsStore: boolean,
): Promise<FakeApiServer> {
  const faults = new FaultInjector();
  const bindAddress = opts.bindAddress ?? "127.0.0.1";
  const authorize: Authorizer = buildAuthorizer(store, opts.authorizationModes ?? ["Node", "RBAC"]);
  const admissionPlugins = new Set([
    ...ALWAYS_ON_ADMISSION,
    ...(opts.admissionPlugins ?? ["NodeRestriction"]),
  ]);
  const authn: AuthnOptions = {
    store,
    enableBootstrapTokenAuth: opts.enableBootstrapTokenAuth,
    anonymousAuth: opts.anonymousAuth ?? true,
  };
  const gitVersion = opts.version ?? "v1.35.0";
  const defaultFieldValidation = opts.defaultFieldValidation ?? "Strict";
  const serviceRanges: ServiceRanges = {
    ...(opts.serviceClusterIPRange ? { clusterIPRange: opts.serviceClusterIPRange } : {}),
    ...(opts.serviceNodePortRange ? { nodePortRange: opts.serviceNodePortRange } : {}),
  };
  let tls: { cert: Buffer; key: Buffer; ca: Buffer };
  try {
    tls = {
      cert: readFileSync(opts.tlsCertFile),
      key: readFileSync(opts.tlsPrivateKeyFile),
      ca: readFileSync(opts.clientCAFile),
    };
  } catch (e) {
    throw new Error(
      `simulated kube-apiserver: cannot read its TLS files: ${(e as Error).message}`,
      { cause: e },
    );
  }

  ensureBootstrapPolicy(store);
  const stopStallLog = logStalls(log);

  const sockets = new Set<Socket>();
  const watches = new Set<() => void>();

  const server: Server = createServer(
    { cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) {
          const s =
            e instanceof StatusError ? e.status : internalError((e as Error).message).status;
          sendStatus(res, s);
        } else res.end();
      });
    },
  );
  // Every connection from its accept on, its TLS handshake still under way too: a stopped
  // kube-apiserver process leaves none open. One tracked only once secure could outlive stop()
  // (its handshake ending after the others were destroyed) and keep the old server answering
  // on it, a client's keep-alive never letting it idle, while close() waited for it and the
  // kubelet's restart of the container waited for close().
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("tlsClientError", () => {});

  let port = 0;
  let advertised = "";

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const url = new URL(req.url ?? "/", "https://fake-apiserver");
    const path = url.pathname;
    const fault = faults.take(method, path);
    if (fault) {
      if (fault.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (fault.respond === "drop") {
        log(`${method} ${path} → connection dropped (injected)`);
        req.socket.destroy();
        return;
      }
      if (fault.respond || !fault.delayMs) {
        const r = fault.respond ?? { code: 500 };
        log(`${method} ${path} → ${r.code} (injected)`);
        sendStatus(
          res,
          failure(r.code, r.reason ?? defaultReason(r.code), r.message ?? "injected fault").status,
        );
        return;
      }
    }
    const raw = method === "GET" || method === "HEAD" ? Buffer.alloc(0) : await readBody(req);

    const who = authenticate(req, authn);
    if (!who.ok) {
      log(`${method} ${path} → 401 (${who.why})`);
      sendStatus(res, unauthorized().status);
      return;
    }
    const user = who.user;
    const info = requestInfo(method, path, url.searchParams);
    const attrs: Attributes = {
      user,
      verb: info.verb,
      isResourceRequest: info.isResourceRequest,
      path,
      apiGroup: info.apiGroup,
      apiVersion: info.apiVersion,
      resource: info.resource,
      subresource: info.subresource,
      namespace: info.namespace,
      name: info.name,
    };
    const decision = authorize(attrs);
    if (decision.decision !== "Allow") {
      log(`${method} ${path} → 403 for ${user.username}`);
      sendStatus(res, forbiddenFor(attrs, decision.reason).status);
      return;
    }
    if (info.isResourceRequest && info.resource === "services" && info.subresource === "proxy") {
      // The Service proxy answers asynchronously (service-proxy.ts); GET only.
      const rest = path.split("/").slice(8).join("/");
      const done = (code: number) =>
        log(`${method} ${path}${url.search} → ${code} for ${user.username}`);
      (method === "GET"
        ? proxyToService(store, res, info.namespace, info.name, rest ? `/${rest}` : "/", url.search)
        : Promise.reject(methodNotSupported("", "services/proxy", info.verb))
      ).then(
        () => done(res.statusCode),
        (e: unknown) => {
          const s =
            e instanceof StatusError ? e.status : failure(500, "InternalError", String(e)).status;
          sendStatus(res, s);
          done(s.code ?? 500);
        },
      );
      return;
    }
    try {
      if (!info.isResourceRequest) nonResource(req, res, method, path, url);
      else resourceRequest(req, res, info, attrs, user, url.searchParams, raw);
      log(`${method} ${path}${url.search} → ${res.statusCode} for ${user.username}`);
    } catch (e) {
      if (e instanceof StatusError) {
        log(`${method} ${path} → ${e.code} ${e.reason ?? ""} for ${user.username}`);
        if (!res.headersSent) sendStatus(res, e.status);
        else res.end();
        return;
      }
      throw e;
    }
  }

  function health(
    res: ServerResponse,
    name: "livez" | "readyz" | "healthz",
    url: URL,
    sub: string,
  ): void {
    const checks = name === "readyz" ? READYZ_CHECKS : LIVEZ_CHECKS;
    const failing = new Set<string>();
    if (!faults.livez || !store.healthy) failing.add("etcd");
    if (name === "readyz" && (!faults.readyz || !store.healthy)) failing.add("etcd-readiness");
    if (sub !== "") {
      if (!checks.includes(sub)) return sendText(res, 404, "404 page not found\n");
      return failing.has(sub)
        ? sendText(res, 500, `internal server error: ${sub} check failed\n`)
        : sendText(res, 200, "ok");
    }
    const exclude = new Set(url.searchParams.getAll("exclude"));
    let out = "";
    let failed = false;
    for (const c of checks) {
      if (exclude.has(c)) {
        out += `[+]${c} excluded: ok\n`;
        continue;
      }
      if (failing.has(c)) {
        failed = true;
        out += `[-]${c} failed: reason withheld\n`;
      } else out += `[+]${c} ok\n`;
    }
    if (failed) return sendText(res, 500, `${out}${name} check failed\n`);
    if (!url.searchParams.has("verbose")) return sendText(res, 200, "ok");
    sendText(res, 200, `${out}${name} check passed\n`);
  }

  function nonResource(
    _req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
    url: URL,
  ): void {
    if (method !== "GET" && method !== "HEAD")
      throw failure(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
      );
    const m = /^\/(livez|readyz|healthz)(?:\/(.+))?$/.exec(path);
    if (m) return health(res, m[1] as "livez" | "readyz" | "healthz", url, m[2] ?? "");
    if (path === "/version" || path === "/version/") {
      const mm = /^v(\d+)\.(\d+)/.exec(gitVersion);
      return sendJSON(res, 200, {
        major: mm?.[1] ?? "1",
        minor: mm?.[2] ?? "35",
        emulationMajor: mm?.[1] ?? "1",
        emulationMinor: mm?.[2] ?? "35",
        minCompatibilityMajor: mm?.[1] ?? "1",
        minCompatibilityMinor: String(Math.max(0, Number(mm?.[2] ?? 35) - 1)),
        gitVersion,
        gitCommit: "0000000000000000000000000000000000000000",
        gitTreeState: "clean",
        buildDate: "2025-01-01T00:00:00Z",
        goVersion: "go1.24.0",
        compiler: "gc",
        platform: `linux/${process.arch === "x64" ? "amd64" : process.arch}`,
      });
    }
    const p = path.replace(/\/$/, "");
    if (p === "/api") return sendJSON(res, 200, apiVersions(`${hostForURL(advertised)}:${port}`));
    if (p === "/apis") return sendJSON(res, 200, apiGroupList());
    const core = /^\/api\/([^/]+)$/.exec(p);
    if (core) {
      const list = apiResourceList("", core[1]!);
      if (list) return sendJSON(res, 200, list);
    }
    const grp = /^\/apis\/([^/]+)$/.exec(p);
    if (grp) {
      const g = apiGroup(grp[1]!);
      if (g) return sendJSON(res, 200, g);
    }
    const gv = /^\/apis\/([^/]+)\/([^/]+)$/.exec(p);
    if (gv) {
      const list = apiResourceList(gv[1]!, gv[2]!);
      if (list) return sendJSON(res, 200, list);
    }
    sendText(res, 404, "404 page not found\n");
  }

  function writeOptions(
    q: URLSearchParams,
    user: UserInfo,
    subresource: string,
    warnings: string[],
  ): WriteOptions {
    const fv = q.get("fieldValidation");
    const level: FieldValidation =
      fv === "Strict" || fv === "Warn" || fv === "Ignore" ? fv : defaultFieldValidation;
    if (fv !== null && fv !== "Strict" && fv !== "Warn" && fv !== "Ignore" && fv !== "") {
      throw badRequest(`fieldValidation "${fv}" is invalid: must be "Ignore", "Warn", or "Strict"`);
    }
    const o: WriteOptions = { user, fieldValidation: level, warnings, serviceRanges };
    if (subresource) o.subresource = subresource;
    if (q.get("dryRun") === "All") o.dryRun = true;
    return o;
  }

  function warningHeaders(warnings: string[]): Record<string, string> {
    if (warnings.length === 0) return {};
    // k8s: staging/src/k8s.io/apiserver/pkg/warning — `299 - "<text>"` per warning.
    return { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(", ") };
  }

  function wantsTable(req: IncomingMessage): boolean {
    return /as=Table/.test(req.headers.accept ?? "");
  }

  function resourceRequest(
    req: IncomingMessage,
    res: ServerResponse,
    ri: RequestInfo,
    attrs: Attributes,
    user: UserInfo,
    q: URLSearchParams,
    raw: Buffer,
  ): void {
    const rinfo = resourceFor(ri.apiGroup, ri.apiVersion, ri.resource);
    if (!rinfo) throw resourceNotFoundAtPath();
    if (ri.subresource && !(ri.subresource in rinfo.subresources)) throw resourceNotFoundAtPath();
    // Cluster-scoped kinds have no namespaced path; namespaces themselves are the exception.
    const ns = rinfo.namespaced ? ri.namespace || undefined : undefined;
    if (!rinfo.namespaced && ri.namespace && rinfo.resource !== "namespaces")
      throw resourceNotFoundAtPath();
    const verbs = ri.subresource ? rinfo.subresources[ri.subresource]! : rinfo.verbs;
    const restVerb = ri.verb === "patch" ? "patch" : ri.verb;
    if (!verbs.includes(restVerb)) {
      throw methodNotSupported(rinfo.group, rinfo.resource, restVerb);
    }
    const warnings: string[] = [];
    if (rinfo.virtual) return review(res, rinfo, user, raw, req);

    // A request with no resourceVersion reads what etcd has now, not what this server's cache
    // has seen of other servers' writes (in memory: nothing to do).
    const fresh = !q.get("resourceVersion");
    if (["get", "update", "patch", "delete"].includes(ri.verb) || ri.subresource) {
      if (ri.verb !== "get" || fresh) store.syncObject(rinfo, ns, ri.name);
    } else if (ri.verb === "list" || ri.verb === "deletecollection") {
      if (fresh) store.syncResource(rinfo, ns);
    }

    switch (ri.verb) {
      case "get": {
        const obj = store.getIn(rinfo, ns, ri.name);
        if (wantsTable(req))
          return sendJSON(
            res,
            200,
            toTable(
              rinfo,
              [obj],
              obj.metadata.resourceVersion ?? "",
              store.now(),
              q.get("includeObject") ?? "Metadata",
            ),
          );
        return sendJSON(res, 200, obj);
      }
      case "list": {
        const items = store.listIn(rinfo, {
          namespace: ns,
          labelSelector: q.get("labelSelector") ?? undefined,
          fieldSelector: q.get("fieldSelector") ?? undefined,
        });
        const rv = store.resourceVersion;
        if (wantsTable(req))
          return sendJSON(
            res,
            200,
            toTable(rinfo, items, rv, store.now(), q.get("includeObject") ?? "Metadata"),
          );
        return sendJSON(res, 200, {
          kind: listKind(rinfo),
          apiVersion: apiVersionOf(rinfo),
          metadata: { resourceVersion: rv },
          items: items.map(withoutTypeMeta),
        });
      }
      case "watch":
        return watch(req, res, rinfo, ns, q, ri.name);
      case "create": {
        const body = decodeBody(raw, req.headers["content-type"] ?? "application/json") as Json;
        if (ri.subresource)
          return createSubresource(res, rinfo, ns, ri.name, ri.subresource, body, user);
        const o = writeOptions(q, user, "", warnings);
        const preview = structuredClone(body);
        if (rinfo.namespaced && ns && typeof preview.metadata === "object" && preview.metadata) {
          (preview.metadata as Json).namespace ??= ns;
        }
        admit({ attrs, object: preview }, { store, authorize, plugins: admissionPlugins });
        const created = store.createIn(rinfo, ns, body, o);
        return sendJSON(res, 201, created, warningHeaders(warnings));
      }
      case "update": {
        const body = decodeBody(raw, req.headers["content-type"] ?? "application/json") as Json;
        const old = tryGet(rinfo, ns, ri.name);
        admit({ attrs, object: body, old }, { store, authorize, plugins: admissionPlugins });
        const o = writeOptions(q, user, ri.subresource, warnings);
        const updated = store.updateIn(rinfo, ns, ri.name, body, o);
        return sendJSON(res, old ? 200 : 201, updated, warningHeaders(warnings));
      }
      case "patch": {
        const ct = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
        const type = PATCH_CONTENT_TYPES[ct];
        if (!type) {
          throw unsupportedMediaType(
            `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
          );
        }
        const patch = decodeBody(raw, "application/json");
        const current = store.getIn(rinfo, ns, ri.name);
        const patched = applyObjectPatch(current, patch, type, rinfo.model);
        admit(
          { attrs, object: patched, old: current },
          { store, authorize, plugins: admissionPlugins },
        );
        const o = writeOptions(q, user, ri.subresource, warnings);
        const updated = store.updateIn(rinfo, ns, ri.name, patched, o);
        return sendJSON(res, 200, updated, warningHeaders(warnings));
      }
      case "delete": {
        const old = store.getIn(rinfo, ns, ri.name);
        admit({ attrs, old }, { store, authorize, plugins: admissionPlugins });
        const d = deleteOptions(raw, q);
        const out = store.deleteIn(rinfo, ns, ri.name, d);
        if (
          out.metadata.deletionTimestamp &&
          store.get({
            apiVersion: apiVersionOf(rinfo),
            kind: rinfo.kind,
            name: ri.name,
            namespace: ns,
          })
        ) {
          return sendJSON(res, 202, out); // waiting on finalizers
        }
        if (rinfo.returnsDeletedObject) return sendJSON(res, 200, out);
        return sendJSON(
          res,
          200,
          success({
            name: ri.name,
            group: rinfo.group,
            kind: rinfo.resource,
            uid: str(out.metadata.uid),
          }),
        );
      }
      case "deletecollection": {
        const d = deleteOptions(raw, q);
        const items = store.listIn(rinfo, {
          namespace: ns,
          labelSelector: q.get("labelSelector") ?? undefined,
          fieldSelector: q.get("fieldSelector") ?? undefined,
        });
        const deleted = items.map((i) =>
          store.deleteIn(rinfo, i.metadata.namespace, i.metadata.name, d),
        );
        return sendJSON(res, 200, {
          kind: listKind(rinfo),
          apiVersion: apiVersionOf(rinfo),
          metadata: { resourceVersion: store.resourceVersion },
          items: deleted.map(withoutTypeMeta),
        });
      }
      default:
        throw methodNotSupported(rinfo.group, rinfo.resource, ri.verb);
    }
  }

  function tryGet(
    info: ResourceInfo,
    ns: string | undefined,
    name: string,
  ): StoredObject | undefined {
    return store.get({ apiVersion: apiVersionOf(info), kind: info.kind, name, namespace: ns });
  }

  function deleteOptions(raw: Buffer, q: URLSearchParams): DeleteOptions {
    const d: DeleteOptions = {};
    if (raw.length > 0 && raw.toString("utf8").trim() !== "") {
      const body = decodeBody(raw, "application/json") as Json;
      const pre = body.preconditions as { uid?: string; resourceVersion?: string } | undefined;
      if (pre) d.preconditions = pre;
      if (typeof body.propagationPolicy === "string")
        d.propagationPolicy = body.propagationPolicy as DeleteOptions["propagationPolicy"];
      if (Array.isArray(body.dryRun) && body.dryRun.includes("All")) d.dryRun = true;
      if (typeof body.gracePeriodSeconds === "number")
        d.gracePeriodSeconds = body.gracePeriodSeconds;
    }
    const grace = q.get("gracePeriodSeconds");
    if (grace !== null && /^-?\d+$/.test(grace)) d.gracePeriodSeconds = Number(grace);
    d.graceful = true;
    const pp = q.get("propagationPolicy");
    if (pp === "Background" || pp === "Foreground" || pp === "Orphan") d.propagationPolicy = pp;
    if (q.get("dryRun") === "All") d.dryRun = true;
    return d;
  }

  /** pods/binding and pods/eviction. k8s: pkg/registry/core/pod/storage/{storage,eviction}.go */
  function createSubresource(
    res: ServerResponse,
    info: ResourceInfo,
    ns: string | undefined,
    name: string,
    sub: string,
    body: Json,
    _user: UserInfo,
  ): void {
    if (info.kind === "Pod" && sub === "binding") {
      const target = (body.target ?? {}) as Json;
      const pod = store.getIn(info, ns, name);
      if (((pod.spec ?? {}) as Json).nodeName) {
        throw failure(
          409,
          "Conflict",
          `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node "${str(((pod.spec ?? {}) as Json).nodeName)}"`,
          { name, kind: "pods/binding" },
        );
      }
      store.patchIn(info, ns, name, { spec: { nodeName: target.name } }, "merge");
      return sendJSON(res, 201, success({}));
    }
    if (info.kind === "Pod" && sub === "eviction") {
      // The PodDisruptionBudget check first (controllers/disruption.ts checkEviction), then
      // the delete with the Eviction's deleteOptions.
      const pod = store.getIn(info, ns, name);
      const opts = (body.deleteOptions ?? {}) as Json;
      const dryRun = Array.isArray(opts.dryRun) && opts.dryRun.includes("All");
      checkEviction(store, pod, dryRun);
      if (!dryRun) {
        const pre = opts.preconditions as { uid?: string; resourceVersion?: string } | undefined;
        // The caller's preconditions hold for the Pod as it was; then it is marked before it is
        // deleted (eviction.go addConditionAndDeletePod, GA with PodDisruptionConditions in
        // v1.31): watchers see why it went.
        if (pre) store.deleteIn(info, ns, name, { preconditions: pre, dryRun: true });
        const status = (pod.status ?? {}) as Json;
        const conditions = ((status.conditions ?? []) as Json[]).filter(
          (c) => c.type !== "DisruptionTarget",
        );
        store.patchIn(
          info,
          ns,
          name,
          {
            status: {
              conditions: [
                ...conditions,
                {
                  type: "DisruptionTarget",
                  status: "True",
                  reason: "EvictionByEvictionAPI",
                  message: "Eviction API: evicting",
                  lastTransitionTime: rfc3339(store.now()),
                },
              ],
            },
          },
          "merge",
          { subresource: "status" },
        );
        store.deleteIn(info, ns, name, {
          ...(pre?.uid ? { preconditions: { uid: pre.uid } } : {}),
          graceful: true,
          ...(typeof opts.gracePeriodSeconds === "number"
            ? { gracePeriodSeconds: opts.gracePeriodSeconds }
            : {}),
        });
      }
      return sendJSON(res, 201, success({}));
    }
    throw methodNotSupported(info.group, `${info.resource}/${sub}`, "create");
  }

  /** Reviews answered from the authenticator/authorizer. k8s: pkg/registry/authorization/*, pkg/registry/authentication/selfsubjectreview */
  function review(
    res: ServerResponse,
    info: ResourceInfo,
    user: UserInfo,
    raw: Buffer,
    req: IncomingMessage,
  ): void {
    const body = decodeBody(raw, req.headers["content-type"] ?? "application/json") as Json;
    const spec = (body.spec ?? {}) as Json;
    if (info.kind === "SelfSubjectReview") {
      return sendJSON(res, 201, {
        kind: "SelfSubjectReview",
        apiVersion: "authentication.k8s.io/v1",
        metadata: { creationTimestamp: null },
        status: {
          userInfo: {
            username: user.username,
            ...(user.uid ? { uid: user.uid } : {}),
            groups: user.groups,
          },
        },
      });
    }
    const subject: UserInfo =
      info.kind === "SelfSubjectAccessReview"
        ? user
        : {
            username: str(spec.user),
            groups: (spec.groups ?? []) as string[],
            ...(spec.uid ? { uid: str(spec.uid) } : {}),
          };
    const ra = spec.resourceAttributes as Json | undefined;
    const nra = spec.nonResourceAttributes as Json | undefined;
    const a: Attributes = ra
      ? {
          user: subject,
          verb: str(ra.verb),
          isResourceRequest: true,
          path: "",
          apiGroup: str(ra.group),
          apiVersion: str(ra.version),
          resource: str(ra.resource),
          subresource: str(ra.subresource),
          namespace: str(ra.namespace),
          name: str(ra.name),
        }
      : {
          user: subject,
          verb: str(nra?.verb),
          isResourceRequest: false,
          path: str(nra?.path),
          apiGroup: "",
          apiVersion: "",
          resource: "",
          subresource: "",
          namespace: "",
          name: "",
        };
    const d = authorize(a);
    sendJSON(res, 201, {
      kind: info.kind,
      apiVersion: "authorization.k8s.io/v1",
      metadata: { creationTimestamp: null },
      spec,
      status: {
        allowed: d.decision === "Allow",
        ...(d.decision === "Deny" ? { denied: true } : {}),
        ...(d.reason ? { reason: d.reason } : {}),
      },
    });
  }

  /** k8s: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go; an absent or "0"
   * resourceVersion starts with ADDED events for what exists, a newer one replays from history. */
  function watch(
    req: IncomingMessage,
    res: ServerResponse,
    info: ResourceInfo,
    ns: string | undefined,
    q: URLSearchParams,
    name: string,
  ): void {
    const labels = parseLabelSelector(q.get("labelSelector"));
    const fields = parseFieldSelector(q.get("fieldSelector"), info.kind);
    const matches = (o: StoredObject) =>
      (!ns || o.metadata.namespace === ns) &&
      (!name || o.metadata.name === name) &&
      matchesLabels(labels, o.metadata.labels) &&
      matchesFields(fields, o);
    const same = (r: ResourceInfo) => r.group === info.group && r.resource === info.resource;
    const rvParam = q.get("resourceVersion");
    const fromNow = rvParam === null || rvParam === "" || rvParam === "0";
    const history = fromNow ? [] : store.eventsSince(Number(rvParam));
    // Changes up to `after` are in what the client gets first; live events repeat none of them
    // (a list read from etcd may also be ahead of this server's cache).
    const after = fromNow
      ? Number(store.resourceVersion)
      : Math.max(Number(rvParam) || 0, ...history.map((e) => e.resourceVersion));
    const backlog = fromNow
      ? store
          .listIn(info, { namespace: ns })
          .filter(matches)
          .map((o) => ({ type: "ADDED", object: o }))
      : history
          .filter((e) => same(e.resource) && matches(e.object))
          .map((e) => ({ type: e.type, object: e.object }));
    // kubectl get -w asks for tables: each event then carries a one-row Table.
    const table = wantsTable(req);
    const encode = (type: string, o: StoredObject) =>
      `${JSON.stringify({ type, object: table ? toTable(info, [o], o.metadata.resourceVersion ?? "", store.now(), q.get("includeObject") ?? "Metadata") : o })}\n`;
    res.writeHead(200, {
      "Content-Type": "application/json",
      "Cache-Control": "no-cache, private",
      "Transfer-Encoding": "chunked",
    });
    // The status line goes out at once, events or not (watch.go ServeHTTP: WriteHeader, then
    // flusher.Flush()): a client waiting for the answer to a quiet watch is not left hanging.
    res.flushHeaders();
    for (const ev of backlog) res.write(encode(ev.type, ev.object));
    const unsubscribe = store.subscribe((ev) => {
      if (ev.resourceVersion <= after) return;
      if (same(ev.resource) && matches(ev.object)) res.write(encode(ev.type, ev.object));
    });
    const close = () => {
      unsubscribe();
      watches.delete(close);
      clearTimeout(timer);
      res.end();
    };
    watches.add(close);
    const timeout = Number(q.get("timeoutSeconds") ?? "1800");
    const timer = setTimeout(close, Math.max(1, timeout) * 1000);
    req.on("close", close);
  }

  const unspecified = bindAddress === "0.0.0.0" || bindAddress === "::";
  // kube-apiserver --bind-address: "If blank or an unspecified address (0.0.0.0 or ::), all
  // interfaces and IP address families will be used" (k8s.io/apiserver
  // pkg/server/options/serving.go); Go listens on "0.0.0.0" with one dual-stack IPv6 socket
  // where the host has IPv6 (net/ipsock_posix.go favoriteAddrFamily), else on IPv4 only.
  // Node's "::" is that dual-stack socket; "0.0.0.0" would be IPv4 only.
  const listenOn = (address: string) =>
    new Promise<void>((resolve, reject) => {
      const failed = (e: Error) => reject(e);
      server.once("error", failed);
      server.listen(opts.securePort, address, () => {
        server.off("error", failed);
        resolve();
      });
    });
  try {
    await listenOn(unspecified ? "::" : bindAddress).catch((e: NodeJS.ErrnoException) => {
      const noIPv6 = e.code === "EAFNOSUPPORT" || e.code === "EADDRNOTAVAIL";
      if (unspecified && noIPv6) return listenOn("0.0.0.0");
      throw e;
    });
  } catch (e) {
    throw new Error(
      `simulated kube-apiserver: cannot listen on ${bindAddress}:${opts.securePort}: ${(e as Error).message}`,
      { cause: e },
    );
  }
  const addr = server.address();
  port = typeof addr === "object" && addr ? addr.port : opts.securePort;
  const urlHost = unspecified ? (opts.advertiseAddress ?? "127.0.0.1") : bindAddress;
  advertised = opts.advertiseAddress ?? urlHost;
  if (opts.serviceClusterIPRange)
    ensureKubernetesService(store, opts.serviceClusterIPRange, advertised, port);
  log(`simulated kube-apiserver listening on ${hostForURL(bindAddress)}:${port}`);
  // apiextensions-apiserver's naming and establishing controllers run inside kube-apiserver.
  const crdControllers = startCrdControllers(store, log);

  return {
    url: `https://${hostForURL(urlHost)}:${port}`,
    port,
    store,
    faults,
    holdCrdControllers: () => crdControllers.hold(),
    async stop() {
      stopStallLog();
      crdControllers.stop();
      for (const w of [...watches]) w();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      if (ownsStore) store.close();
    },
  };
}

/** default/kubernetes Service and Endpoints. k8s: pkg/controlplane/controller/kubernetesservice/controller.go */
function ensureKubernetesService(
  store: ObjectStore,
  cidr: string,
  address: string,
  port: number,
): void {
  const ip = firstServiceIP(cidr);
  const family = ip.includes(":") ? "IPv6" : "IPv4";
  if (!store.get({ apiVersion: "v1", kind: "Service", namespace: "default", name: "kubernetes" })) {
    createUnlessExists(store, {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "kubernetes",
        namespace: "default",
        labels: { component: "apiserver", provider: "kubernetes" },
      },
      spec: {
        clusterIP: ip,
        clusterIPs: [ip],
        internalTrafficPolicy: "Cluster",
        ipFamilies: [family],
        ipFamilyPolicy: "SingleStack",
        ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: port }],
        sessionAffinity: "None",
        type: "ClusterIP",
      },
      status: { loadBalancer: {} },
    });
  }
  // k8s: pkg/controlplane/reconcilers/lease.go — the endpoints list every API server sharing the
  // storage (here: those that ever started on it), sorted.
  const existing = store.get({
    apiVersion: "v1",
    kind: "Endpoints",
    namespace: "default",
    name: "kubernetes",
  });
  const subset = ((existing?.subsets ?? []) as Json[])[0];
  const samePort = ((subset?.ports ?? []) as Json[]).some((p) => p.port === port);
  const others = samePort ? ((subset?.addresses ?? []) as { ip: string }[]).map((a) => a.ip) : [];
  const ips = [...new Set([...others, address])].sort();
  store.update({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: { "endpointslice.kubernetes.io/skip-mirror": "true" },
    },
    subsets: [
      {
        addresses: ips.map((ip) => ({ ip })),
        ports: [{ name: "https", port, protocol: "TCP" }],
      },
    ],
  });
}
