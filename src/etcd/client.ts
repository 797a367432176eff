import { createHash, createPrivateKey, X509Certificate } from "node:crypto";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { createSecureContext, type SecureContext } from "node:tls";
import { formatGoDuration } from "../config/duration.js";
import { urlTarget, verifyServerAs, type Route } from "../remote/route.js";

// An etcd v3 client over etcd's JSON gRPC gateway, which every etcd ≥ 3.4 serves on its client
// URLs next to gRPC (go.etcd.io/etcd api/etcdserverpb/gw): POST /v3/<service>/<method> with the
// request message as JSON, the response message back as JSON. proto3 JSON mapping: int64/uint64
// fields are strings, empty fields are omitted. A failed RPC answers an HTTP error status with
// {"error", "message", "code"} where code is the gRPC status code. /health is plain HTTP.
// kubeadm talks gRPC through clientv3 (util/etcd/etcd.go) with a 2 s per-call timeout; the calls
// it makes (MemberList, MemberAdd[AsLearner], MemberPromote, MemberRemove, Status) map 1:1 here.
// Mutual TLS: etcd's --client-cert-auth requires a client certificate signed by its
// --trusted-ca-file at the TLS handshake, on the gateway exactly as on gRPC.

/** kubeadm: util/etcd etcdTimeout, the deadline of each etcd call. */
export const ETCD_REQUEST_TIMEOUT_MS = 2_000;

/** gRPC status codes etcd answers with (google.golang.org/grpc/codes). */
export const GrpcCode = {
  DeadlineExceeded: 4,
  NotFound: 5,
  FailedPrecondition: 9,
  Unavailable: 14,
} as const;

/**
 * PEM text of the trust anchor and the client identity. Strings, not paths, so a caller reads
 * them through the node's Host (kubeadm: etcd/ca.crt and etcd/healthcheck-client.{crt,key}).
 */
export interface EtcdTLSCredentials {
  ca: string;
  cert: string;
  key: string;
}

export interface EtcdClientOptions {
  /** Client URLs ("https://10.0.0.1:2379"), tried in turn. */
  endpoints: readonly string[];
  tls: EtcdTLSCredentials;
  /** Deadline of one request, from connecting to the last byte. Default 2 s (kubeadm's). */
  requestTimeoutMs?: number;
  /**
   * How this process reaches the endpoints, which are a node's view (remote/route.ts): a routed
   * connection still verifies the serving certificate against the endpoint's own host (etcd's
   * server certificate names the advertise IP, 127.0.0.1 and localhost). Default: directly.
   */
  route?: Route;
}

/** One member as etcd's Cluster API reports it. IDs are uint64 in decimal, as the gateway sends them. */
export interface EtcdApiMember {
  id: string;
  /** Empty until the member has started and published its name. */
  name: string;
  peerURLs: string[];
  /** Empty until the member has started. */
  clientURLs: string[];
  isLearner: boolean;
}

/** Maintenance.Status of one endpoint. */
export interface EtcdStatus {
  /** The member that answered. */
  memberId: string;
  version: string;
  dbSize: number;
  /** Member ID of the leader; "0" while there is none. */
  leader: string;
  raftIndex: number;
  raftTerm: number;
  isLearner: boolean;
  /** Alarms and errors the member reports ("NOSPACE"...). */
  errors: string[];
}

export interface EtcdHealth {
  healthy: boolean;
  /** etcd ≥ 3.5 says why it is unhealthy. */
  reason?: string;
}

/** Why a request failed: no TLS session, no answer in time, no connection, or etcd said no. */
export type EtcdFailureKind = "tls" | "timeout" | "connection" | "server";

