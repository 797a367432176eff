// SIMULATION (test double). The three PATCH content types kube-apiserver takes for built-in kinds.
// k8s: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go (dispatch by Content-Type),
// staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go (strategic merge),
// RFC 7386 (JSON merge patch, evanphx/json-patch MergePatch), RFC 6902 (JSON patch).
import jsonpatch, { type Operation } from "fast-json-patch";
import { describeType, fieldType, type TypeDesc } from "./schema.js";
import { badRequest, failure, type StatusError } from "./status.js";

export type PatchType = "strategic" | "merge" | "json";

export const PATCH_CONTENT_TYPES: Record<string, PatchType> = {
  "application/strategic-merge-patch+json": "strategic",
  "application/merge-patch+json": "merge",
  "application/json-patch+json": "json",
};

// patchStrategy / patchMergeKey struct tags of the list fields kubeadm and kubelets touch.
// Lists not named here are atomic (replaced), maps merge key by key.
// k8s: staging/src/k8s.io/api/core/v1/types.go, staging/src/k8s.io/api/apps/v1/types.go,
// staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go
interface ListStrategy {
  /** Merge key for lists of objects; absent for lists of primitives merged as sets. */
  key?: string;
  retainKeys?: boolean;
}
const MERGE_LISTS: Record<string, ListStrategy> = {
  "V1ObjectMeta.finalizers": {},
  "V1ObjectMeta.ownerReferences": { key: "uid" },
  "V1PodSpec.volumes": { key: "name", retainKeys: true },
  "V1PodSpec.initContainers": { key: "name" },
  "V1PodSpec.containers": { key: "name" },
  "V1PodSpec.ephemeralContainers": { key: "name" },
  "V1PodSpec.imagePullSecrets": { key: "name" },
  "V1PodSpec.hostAliases": { key: "ip" },
  "V1PodSpec.schedulingGates": { key: "name" },
  "V1PodSpec.resourceClaims": { key: "name", retainKeys: true },
  "V1Container.ports": { key: "containerPort" },
  "V1Container.env": { key: "name" },
  "V1Container.volumeMounts": { key: "mountPath" },
  "V1Container.volumeDevices": { key: "devicePath" },
  "V1EphemeralContainer.ports": { key: "containerPort" },
  "V1EphemeralContainer.env": { key: "name" },
  "V1EphemeralContainer.volumeMounts": { key: "mountPath" },
  "V1EphemeralContainer.volumeDevices": { key: "devicePath" },
  "V1PodStatus.conditions": { key: "type" },
  "V1PodStatus.podIPs": { key: "ip" },
  "V1PodStatus.hostIPs": { key: "ip" },
  "V1PodStatus.resourceClaimStatuses": { key: "name", retainKeys: true },
  "V1NodeSpec.podCIDRs": {},
  "V1NodeStatus.conditions": { key: "type" },
  "V1NodeStatus.addresses": { key: "type" },
  "V1NamespaceStatus.conditions": { key: "type" },
  "V1ServiceSpec.ports": { key: "port" },
  "V1ServiceStatus.conditions": { key: "type" },
  "V1ServiceAccount.secrets": { key: "name" },
  "V1DeploymentStatus.conditions": { key: "type" },
  "V1DaemonSetStatus.conditions": { key: "type" },
};

type Json = Record<string, unknown>;

