// A two-way strategic merge patch (original → modified), as
// k8s.io/apimachinery/pkg/util/strategicpatch CreateTwoWayMergePatch computes it for kubeadm's
// apiclient.PatchNodeOnce: maps are diffed key by key (a removed key becomes null), lists without
// a patch strategy are replaced whole, and the patch is marshalled with sorted keys (Go encodes
// the patch as map[string]interface{}). Lists declared `patchStrategy:"merge"` need directives
// ($setElementOrder, $patch: delete) that kubeadm's mutations never produce; a change to one is
// refused instead of being sent wrong.

type JSON = null | boolean | number | string | JSON[] | { [key: string]: JSON };
type JSONMap = { [key: string]: JSON };

/** Field paths ("spec.podCIDRs") whose lists merge instead of being replaced. */
export type MergeListPaths = ReadonlySet<string>;

/**
 * The merge lists of core/v1 Node (k8s.io/api core/v1 types.go): ObjectMeta.finalizers and
 * ownerReferences, NodeSpec.podCIDRs, NodeStatus.conditions and addresses. NodeSpec.taints has
 * no patch strategy: a taint change replaces the whole list.
 */
export const NODE_MERGE_LISTS: MergeListPaths = new Set([
  "metadata.finalizers",
  "metadata.ownerReferences",
  "spec.podCIDRs",
  "status.conditions",
  "status.addresses",
]);

function isMap(value: unknown): value is JSONMap {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Go's `omitempty`: an empty list or map is marshalled as an absent field. */
function isEmptyCollection(value: unknown): boolean {
  return Array.isArray(value)
    ? value.length === 0
    : isMap(value) && Object.keys(value).length === 0;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isMap(a) && isMap(b)) {
    const keys = Object.keys(a).filter((k) => a[k] !== undefined);
    const other = Object.keys(b).filter((k) => b[k] !== undefined);
    return keys.length === other.length && keys.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** A copy with every map's keys in sorted order, as encoding/json writes map[string]interface{}. */
export function sortKeysDeep<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => sortKeysDeep(item)) as T;
  if (isMap(value)) {
    const out: JSONMap = {};
    for (const key of Object.keys(value).sort()) {
      if (value[key] !== undefined) out[key] = sortKeysDeep<JSON>(value[key]);
    }
    return out as T;
  }
  return value;
}

function present(map: JSONMap, key: string): boolean {
  return map[key] !== undefined && !isEmptyCollection(map[key]);
}

function diffMaps(
  original: JSONMap,
  modified: JSONMap,
  path: string,
  merge: MergeListPaths,
): JSONMap {
  const patch: JSONMap = {};
  const keys = new Set([...Object.keys(original), ...Object.keys(modified)]);
  for (const key of [...keys].sort()) {
    const field = path ? `${path}.${key}` : key;
    const inOriginal = present(original, key);
    const inModified = present(modified, key);
    if (!inModified) {
      if (inOriginal) {
        if (merge.has(field)) throw unsupported(field);
        patch[key] = null;
      }
      continue;
    }
    const before = original[key];
    const after = modified[key]!;
    if (!inOriginal) {
      if (merge.has(field)) throw unsupported(field);
      patch[key] = sortKeysDeep(after);
    } else if (isMap(before) && isMap(after)) {
      const sub = diffMaps(before, after, field, merge);
      if (Object.keys(sub).length > 0) patch[key] = sub;
    } else if (!deepEqual(before, after)) {
      if (merge.has(field)) throw unsupported(field);
      patch[key] = sortKeysDeep(after);
    }
  }
  return patch;
}

function unsupported(field: string): Error {
  return new Error(
    `cannot compute a strategic merge patch that changes ${field}: it is a merge list, which needs patch directives kubeforge does not generate`,
  );
}

/** The strategic merge patch that turns `original` into `modified` ({} when they are equal). */
export function createTwoWayMergePatch(
  original: object,
  modified: object,
  mergeLists: MergeListPaths = new Set(),
): Record<string, unknown> {
  const toJSON = (value: object): JSONMap => JSON.parse(JSON.stringify(value)) as JSONMap;
  return diffMaps(toJSON(original), toJSON(modified), "", mergeLists);
}