/** One request to one endpoint that failed. The message never carries key material. */
export class EtcdRequestError extends Error {
  constructor(
    readonly operation: string,
    readonly endpoint: string,
    readonly kind: EtcdFailureKind,
    readonly detail: string,
    /** The gRPC status code etcd answered with (kind "server"). */
    readonly grpcCode?: number,
    /** etcd's own error text ("etcdserver: member not found"), for matching. */
    readonly serverMessage?: string,
    cause?: unknown,
  ) {
    super(`etcd ${operation} at ${endpoint} failed: ${detail}`, cause ? { cause } : undefined);
    this.name = "EtcdRequestError";
  }
}

/** An operation that failed at every endpoint it could try. */
export class EtcdUnavailableError extends Error {
  constructor(
    readonly operation: string,
    readonly failures: readonly EtcdRequestError[],
  ) {
    super(
      `etcd ${operation} failed at every endpoint: ${failures
        .map((f) => `${f.endpoint}: ${f.detail}`)
        .join("; ")}`,
      { cause: failures.at(-1) },
    );
    this.name = "EtcdUnavailableError";
  }
}

/** The last per-endpoint failure inside `error`, if it is one of ours. */
export function etcdRequestErrorOf(error: unknown): EtcdRequestError | undefined {
  if (error instanceof EtcdRequestError) return error;
  if (error instanceof EtcdUnavailableError) return error.failures.at(-1);
  return undefined;
}

/** Whether `error` is (or ends with) etcd answering this exact error text. */
export function isEtcdServerError(error: unknown, message: string): boolean {
  const e = etcdRequestErrorOf(error);
  return e?.kind === "server" && e.serverMessage === message;
}

/** Whether every endpoint failed TLS: a wrong CA or client certificate, which no retry fixes. */
export function isEtcdTLSFailure(error: unknown): boolean {
  if (error instanceof EtcdRequestError) return error.kind === "tls";
  if (error instanceof EtcdUnavailableError) return error.failures.every((f) => f.kind === "tls");
  return false;
}

// etcd's error texts (go.etcd.io/etcd api/v3rpc/rpctypes/error.go).
export const ETCD_ERR_PEER_URL_EXISTS = "etcdserver: Peer URLs already exists";
export const ETCD_ERR_MEMBER_NOT_FOUND = "etcdserver: member not found";
export const ETCD_ERR_MEMBER_NOT_LEARNER = "etcdserver: can only promote a learner member";
export const ETCD_ERR_LEARNER_NOT_READY =
  "etcdserver: can only promote a learner member which is in sync with leader";

/** Member ID as etcdctl and kubeadm print it: lower-case hex (strconv.FormatUint(id, 16)). */
export function formatMemberID(id: string): string {
  return BigInt(id).toString(16);
}

// OpenSSL verification results Node reports as error codes when the server's chain fails.
const CERT_VERIFY_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "INVALID_CA",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

// TLS alerts a server sends when it refuses the client certificate (RFC 8446 §6.2).
const CLIENT_CERT_ALERTS = new Set([
  "bad certificate",
  "unknown ca",
  "certificate unknown",
  "certificate required",
  "unsupported certificate",
  "certificate expired",
  "certificate revoked",
]);

const CONNECTION_CODES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  EPIPE: "connection closed",
};

/** What went wrong with a request that got no HTTP answer, in a few words. */
function classifyTransportError(error: NodeJS.ErrnoException): {
  kind: EtcdFailureKind;
  detail: string;
} {
  const code = error.code ?? "";
  if (CERT_VERIFY_CODES.has(code)) {
    return {
      kind: "tls",
      detail: `the server certificate did not verify against the etcd CA (${error.message})`,
    };
  }
  if (code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_")) {
    // OpenSSL's reason: "ssl/tls alert bad certificate" when the server sent an alert.
    const reason = (error as { reason?: string }).reason ?? error.message.split("\n")[0]!;
    const alert = /alert (.+)$/.exec(reason)?.[1];
    if (alert === undefined) return { kind: "tls", detail: `TLS handshake failed (${reason})` };
    const clientCert = CLIENT_CERT_ALERTS.has(alert)
      ? ": it does not accept the client certificate"
      : "";
    return {
      kind: "tls",
      detail: `the server ended the TLS handshake with the alert "${alert}"${clientCert}`,
    };
  }
  const known = CONNECTION_CODES[code];
  return { kind: "connection", detail: known ?? error.message };
}

