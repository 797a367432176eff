// SIMULATION (test double). Request bodies checked against the Kubernetes API schemas, taken
// from @kubernetes/client-node's generated models (each V1Foo has getAttributeTypeMap(): the
// JSON field names and types of the OpenAPI schema of the release it was generated from).
//
// What kube-apiserver does, and we copy:
// - a value of the wrong JSON type is a 400 BadRequest "<Kind> in version "v1" cannot be handled
//   as a <Kind>: json: cannot unmarshal <type> into Go struct field ..." whatever the field
//   validation level (k8s docs: reference/using-api/api-concepts.md "Field validation";
//   k8s: staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go);
// - unknown fields: fieldValidation=Strict → 400 BadRequest `strict decoding error: unknown field
//   "spec.foo"`, Warn → a `Warning: 299 - "unknown field ..."` header, Ignore → dropped
//   (k8s: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go, rest.go
//   fieldValidation; staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go).
// - byte fields ([]byte in Go, format "byte") must be standard base64 (Go encoding/json).
import * as k8s from "@kubernetes/client-node";
import { badRequest } from "./status.js";

export interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}

export type TypeDesc =
  | { kind: "model"; model: string }
  | { kind: "map"; value: string; format: string }
  | { kind: "array"; item: string; format: string }
  | { kind: "string" | "number" | "boolean" | "date" | "intOrString" | "any"; format: string };

const models = k8s as unknown as Record<string, unknown>;
const attrCache = new Map<string, Map<string, Attribute> | null>();

/** The fields of a client-node model by JSON name, or null when the model is unknown. */
export function modelFields(model: string): Map<string, Attribute> | null {
  const cached = attrCache.get(model);
  if (cached !== undefined) return cached;
  const cls = models[model] as { getAttributeTypeMap?: () => Attribute[] } | undefined;
  const attrs = typeof cls?.getAttributeTypeMap === "function" ? cls.getAttributeTypeMap() : null;
  const map = attrs ? new Map(attrs.map((a) => [a.baseName, a])) : null;
  attrCache.set(model, map);
  return map;
}

export function describeType(type: string, format = ""): TypeDesc {
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) return { kind: "array", item: arr[1]!, format };
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return { kind: "map", value: map[1]!, format };
  switch (type) {
    case "string":
      return { kind: "string", format };
    case "number":
      return { kind: "number", format };
    case "boolean":
      return { kind: "boolean", format };
    case "Date":
      return { kind: "date", format };
    case "IntOrString":
      return { kind: "intOrString", format };
    case "any":
    case "object":
      return { kind: "any", format };
    default:
      return modelFields(type) ? { kind: "model", model: type } : { kind: "any", format };
  }
}

/** Type of one field of a model, or undefined when the model has no such field. */
export function fieldType(model: string, field: string): TypeDesc | undefined {
  const a = modelFields(model)?.get(field);
  return a ? describeType(a.type, a.format) : undefined;
}

// resource.Quantity fields: strings in the schema, but Go's Quantity also takes JSON numbers.
// k8s: staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go UnmarshalJSON
const QUANTITY_FIELDS = new Set([
  "V1ResourceRequirements.limits",
  "V1ResourceRequirements.requests",
  "V1NodeStatus.capacity",
  "V1NodeStatus.allocatable",
  "V1EmptyDirVolumeSource.sizeLimit",
  "V1PodSpec.overhead",
]);
// k8s: staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go (splitRE / parseQuantityString)
const QUANTITY_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
// Go's time.Time / metav1.Time / MicroTime take RFC 3339.
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function jsonTypeName(v: unknown): string {
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return "object";
  if (typeof v === "boolean") return "bool";
  return typeof v; // string, number
}

/** Go type names as encoding/json prints them in UnmarshalTypeError. */
function goTypeName(t: TypeDesc): string {
  switch (t.kind) {
    case "model":
      return `v1.${t.model.replace(/^(V1|CoreV1|V2|V1beta1)/, "")}`;
    case "map":
      return `map[string]${goTypeName(describeType(t.value))}`;
    case "array":
      return `[]${goTypeName(describeType(t.item))}`;
    case "string":
      return t.format === "byte" ? "[]uint8" : "string";
    case "number":
      return t.format === "int32" ? "int32" : t.format === "int64" ? "int64" : "float64";
    case "boolean":
      return "bool";
    case "date":
      return "v1.Time";
    case "intOrString":
      return "intstr.IntOrString";
    case "any":
      return "interface {}";
  }
}

export interface SchemaCheck {
  /** Paths of fields the schema does not declare: "spec.foo", "spec.containers[0].bar". */
  unknownFields: string[];
}

class DecodeError extends Error {}

/**
 * Checks `body` against `model`. Throws a 400 StatusError for a type error (as the JSON decoder
 * would, whatever the validation level); returns the unknown fields for the caller to apply its
 * field-validation level to.
 */
export function checkSchema(
  model: string,
  kind: string,
  version: string,
  body: unknown,
): SchemaCheck {
  const unknownFields: string[] = [];
  try {
    walk({ kind: "model", model }, body, "", kind, unknownFields, "");
  } catch (e) {
    if (e instanceof DecodeError) {
      throw badRequest(
        `${kind} in version "${version}" cannot be handled as a ${kind}: ${e.message}`,
      );
    }
    throw e;
  }
  return { unknownFields };
}

