// SIMULATION (test double). Status error bodies exactly as kube-apiserver writes them.
// k8s: staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go (NewNotFound, NewAlreadyExists,
// NewConflict, NewInvalid, NewBadRequest, NewForbidden, NewUnauthorized...) and
// staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go (Status: the JSON field order is the
// Go struct's: kind, apiVersion, metadata, status, message, reason, details, code).

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message?: string;
  reason?: string;
  details?: StatusDetails;
  /** Omitted (omitempty) on a success Status. */
  code?: number;
}

/** A failed request: thrown by the store and the server, written as a Status body. */
export class StatusError extends Error {
  constructor(readonly status: Status) {
    super(status.message ?? status.reason ?? `status ${status.code}`);
    this.name = "StatusError";
  }
  get code(): number {
    return this.status.code ?? 500;
  }
  get reason(): string | undefined {
    return this.status.reason;
  }
}

/** Go omits empty fields (omitempty); so do we, in the Go field order. */
function compactDetails(d: StatusDetails): StatusDetails | undefined {
  const out: StatusDetails = {};
  if (d.name) out.name = d.name;
  if (d.group) out.group = d.group;
  if (d.kind) out.kind = d.kind;
  if (d.uid) out.uid = d.uid;
  if (d.causes && d.causes.length > 0) out.causes = d.causes;
  if (d.retryAfterSeconds) out.retryAfterSeconds = d.retryAfterSeconds;
  return Object.keys(out).length > 0 ? out : undefined;
}

export function failure(
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
): StatusError {
  const d = details && compactDetails(details);
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(d ? { details: d } : {}),
    code,
  };
  return new StatusError(status);
}

/** A success Status (DELETE of most kinds). k8s: registry/generic/registry/store.go */
export function success(details: StatusDetails): Status {
  const d = compactDetails(details);
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    ...(d ? { details: d } : {}),
  };
}

/** schema.GroupResource.String(): "configmaps", "deployments.apps". */
export function groupResource(group: string, resource: string): string {
  return group === "" ? resource : `${resource}.${group}`;
}

export function notFound(group: string, resource: string, name: string): StatusError {
  return failure(404, "NotFound", `${groupResource(group, resource)} "${name}" not found`, {
    name,
    group,
    kind: resource,
  });
}

export function alreadyExists(group: string, resource: string, name: string): StatusError {
  return failure(
    409,
    "AlreadyExists",
    `${groupResource(group, resource)} "${name}" already exists`,
    { name, group, kind: resource },
  );
}

/** The optimistic-concurrency failure of an update with a stale resourceVersion. */
export function conflict(
  group: string,
  resource: string,
  name: string,
  reason = "the object has been modified; please apply your changes to the latest version and try again",
): StatusError {
  return failure(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${groupResource(group, resource)} "${name}": ${reason}`,
    { name, group, kind: resource },
  );
}

export function badRequest(message: string): StatusError {
  return failure(400, "BadRequest", message);
}

export function methodNotSupported(group: string, resource: string, verb: string): StatusError {
  return failure(
    405,
    "MethodNotAllowed",
    `${verb} is not supported on resources of kind "${groupResource(group, resource)}"`,
    { group, kind: resource },
  );
}

export function unsupportedMediaType(message: string): StatusError {
  return failure(415, "UnsupportedMediaType", message);
}

export function unauthorized(): StatusError {
  return failure(401, "Unauthorized", "Unauthorized");
}

export function forbidden(group: string, resource: string, name: string, err: string): StatusError {
  let message: string;
  if (group === "" && resource === "") message = `forbidden: ${err}`;
  else if (name === "") message = `${groupResource(group, resource)} is forbidden: ${err}`;
  else message = `${groupResource(group, resource)} "${name}" is forbidden: ${err}`;
  return failure(403, "Forbidden", message, { name, group, kind: resource });
}

export function internalError(message: string): StatusError {
  return failure(500, "InternalError", `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });
}

export function gone(message: string): StatusError {
  return failure(410, "Expired", message);
}

export function resourceNotFoundAtPath(): StatusError {
  return failure(404, "NotFound", "the server could not find the requested resource", {});
}

/** One field error. k8s: staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go */
export interface FieldError {
  type:
    | "FieldValueInvalid"
    | "FieldValueRequired"
    | "FieldValueNotSupported"
    | "FieldValueForbidden"
    | "FieldValueTooLong"
    | "FieldValueDuplicate";
  field: string;
  /** Already rendered, e.g. `Invalid value: "Foo": a lowercase RFC 1123 ...`. */
  message: string;
}

/** Go's %#v-ish rendering of a bad value in field errors (strings quoted, others as JSON). */
function renderValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null || value === undefined) return "null";
  return JSON.stringify(value);
}

export const fieldError = {
  invalid(field: string, value: unknown, detail: string): FieldError {
    const msg = `Invalid value: ${renderValue(value)}${detail ? `: ${detail}` : ""}`;
    return { type: "FieldValueInvalid", field, message: msg };
  },
  required(field: string, detail: string): FieldError {
    return {
      type: "FieldValueRequired",
      field,
      message: `Required value${detail ? `: ${detail}` : ""}`,
    };
  },
  notSupported(field: string, value: unknown, valid: string[]): FieldError {
    const list = valid.map((v) => JSON.stringify(v)).join(", ");
    return {
      type: "FieldValueNotSupported",
      field,
      message: `Unsupported value: ${renderValue(value)}: supported values: ${list}`,
    };
  },
  forbidden(field: string, detail: string): FieldError {
    return { type: "FieldValueForbidden", field, message: `Forbidden: ${detail}` };
  },
  tooLong(field: string, max: number): FieldError {
    return {
      type: "FieldValueTooLong",
      field,
      message: `Too long: may not be more than ${max} bytes`,
    };
  },
};

/**
 * 422 Invalid. Message: `ConfigMap "x" is invalid: metadata.name: Invalid value: ...`, or a
 * bracketed, comma-separated list when there are several. details.kind is the Kind, not the
 * resource. k8s: staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go NewInvalid
 */
export function invalid(
  group: string,
  kind: string,
  name: string,
  errs: FieldError[],
): StatusError {
  const rendered = errs.map((e) => `${e.field}: ${e.message}`);
  const agg = rendered.length === 1 ? rendered[0]! : `[${rendered.join(", ")}]`;
  return failure(422, "Invalid", `${kind} "${name}" is invalid: ${agg}`, {
    name,
    group,
    kind,
    causes: errs.map((e) => ({ reason: e.type, message: e.message, field: e.field })),
  });
}