interface RawAnswer {
  status: number;
  body: string;
}

/** Largest answer we read whole: a member list or status is a few KB. */
const MAX_RESPONSE_BYTES = 4 << 20;

/** How long a whole snapshot may take to stream (etcdctl sets no deadline of its own). */
const SNAPSHOT_TIMEOUT_MS = 5 * 60_000;
const SHA256_BYTES = 32;

interface ExchangeOptions {
  /** Deadline of the whole exchange; default the client's request timeout. */
  timeoutMs?: number;
  /** A successful answer's body, handed over as it arrives instead of read whole. */
  onChunk?: (chunk: Buffer) => void;
}

/** An RPC's JSON answer; an etcd error status becomes an EtcdRequestError of kind "server". */
function answerOf<T>(raw: RawAnswer, url: URL, operation: string): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.body);
  } catch (e) {
    throw new EtcdRequestError(
      operation,
      url.origin,
      "server",
      `HTTP ${raw.status} with a body that is not JSON`,
      undefined,
      undefined,
      e,
    );
  }
  if (raw.status < 200 || raw.status > 299) {
    const err = parsed as { error?: string; message?: string; code?: number };
    const message = err.message ?? err.error ?? `HTTP ${raw.status}`;
    throw new EtcdRequestError(operation, url.origin, "server", message, err.code, message);
  }
  return parsed as T;
}

/** Whether a failure is particular to the endpoint, so another endpoint may succeed. */
function worthAnotherEndpoint(error: EtcdRequestError): boolean {
  if (error.kind !== "server") return true;
  // Unavailable: a learner refusing the RPC, no leader, a stopping member. DeadlineExceeded:
  // a proposal that timed out on that member. Anything else is the cluster's answer.
  return error.grpcCode === GrpcCode.Unavailable || error.grpcCode === GrpcCode.DeadlineExceeded;
}

interface GatewayMember {
  ID?: string;
  name?: string;
  peerURLs?: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

function memberOf(m: GatewayMember): EtcdApiMember {
  return {
    id: m.ID ?? "0",
    name: m.name ?? "",
    peerURLs: m.peerURLs ?? [],
    clientURLs: m.clientURLs ?? [],
    isLearner: m.isLearner ?? false,
  };
}

function checkMemberID(id: string, operation: string): void {
  if (!/^[0-9]+$/.test(id) || BigInt(id) >= 1n << 64n) {
    throw new Error(`etcd ${operation}: member ID "${id}" is not an unsigned 64-bit decimal`);
  }
}

/** Validates and normalises one endpoint: an https URL without path. */
function endpointURL(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch (e) {
    throw new Error(`etcd endpoint "${endpoint}" is not a URL`, { cause: e });
  }
  if (url.protocol !== "https:") {
    throw new Error(
      `etcd endpoint "${endpoint}" must use https (client certificates are required)`,
    );
  }
  return url;
}

/** Builds the TLS context once, checking the PEM inputs with errors that never echo them. */
function secureContextOf(tls: EtcdTLSCredentials): SecureContext {
  if (!tls.ca.includes("-----BEGIN CERTIFICATE-----")) {
    throw new Error("the etcd CA is not a PEM certificate");
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(tls.cert);
  } catch (e) {
    throw new Error("the etcd client certificate is not a PEM certificate", { cause: e });
  }
  let key;
  try {
    key = createPrivateKey(tls.key);
  } catch {
    // The parser's error may quote the input: keep it out of the chain.
    throw new Error("the etcd client key is not a PEM private key");
  }
  if (!cert.checkPrivateKey(key)) {
    throw new Error("the etcd client certificate and key do not belong together");
  }
  try {
    return createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key });
  } catch (e) {
    throw new Error(
      `the etcd TLS credentials were refused: ${(e as Error).message.replace(/\s+/g, " ")}`,
      { cause: e },
    );
  }
}