/** Removes the fields checkSchema reported (fieldValidation=Ignore/Warn drops them). */
export function dropUnknownFields(model: string, body: unknown): void {
  prune({ kind: "model", model }, body);
}

function prune(t: TypeDesc, v: unknown): void {
  if (v === null || typeof v !== "object") return;
  if (t.kind === "model" && !Array.isArray(v)) {
    const fields = modelFields(t.model)!;
    const obj = v as Record<string, unknown>;
    for (const k of Object.keys(obj)) {
      const a = fields.get(k);
      if (!a) delete obj[k];
      else prune(describeType(a.type, a.format), obj[k]);
    }
  } else if (t.kind === "array" && Array.isArray(v)) {
    for (const item of v) prune(describeType(t.item, t.format), item);
  } else if (t.kind === "map" && !Array.isArray(v)) {
    for (const item of Object.values(v)) prune(describeType(t.value, t.format), item);
  }
}

function walk(
  t: TypeDesc,
  v: unknown,
  path: string,
  top: string,
  unknown: string[],
  quantityKey: string,
): void {
  if (v === null || v === undefined) return; // Go's decoder takes null for any field.
  const goField = path.replace(/\[\d+\]/g, "");
  const fail = (): never => {
    throw new DecodeError(
      `json: cannot unmarshal ${jsonTypeName(v)} into Go struct field ${top}.${goField} of type ${goTypeName(t)}`,
    );
  };
  if (QUANTITY_FIELDS.has(quantityKey)) {
    // A map of quantities, or one quantity.
    const check = (q: unknown, p: string) => {
      if (typeof q === "number") return;
      if (typeof q !== "string" || !QUANTITY_RE.test(q.trim())) {
        throw new DecodeError(
          `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (${p})`,
        );
      }
    };
    if (t.kind === "map") {
      if (typeof v !== "object" || Array.isArray(v)) fail();
      for (const [k, q] of Object.entries(v)) check(q, `${path}.${k}`);
    } else check(v, path);
    return;
  }
  switch (t.kind) {
    case "any":
      return;
    case "string":
      if (typeof v !== "string") fail();
      if (t.format === "byte" && !BASE64_RE.test(v as string)) {
        throw new DecodeError(`illegal base64 data at input byte ${firstBadBase64(v as string)}`);
      }
      return;
    case "number":
      if (typeof v !== "number") fail();
      if ((t.format === "int32" || t.format === "int64") && !Number.isInteger(v)) {
        throw new DecodeError(
          `json: cannot unmarshal number ${JSON.stringify(v)} into Go struct field ${top}.${goField} of type ${goTypeName(t)}`,
        );
      }
      if (t.format === "int32" && ((v as number) > 2 ** 31 - 1 || (v as number) < -(2 ** 31))) {
        throw new DecodeError(
          `json: cannot unmarshal number ${JSON.stringify(v)} into Go struct field ${top}.${goField} of type int32`,
        );
      }
      return;
    case "boolean":
      if (typeof v !== "boolean") fail();
      return;
    case "date":
      if (typeof v !== "string") fail();
      if (!RFC3339_RE.test(v as string) || Number.isNaN(Date.parse(v as string))) {
        throw new DecodeError(
          `parsing time ${JSON.stringify(JSON.stringify(v))} as "\\"2006-01-02T15:04:05Z07:00\\"": cannot parse ${JSON.stringify(v)} as RFC 3339`,
        );
      }
      return;
    case "intOrString":
      if (typeof v === "string") return;
      if (typeof v === "number" && Number.isInteger(v)) return;
      throw new DecodeError(
        `json: cannot unmarshal ${jsonTypeName(v)} into Go value of type intstr.IntOrString`,
      );
    case "array": {
      if (!Array.isArray(v)) fail();
      const item = describeType(t.item, t.format);
      (v as unknown[]).forEach((x, i) => walk(item, x, `${path}[${i}]`, top, unknown, ""));
      return;
    }
    case "map": {
      if (typeof v !== "object" || Array.isArray(v)) fail();
      const value = describeType(t.value, t.format);
      // Go reports map values under the map's own field name; unknown fields inside get the key.
      for (const [k, x] of Object.entries(v))
        walk(value, x, value.kind === "model" ? `${path}[${k}]` : path, top, unknown, "");
      return;
    }
    case "model": {
      if (typeof v !== "object" || Array.isArray(v)) fail();
      const fields = modelFields(t.model)!;
      for (const [k, x] of Object.entries(v)) {
        const p = path === "" ? k : `${path}.${k}`;
        const a = fields.get(k);
        if (!a) {
          unknown.push(p);
          continue;
        }
        walk(describeType(a.type, a.format), x, p, top, unknown, `${t.model}.${k}`);
      }
      return;
    }
  }
}

function firstBadBase64(s: string): number {
  for (let i = 0; i < s.length; i++) {
    if (!/[A-Za-z0-9+/=]/.test(s[i]!)) return i;
  }
  return s.length;
}
