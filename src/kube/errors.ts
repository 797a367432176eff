import { STATUS_CODES } from "node:http";
import { formatGoDuration } from "../config/duration.js";
import { displayName } from "./resources.js";
import type { ObjectRef } from "./types.js";

// Short API errors. client-node's ApiException message embeds the whole body and headers; a user
// needs one line: what was being done, to which object, the HTTP status and the server's own
// Status message ("creating Secret kube-system/bootstrap-token-abcdef: 403 Forbidden: ...").
// Reasons follow metav1.StatusReason; when a body carries none, the reason is derived from the
// code as client-go's errors.NewGenericServerResponse does (apimachinery api/errors/errors.go).

export type ApiVerb = "get" | "list" | "create" | "update" | "patch" | "delete" | "getRaw";

const GERUNDS: Record<ApiVerb, string> = {
  get: "getting",
  list: "listing",
  create: "creating",
  update: "updating",
  patch: "patching",
  delete: "deleting",
  getRaw: "getting",
};

/** What a request was doing, for messages. */
export interface ApiOperation {
  verb: ApiVerb;
  kind?: string;
  name?: string;
  namespace?: string;
  /** list: the label selector; getRaw: the absolute path. */
  labelSelector?: string;
  path?: string;
}

export function operationOf(verb: ApiVerb, ref: ObjectRef): ApiOperation {
  return ref.namespace === undefined
    ? { verb, kind: ref.kind, name: ref.name }
    : { verb, kind: ref.kind, name: ref.name, namespace: ref.namespace };
}

function pluralKind(kind: string): string {
  return kind.endsWith("s") ? `${kind}es` : `${kind}s`;
}

/** "creating Secret kube-system/bootstrap-token-abcdef", "listing Pods in kube-system". */
export function describeOperation(op: ApiOperation): string {
  const gerund = GERUNDS[op.verb];
  if (op.verb === "getRaw") return `${gerund} ${op.path ?? "/"}`;
  if (op.verb === "list") {
    const where = op.namespace ? ` in ${op.namespace}` : "";
    const selector = op.labelSelector ? ` with labels "${op.labelSelector}"` : "";
    return `${gerund} ${pluralKind(op.kind ?? "object")}${where}${selector}`;
  }
  const name =
    op.name === undefined ? "" : ` ${displayName({ name: op.name, namespace: op.namespace })}`;
  return `${gerund} ${op.kind ?? "object"}${name}`;
}

const REASON_BY_CODE: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Expired",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

export interface ApiErrorInit {
  operation: ApiOperation;
  /** HTTP status; 0 when no response arrived. */
  code: number;
  /** metav1.StatusReason ("Forbidden", "AlreadyExists"...); "" when no response arrived. */
  reason: string;
  /** The Status message of the response, or the network failure. */
  statusMessage: string;
  /** The API server URL the request went to. */
  server?: string;
  /** System error code of a network failure ("ECONNREFUSED"). */
  networkCode?: string;
  cause?: unknown;
}

/** A failed API request, with a one-line message. */
export class ApiError extends Error {
  readonly verb: ApiVerb;
  readonly kind: string | undefined;
  /** The object's name (Error.name is "ApiError"). */
  readonly objectName: string | undefined;
  readonly namespace: string | undefined;
  readonly code: number;
  readonly reason: string;
  readonly statusMessage: string;
  readonly server: string | undefined;
  readonly networkCode: string | undefined;

  constructor(init: ApiErrorInit) {
    const subject = describeOperation(init.operation);
    const message =
      init.code === 0
        ? `${subject}: no response from ${init.server ?? "the API server"}: ${init.statusMessage}`
        : `${subject}: ${init.code} ${STATUS_CODES[init.code] ?? "Unknown Status"}` +
          (init.statusMessage ? `: ${init.statusMessage}` : "");
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "ApiError";
    this.verb = init.operation.verb;
    this.kind = init.operation.kind;
    this.objectName = init.operation.name;
    this.namespace = init.operation.namespace;
    this.code = init.code;
    this.reason = init.reason;
    this.statusMessage = init.statusMessage;
    this.server = init.server;
    this.networkCode = init.networkCode;
  }

  /** The object the request was about, when it named one. */
  get ref(): Omit<ObjectRef, "apiVersion"> | undefined {
    if (this.kind === undefined || this.objectName === undefined) return undefined;
    return this.namespace === undefined
      ? { kind: this.kind, name: this.objectName }
      : { kind: this.kind, name: this.objectName, namespace: this.namespace };
  }
}

interface StatusBody {
  kind?: unknown;
  message?: unknown;
  reason?: unknown;
}

// A text body is quoted only when it is one short line ("404 page not found"); anything else
// (HTML error pages, dumps) would bury the message.
const MAX_TEXT_BODY = 200;