export class EtcdClient {
  private eps: URL[];
  private readonly context: SecureContext;
  private readonly timeoutMs: number;
  private readonly route: Route | undefined;
  /** Index of the endpoint that answered last: tried first next time. */
  private preferred = 0;

  constructor(opts: EtcdClientOptions) {
    this.eps = opts.endpoints.map(endpointURL);
    if (this.eps.length === 0) throw new Error("an etcd client needs at least one endpoint");
    this.context = secureContextOf(opts.tls);
    this.timeoutMs = opts.requestTimeoutMs ?? ETCD_REQUEST_TIMEOUT_MS;
    this.route = opts.route;
  }

  /** The client URLs in use, as given ("https://127.0.0.1:2379"). */
  get endpoints(): string[] {
    return this.eps.map((u) => u.origin);
  }

  /** Replaces the endpoints (kubeadm's Sync does this with the member list's client URLs). */
  setEndpoints(endpoints: readonly string[]): void {
    const next = endpoints.map(endpointURL);
    if (next.length === 0) throw new Error("an etcd client needs at least one endpoint");
    this.eps = next;
    this.preferred = 0;
  }

  /** Cluster.MemberList. */
  async memberList(): Promise<EtcdApiMember[]> {
    const res = await this.call<{ members?: GatewayMember[] }>(
      "member list",
      "/v3/cluster/member/list",
      {},
    );
    return (res.members ?? []).map(memberOf);
  }

  /** Cluster.MemberAdd; with `isLearner` the member joins as a non-voting learner. */
  async memberAdd(
    peerURLs: readonly string[],
    opts: { isLearner?: boolean } = {},
  ): Promise<{ member: EtcdApiMember; members: EtcdApiMember[] }> {
    const res = await this.call<{ member?: GatewayMember; members?: GatewayMember[] }>(
      opts.isLearner ? "member add (as learner)" : "member add",
      "/v3/cluster/member/add",
      { peerURLs, isLearner: opts.isLearner ?? false },
    );
    return { member: memberOf(res.member ?? {}), members: (res.members ?? []).map(memberOf) };
  }

  /** Cluster.MemberPromote: a learner in sync with the leader becomes a voting member. */
  async memberPromote(id: string): Promise<EtcdApiMember[]> {
    checkMemberID(id, "member promote");
    const res = await this.call<{ members?: GatewayMember[] }>(
      `member promote of ${formatMemberID(id)}`,
      "/v3/cluster/member/promote",
      { ID: id },
    );
    return (res.members ?? []).map(memberOf);
  }

  /** Cluster.MemberRemove. */
  async memberRemove(id: string): Promise<EtcdApiMember[]> {
    checkMemberID(id, "member remove");
    const res = await this.call<{ members?: GatewayMember[] }>(
      `member remove of ${formatMemberID(id)}`,
      "/v3/cluster/member/remove",
      { ID: id },
    );
    return (res.members ?? []).map(memberOf);
  }

  /** Maintenance.Status of one endpoint (as clientv3's Status(ctx, endpoint)): no fallback. */
  async status(endpoint: string): Promise<EtcdStatus> {
    const url = endpointURL(endpoint);
    const res = await this.send<{
      header?: { member_id?: string };
      version?: string;
      dbSize?: string;
      leader?: string;
      raftIndex?: string;
      raftTerm?: string;
      isLearner?: boolean;
      errors?: string[];
    }>(url, "status", "POST", "/v3/maintenance/status", {});
    return {
      memberId: res.header?.member_id ?? "0",
      version: res.version ?? "",
      dbSize: Number(res.dbSize ?? 0),
      leader: res.leader ?? "0",
      raftIndex: Number(res.raftIndex ?? 0),
      raftTerm: Number(res.raftTerm ?? 0),
      isLearner: res.isLearner ?? false,
      errors: res.errors ?? [],
    };
  }