function isMap(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function invalidPatch(message: string): StatusError {
  return failure(422, "Invalid", message);
}

/** Applies `patch` of `type` to `original` (not modified); `model` drives strategic merge. */
export function applyObjectPatch(
  original: Json,
  patch: unknown,
  type: PatchType,
  model: string,
): Json {
  switch (type) {
    case "merge":
      if (!isMap(patch))
        throw badRequest(
          "json: cannot unmarshal array into Go value of type map[string]interface {}",
        );
      return mergePatch(clone(original), patch) as Json;
    case "json": {
      if (!Array.isArray(patch)) {
        throw badRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
      }
      try {
        const result = jsonpatch.applyPatch(
          clone(original),
          patch as Operation[],
          true,
          true,
        ).newDocument;
        if (!isMap(result)) throw new Error("the patched document is not an object");
        return result;
      } catch (e) {
        const msg = e instanceof Error ? e.message.split("\n")[0]! : String(e);
        throw invalidPatch(
          `the server rejected our request due to an error in our request: ${msg}`,
        );
      }
    }
    case "strategic":
      if (!isMap(patch))
        throw badRequest(
          "json: cannot unmarshal array into Go value of type map[string]interface {}",
        );
      return mergeMap(clone(original), clone(patch), { kind: "model", model });
  }
}

/** RFC 7386. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isMap(patch)) return clone(patch);
  const out: Json = isMap(target) ? target : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const DIRECTIVE = "$patch";
const RETAIN_KEYS = "$retainKeys";
const DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER = "$setElementOrder/";

function childType(t: TypeDesc, key: string): { type: TypeDesc; owner?: string } {
  if (t.kind === "model") {
    const ft = fieldType(t.model, key);
    return { type: ft ?? { kind: "any", format: "" }, owner: `${t.model}.${key}` };
  }
  if (t.kind === "map") return { type: describeType(t.value, t.format) };
  return { type: { kind: "any", format: "" } };
}

function mergeMap(original: Json, patch: Json, t: TypeDesc): Json {
  const directive = patch[DIRECTIVE];
  if (directive === "replace") {
    delete patch[DIRECTIVE];
    return patch;
  }
  if (directive === "delete") return {};
  if (directive !== undefined)
    throw badRequest(`Unknown patch directive: ${JSON.stringify(directive)}`);

  const retain = patch[RETAIN_KEYS];
  if (retain !== undefined) {
    if (!Array.isArray(retain)) throw badRequest("$retainKeys must be a list");
    for (const k of Object.keys(original)) if (!retain.includes(k)) delete original[k];
    delete patch[RETAIN_KEYS];
  }

  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(SET_ELEMENT_ORDER)) continue; // ordering hint only
    if (key.startsWith(DELETE_FROM_PRIMITIVE)) {
      const field = key.slice(DELETE_FROM_PRIMITIVE.length);
      const cur = original[field];
      if (Array.isArray(cur) && Array.isArray(value)) {
        original[field] = cur.filter((x) => !value.some((d) => deepEqual(d, x)));
      }
      continue;
    }
    if (value === null) {
      delete original[key];
      continue;
    }
    const { type, owner } = childType(t, key);
    const cur = original[key];
    if (isMap(value) && isMap(cur)) {
      original[key] = mergeMap(cur, value, type);
    } else if (isMap(value)) {
      original[key] = mergeMap({}, value, type);
    } else if (Array.isArray(value)) {
      const strategy = owner ? MERGE_LISTS[owner] : undefined;
      original[key] = mergeList(Array.isArray(cur) ? cur : [], value, type, strategy);
    } else {
      original[key] = value;
    }
  }
  return original;
}

function mergeList(
  original: unknown[],
  patch: unknown[],
  t: TypeDesc,
  strategy?: ListStrategy,
): unknown[] {
  // A `{$patch: replace}` element replaces the whole list with the other elements.
  if (patch.some((x) => isMap(x) && x[DIRECTIVE] === "replace")) {
    return patch.filter((x) => !(isMap(x) && x[DIRECTIVE] === "replace"));
  }
  if (!strategy) return stripDirectives(patch); // atomic list
  const itemType =
    t.kind === "array" ? describeType(t.item, t.format) : ({ kind: "any", format: "" } as TypeDesc);
  const key = strategy.key;
  if (key === undefined) {
    // Set of primitives: union, original order first.
    const out = [...original];
    for (const x of patch) if (!out.some((y) => deepEqual(x, y))) out.push(x);
    return out;
  }
  const out = [...original];
  for (const item of patch) {
    if (!isMap(item)) {
      out.push(item);
      continue;
    }
    const k = item[key];
    if (k === undefined) {
      throw badRequest(`map: ${JSON.stringify(item)} does not contain declared merge key: ${key}`);
    }
    const idx = out.findIndex((x) => isMap(x) && deepEqual(x[key], k));
    if (item[DIRECTIVE] === "delete") {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = mergeMap(out[idx] as Json, item, itemType);
    else out.push(mergeMap({}, item, itemType));
  }
  return out;
}

function stripDirectives(list: unknown[]): unknown[] {
  return list.map((x) => {
    if (!isMap(x)) return x;
    const { [DIRECTIVE]: _drop, ...rest } = x;
    return rest;
  });
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return (
      ka.length === kb.length &&
      ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]))
    );
  }
  return false;
}