/** The ApiError of a non-success response; the body is read for its metav1.Status only. */
export function apiErrorFromResponse(
  operation: ApiOperation,
  code: number,
  body: string,
  server?: string,
): ApiError {
  let reason = "";
  let statusMessage = "";
  try {
    const parsed = JSON.parse(body) as StatusBody;
    if (parsed && typeof parsed === "object") {
      if (typeof parsed.reason === "string") reason = parsed.reason;
      if (typeof parsed.message === "string") statusMessage = parsed.message;
    }
  } catch {
    const text = body.trim();
    if (text.length > 0 && text.length <= MAX_TEXT_BODY && !text.includes("\n")) {
      statusMessage = text;
    }
  }
  if (reason === "") reason = REASON_BY_CODE[code] ?? "Unknown";
  return new ApiError({
    operation,
    code,
    reason,
    statusMessage,
    ...(server === undefined ? {} : { server }),
  });
}

interface ErrnoLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  cause?: unknown;
}

/** The innermost error of a cause chain: undici wraps socket and TLS errors in "fetch failed". */
function rootCause(error: unknown): ErrnoLike | undefined {
  let current = error as ErrnoLike | undefined;
  for (let depth = 0; depth < 10 && current && typeof current === "object"; depth++) {
    const next = current.cause as ErrnoLike | undefined;
    if (!next || typeof next !== "object") break;
    current = next;
  }
  return current && typeof current === "object" ? current : undefined;
}

/** Why no response arrived, in one line ("connect ECONNREFUSED 10.0.0.1:6443"). */
export function describeNetworkFailure(
  error: unknown,
  timeoutMs?: number,
): { text: string; code?: string } {
  const root = rootCause(error);
  const name = typeof root?.name === "string" ? root.name : "";
  if (name === "TimeoutError" || name === "AbortError") {
    const after = timeoutMs === undefined ? "" : ` within ${formatGoDuration(timeoutMs)}`;
    return { text: `the request got no answer${after}`, code: "ETIMEDOUT" };
  }
  const message = typeof root?.message === "string" && root.message ? root.message : String(error);
  const code = typeof root?.code === "string" ? root.code : undefined;
  if (code && !message.includes(code)) return { text: `${message} (${code})`, code };
  return code ? { text: message, code } : { text: message };
}

/** The ApiError of a request that got no response (refused, reset, TLS failure, timeout). */
export function apiErrorFromNetwork(
  operation: ApiOperation,
  server: string,
  error: unknown,
  timeoutMs?: number,
): ApiError {
  const { text, code } = describeNetworkFailure(error, timeoutMs);
  return new ApiError({
    operation,
    code: 0,
    reason: "",
    statusMessage: text,
    server,
    ...(code === undefined ? {} : { networkCode: code }),
    cause: error,
  });
}

/** The server serves no such kind in that apiVersion (no CRD for it, or a wrong version). */
export class UnservedKindError extends Error {
  constructor(
    readonly apiVersion: string,
    readonly kind: string,
    server: string,
  ) {
    super(
      `the API server ${server} does not serve kind "${kind}" in apiVersion "${apiVersion}" (not in its discovery; a custom resource needs its CustomResourceDefinition first)`,
    );
    this.name = "UnservedKindError";
  }
}

/** The ApiError `error` is or wraps (through `cause`), as errors.As would find it. */
export function apiErrorOf(error: unknown): ApiError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    if (current instanceof ApiError) return current;
    current = current.cause;
  }
  return undefined;
}

function hasReason(error: unknown, reason: string): boolean {
  return apiErrorOf(error)?.reason === reason;
}

export const isNotFound = (e: unknown): boolean => hasReason(e, "NotFound");
export const isAlreadyExists = (e: unknown): boolean => hasReason(e, "AlreadyExists");
export const isConflict = (e: unknown): boolean => hasReason(e, "Conflict");
export const isForbidden = (e: unknown): boolean => hasReason(e, "Forbidden");
export const isInvalid = (e: unknown): boolean => hasReason(e, "Invalid");
export const isUnauthorized = (e: unknown): boolean => hasReason(e, "Unauthorized");

const TRANSIENT_REASONS = new Set([
  "Timeout",
  "ServerTimeout",
  "ServiceUnavailable",
  "TooManyRequests",
  "InternalError",
]);

/** No response, a 5xx, or 429: worth another try. */
export function isTransient(e: unknown): boolean {
  const error = apiErrorOf(e);
  if (!error) return false;
  return (
    error.code === 0 ||
    error.code >= 500 ||
    error.code === 429 ||
    TRANSIENT_REASONS.has(error.reason)
  );
}