  /** GET /health of one endpoint: whether the member sees a leader and can serve. */
  async health(endpoint: string): Promise<EtcdHealth> {
    const url = endpointURL(endpoint);
    // /health answers 503 with the same body when unhealthy: read it rather than fail.
    const raw = await this.exchange(url, "health check", "GET", "/health", undefined);
    let body: { health?: string | boolean; reason?: string };
    try {
      body = JSON.parse(raw.body) as typeof body;
    } catch (e) {
      throw new EtcdRequestError(
        "health check",
        url.origin,
        "server",
        `HTTP ${raw.status} with a body that is not JSON`,
        undefined,
        undefined,
        e,
      );
    }
    const healthy = body.health === true || body.health === "true";
    return body.reason ? { healthy, reason: body.reason } : { healthy };
  }

  /** One RPC, trying each endpoint in turn from the one that answered last. */
  private async call<T>(operation: string, path: string, body: unknown): Promise<T> {
    const failures: EtcdRequestError[] = [];
    const n = this.eps.length;
    for (let i = 0; i < n; i++) {
      const index = (this.preferred + i) % n;
      try {
        const result = await this.send<T>(this.eps[index]!, operation, "POST", path, body);
        this.preferred = index;
        return result;
      } catch (e) {
        if (!(e instanceof EtcdRequestError) || !worthAnotherEndpoint(e)) throw e;
        failures.push(e);
      }
    }
    if (failures.length === 1) throw failures[0]!;
    throw new EtcdUnavailableError(operation, failures);
  }

  /** One RPC to one endpoint; an etcd error status becomes an EtcdRequestError of kind "server". */
  private async send<T>(
    url: URL,
    operation: string,
    method: "GET" | "POST",
    path: string,
    body: unknown,
  ): Promise<T> {
    return answerOf<T>(await this.exchange(url, operation, method, path, body), url, operation);
  }

  /**
   * Maintenance.Snapshot of one endpoint (etcdctl snapshot save): the member's whole backend
   * database as it streams it, chunk by chunk. etcd appends the sha256 of the data as the last
   * 32 bytes (server/etcdserver/api/v3rpc/maintenance.go), which is checked here and kept, as
   * etcdctl keeps it: `snapshot restore` checks it again.
   */
  async snapshot(endpoint: string, opts: { timeoutMs?: number } = {}): Promise<Buffer> {
    const url = endpointURL(endpoint);
    const operation = "snapshot";
    const parts: Buffer[] = [];
    let pending = "";
    // The gateway streams one JSON message per line: {"result":{"blob":<base64>}} or, when the
    // stream breaks, {"error":{"grpc_code","message"}}.
    const consume = (line: string) => {
      if (!line.trim()) return;
      const msg = JSON.parse(line) as {
        result?: { blob?: string };
        error?: { grpc_code?: number; message?: string };
      };
      if (msg.error) {
        const message = msg.error.message ?? "the snapshot stream ended with an error";
        throw new EtcdRequestError(
          operation,
          url.origin,
          "server",
          message,
          msg.error.grpc_code,
          message,
        );
      }
      if (msg.result?.blob) parts.push(Buffer.from(msg.result.blob, "base64"));
    };
    const raw = await this.exchange(
      url,
      operation,
      "POST",
      "/v3/maintenance/snapshot",
      {},
      {
        timeoutMs: opts.timeoutMs ?? SNAPSHOT_TIMEOUT_MS,
        onChunk: (chunk) => {
          pending += chunk.toString("utf8");
          for (let i = pending.indexOf("\n"); i >= 0; i = pending.indexOf("\n")) {
            consume(pending.slice(0, i));
            pending = pending.slice(i + 1);
          }
        },
      },
    );
    if (raw.status < 200 || raw.status > 299) answerOf(raw, url, operation);
    consume(pending);
    const data = Buffer.concat(parts);
    const sum = data.subarray(-SHA256_BYTES);
    if (
      data.length <= SHA256_BYTES ||
      !createHash("sha256").update(data.subarray(0, -SHA256_BYTES)).digest().equals(sum)
    ) {
      throw new EtcdRequestError(
        operation,
        url.origin,
        "server",
        `the snapshot (${data.length} bytes) does not end with the sha256 of its data: it is incomplete`,
      );
    }
    return data;
  }

