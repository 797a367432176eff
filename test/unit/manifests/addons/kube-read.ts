import * as k8s from "@kubernetes/client-node";
import { execFileSync } from "node:child_process";
import { toYAMLDocuments } from "../../../../src/config/yaml.js";
import type { KubeObject } from "../../../../src/kube/types.js";

// Reading objects back the way Kubernetes does, offline:
// 1. kubectl (Kubernetes' own YAML/JSON decoder) reads the YAML we would print and returns JSON;
// 2. that JSON is checked field by field against the Kubernetes API schema, as generated into
//    @kubernetes/client-node's models from the OpenAPI spec: an unknown field or a wrong type
//    fails. (`kubectl label --local` alone does not validate, and kubectl's own validation needs
//    a server's OpenAPI document.)

type AttributeType = { baseName: string; type: string; format: string };
type Model = { getAttributeTypeMap(): AttributeType[] };

const MODELS: Record<string, string> = {
  "v1/ConfigMap": "V1ConfigMap",
  "v1/Namespace": "V1Namespace",
  "v1/Pod": "V1Pod",
  "storage.k8s.io/v1/StorageClass": "V1StorageClass",
  "v1/Service": "V1Service",
  "v1/ServiceAccount": "V1ServiceAccount",
  "apps/v1/Deployment": "V1Deployment",
  "apps/v1/DaemonSet": "V1DaemonSet",
  "rbac.authorization.k8s.io/v1/ClusterRole": "V1ClusterRole",
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": "V1ClusterRoleBinding",
  "rbac.authorization.k8s.io/v1/Role": "V1Role",
  "rbac.authorization.k8s.io/v1/RoleBinding": "V1RoleBinding",
};

function model(name: string): Model {
  const m = (k8s as unknown as Record<string, Model | undefined>)[name];
  if (!m || typeof m.getAttributeTypeMap !== "function") {
    throw new Error(`no model ${name} in @kubernetes/client-node`);
  }
  return m;
}

function checkValue(value: unknown, type: string, format: string, path: string, out: string[]) {
  if (value === null) return; // optional fields may be null in JSON
  const list = /^Array<(.+)>$/.exec(type);
  if (list) {
    if (!Array.isArray(value)) out.push(`${path}: expected a list`);
    else value.forEach((item, i) => checkValue(item, list[1]!, "", `${path}[${i}]`, out));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value !== "object" || Array.isArray(value)) out.push(`${path}: expected a map`);
    else
      for (const [k, item] of Object.entries(value))
        checkValue(item, map[1]!, "", `${path}.${k}`, out);
    return;
  }
  switch (type) {
    case "string":
    case "Date":
      if (typeof value !== "string") out.push(`${path}: expected a string`);
      return;
    case "number":
      if (typeof value !== "number") out.push(`${path}: expected a number`);
      else if (format.startsWith("int") && !Number.isInteger(value))
        out.push(`${path}: expected an integer`);
      return;
    case "boolean":
      if (typeof value !== "boolean") out.push(`${path}: expected a boolean`);
      return;
    case "IntOrString":
      if (typeof value !== "string" && !Number.isInteger(value))
        out.push(`${path}: expected an integer or a string`);
      return;
    case "any":
      return;
    default:
      checkModel(value, model(type), path, out);
  }
}

function checkModel(value: unknown, m: Model, path: string, out: string[]) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    out.push(`${path}: expected an object`);
    return;
  }
  const attributes = new Map(m.getAttributeTypeMap().map((a) => [a.baseName, a]));
  for (const [key, item] of Object.entries(value)) {
    const a = attributes.get(key);
    if (!a) out.push(`${path}.${key}: unknown field`);
    else checkValue(item, a.type, a.format, `${path}.${key}`, out);
  }
}

/** The schema problems of one object ([] when it matches the Kubernetes API schema). */
export function schemaProblems(obj: unknown): string[] {
  const o = obj as { apiVersion?: string; kind?: string };
  const name = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!name) return [`no schema known for ${o.apiVersion}/${o.kind}`];
  const out: string[] = [];
  checkModel(obj, model(name), o.kind!, out);
  return out;
}

/** Splits kubectl's output: JSON objects printed one after another. */
function splitJSONObjects(text: string): unknown[] {
  const objects: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") {
      if (depth++ === 0) start = i;
    } else if (c === "}" && --depth === 0) objects.push(JSON.parse(text.slice(start, i + 1)));
  }
  return objects;
}

/**
 * Gives kubectl the objects as one YAML stream (as a dry run prints them) to read, and
 * returns what kubectl read, without the label it was asked to add.
 */
export function kubectlRead(objects: readonly KubeObject[]): Record<string, unknown>[] {
  const out = execFileSync(
    "kubectl",
    ["label", "--local", "-f", "-", "kubeforge=test", "-o", "json"],
    {
      input: toYAMLDocuments([...objects]),
      encoding: "utf8",
      env: { ...process.env, KUBECONFIG: "/dev/null" },
    },
  );
  return splitJSONObjects(out).map((o) => {
    const obj = o as { metadata: { labels?: Record<string, string> } };
    delete obj.metadata.labels!.kubeforge;
    if (Object.keys(obj.metadata.labels!).length === 0) delete obj.metadata.labels;
    return obj;
  });
}
