import * as k8s from "@kubernetes/client-node";
import type { KubeObject } from "../../../../src/kube/types.js";

// A strict reading of an object against the Kubernetes API schema, as kube-apiserver's
// fieldValidation=Strict would: every field must be declared and of the declared JSON type.
// The schema is @kubernetes/client-node's generated models (their getAttributeTypeMap() lists
// each OpenAPI field with its type and format), an independent second opinion on our objects.

interface Attribute {
  baseName: string;
  type: string;
  format: string;
}

const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] }>;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function check(type: string, format: string, value: unknown, path: string, out: string[]): void {
  if (value === null || value === undefined) return; // Go's decoder takes null anywhere
  const array = /^Array<(.+)>$/.exec(type);
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return void out.push(`${path}: not a list`);
    value.forEach((v, i) => check(array[1]!, format, v, `${path}[${i}]`, out));
  } else if (map) {
    if (typeof value !== "object" || Array.isArray(value))
      return void out.push(`${path}: not a map`);
    for (const [k, v] of Object.entries(value)) check(map[1]!, format, v, `${path}.${k}`, out);
  } else if (type === "string") {
    if (typeof value !== "string") out.push(`${path}: not a string`);
    else if (format === "byte" && !BASE64.test(value)) out.push(`${path}: not base64`);
  } else if (type === "boolean" || type === "number") {
    if (typeof value !== type) out.push(`${path}: not a ${type}`);
  } else if (type === "Date") {
    if (typeof value !== "string" || !RFC3339.test(value))
      out.push(`${path}: not an RFC 3339 time`);
  } else if (models[type]?.getAttributeTypeMap) {
    if (typeof value !== "object" || Array.isArray(value))
      return void out.push(`${path}: not an object`);
    const fields = new Map(models[type].getAttributeTypeMap().map((a) => [a.baseName, a]));
    for (const [k, v] of Object.entries(value)) {
      const a = fields.get(k);
      if (!a) out.push(`${path ? `${path}.` : ""}${k}: unknown field`);
      else check(a.type, a.format, v, path ? `${path}.${k}` : k, out);
    }
  } // "any", "object", IntOrString: anything goes
}

/** Problems with `obj` under strict decoding as its kind's v1 model; [] when none. */
export function strictSchemaProblems(obj: KubeObject): string[] {
  const model = `V1${obj.kind}`;
  if (!models[model]?.getAttributeTypeMap) return [`no schema for kind ${obj.kind}`];
  const out: string[] = [];
  check(model, "", obj, "", out);
  return out;
}