  /**
   * Where the request for `url` connects: the endpoint itself, or its routed address with the
   * certificate still checked against the endpoint's host. Not bounded by the request timeout:
   * the route bounds its own probe, and a forward is opened once.
   */
  private async connectionTo(url: URL, operation: string): Promise<RequestOptions> {
    const { host, port } = urlTarget(url);
    if (!this.route) return { hostname: host, port };
    let to;
    try {
      to = await this.route(host, port);
    } catch (e) {
      throw new EtcdRequestError(
        operation,
        url.origin,
        "connection",
        `cannot reach it through the node: ${(e as Error).message}`,
        undefined,
        undefined,
        e,
      );
    }
    return { hostname: to.host, port: to.port, ...verifyServerAs(host, to.host) };
  }

  /** The HTTPS exchange itself, bounded by the request timeout. */
  private async exchange(
    url: URL,
    operation: string,
    method: "GET" | "POST",
    path: string,
    body: unknown,
    opts: ExchangeOptions = {},
  ): Promise<RawAnswer> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    // tls.connect takes a prepared secureContext; https.RequestOptions does not declare it.
    const options: RequestOptions & { secureContext: SecureContext } = {
      protocol: "https:",
      ...(await this.connectionTo(url, operation)),
      method,
      path,
      secureContext: this.context,
      // A fresh connection per call, so nothing lingers to keep the process alive.
      agent: false,
      headers: payload
        ? { "content-type": "application/json", "content-length": String(payload.length) }
        : {},
    };
    return new Promise<RawAnswer>((resolve, reject) => {
      let settled = false;
      const fail = (error: EtcdRequestError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(error);
      };
      const transportFailure = (e: NodeJS.ErrnoException) => {
        const { kind, detail } = classifyTransportError(e);
        fail(new EtcdRequestError(operation, url.origin, kind, detail, undefined, undefined, e));
      };
      const timer = setTimeout(() => {
        fail(
          new EtcdRequestError(
            operation,
            url.origin,
            "timeout",
            `no answer within ${formatGoDuration(timeoutMs)}`,
          ),
        );
      }, timeoutMs);
      const req = httpsRequest(options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const status = res.statusCode ?? 0;
        const streamed = opts.onChunk !== undefined && status >= 200 && status <= 299;
        res.on("data", (chunk: Buffer) => {
          if (streamed) {
            try {
              opts.onChunk!(chunk);
            } catch (e) {
              fail(
                e instanceof EtcdRequestError
                  ? e
                  : new EtcdRequestError(
                      operation,
                      url.origin,
                      "server",
                      `an unreadable answer: ${(e as Error).message}`,
                      undefined,
                      undefined,
                      e,
                    ),
              );
            }
            return;
          }
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            fail(
              new EtcdRequestError(
                operation,
                url.origin,
                "server",
                `the answer exceeds ${MAX_RESPONSE_BYTES} bytes`,
              ),
            );
            return;
          }
          chunks.push(chunk);
        });
        res.on("end", () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({ status, body: Buffer.concat(chunks).toString("utf8") });
        });
        res.on("error", transportFailure);
      });
      req.on("error", transportFailure);
      req.end(payload);
    });
  }
}
