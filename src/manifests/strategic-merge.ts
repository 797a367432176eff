// Kubernetes' strategic merge patch, as k8s.io/apimachinery/pkg/util/strategicpatch/patch.go
// applies it (StrategicMergePatch with MergeParallelList and IgnoreUnmatchedNulls), driven by
// a hand-written schema of the patchStrategy/patchMergeKey struct tags that matter for
// kubeadm's patch targets (k8s.io/api core/v1 and apps/v1 types.go).

export type JSONValue = null | boolean | number | string | JSONValue[] | JSONMap;
export interface JSONMap {
  [key: string]: JSONValue;
}

/** One field's patch metadata: the struct tags `patchStrategy` and `patchMergeKey`. */
export interface FieldSchema {
  /** "merge" lists are merged by `mergeKey` (or as sets of scalars); "replace" maps are replaced. */
  strategy?: "merge" | "replace";
  mergeKey?: string;
  /** The schema of the field's object, or of a list's items. */
  type?: TypeSchema;
}

/** Fields with patch metadata; any other field merges maps and replaces lists. */
export type TypeSchema = { readonly [field: string]: FieldSchema };

// k8s.io/apimachinery meta/v1 ObjectMeta.
const OBJECT_META: TypeSchema = {
  finalizers: { strategy: "merge" },
  ownerReferences: { strategy: "merge", mergeKey: "uid" },
};

// k8s.io/api core/v1 Container (and EphemeralContainer).
const CONTAINER: TypeSchema = {
  ports: { strategy: "merge", mergeKey: "containerPort" },
  env: { strategy: "merge", mergeKey: "name" },
  volumeMounts: { strategy: "merge", mergeKey: "mountPath" },
  volumeDevices: { strategy: "merge", mergeKey: "devicePath" },
};

// k8s.io/api core/v1 PodSpec (tolerations carry no patch strategy: they are replaced).
const POD_SPEC: TypeSchema = {
  volumes: { strategy: "merge", mergeKey: "name" },
  initContainers: { strategy: "merge", mergeKey: "name", type: CONTAINER },
  containers: { strategy: "merge", mergeKey: "name", type: CONTAINER },
  ephemeralContainers: { strategy: "merge", mergeKey: "name", type: CONTAINER },
  imagePullSecrets: { strategy: "merge", mergeKey: "name" },
  hostAliases: { strategy: "merge", mergeKey: "ip" },
  topologySpreadConstraints: { strategy: "merge", mergeKey: "topologyKey" },
  resourceClaims: { strategy: "merge", mergeKey: "name" },
  schedulingGates: { strategy: "merge", mergeKey: "name" },
};

const POD_STATUS: TypeSchema = {
  conditions: { strategy: "merge", mergeKey: "type" },
};

/** core/v1 Pod: the static Pod targets (etcd, kube-apiserver, ...). */
export const POD_SCHEMA: TypeSchema = {
  metadata: { type: OBJECT_META },
  spec: { type: POD_SPEC },
  status: { type: POD_STATUS },
};

/** apps/v1 Deployment: the corednsdeployment target. */
export const DEPLOYMENT_SCHEMA: TypeSchema = {
  metadata: { type: OBJECT_META },
  spec: {
    type: {
      template: { type: { metadata: { type: OBJECT_META }, spec: { type: POD_SPEC } } },
    },
  },
  status: { type: { conditions: { strategy: "merge", mergeKey: "type" } } },
};

/** kubelet.config.k8s.io/v1beta1 KubeletConfiguration carries no patch tags. */
export const KUBELET_CONFIGURATION_SCHEMA: TypeSchema = {};

const DIRECTIVE = "$patch";
const RETAIN_KEYS = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER = "$setElementOrder";

type Kind = "map" | "list" | "string" | "number" | "boolean" | "null";

function kindOf(v: JSONValue): Kind {
  if (v === null) return "null";
  if (Array.isArray(v)) return "list";
  if (typeof v === "object") return "map";
  return typeof v as "string" | "number" | "boolean";
}

function isMap(v: JSONValue | undefined): v is JSONMap {
  return v !== undefined && kindOf(v) === "map";
}

/**
 * Applies a strategic merge patch to `original` (neither is modified). The patch must be an
 * object; errors are the library's, in one sentence.
 */
export function strategicMergePatch(
  original: JSONValue,
  patch: JSONValue,
  schema: TypeSchema,
): JSONMap {
  if (!isMap(patch)) throw new Error("a strategic merge patch must be a JSON object");
  const base = isMap(original) ? structuredClone(original) : {};
  return mergeMap(base, structuredClone(patch), schema);
}

function mergeMap(original: JSONMap | undefined, patch: JSONMap, schema?: TypeSchema): JSONMap {
  if (DIRECTIVE in patch) return mapDirective(patch);
  const out: JSONMap = original ?? {};
  applyRetainKeys(out, patch);
  mergeSetElementOrder(out, patch, schema);

  for (const [key, patchValue] of Object.entries(patch)) {
    let k = key;
    let isDeleteList = false;
    if (key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      k = directiveField(key, DELETE_FROM_PRIMITIVE_LIST);
      isDeleteList = true;
    }
    // null deletes the field; an unmatched null is dropped (IgnoreUnmatchedNulls).
    if (patchValue === null) {
      delete out[k];
      continue;
    }
    if (!(k in out)) {
      out[k] = patchValue;
      continue;
    }
    const current = out[k]!;
    if (kindOf(current) !== kindOf(patchValue)) {
      out[k] = patchValue;
      continue;
    }
    const field = schema?.[k];
    if (isMap(current)) {
      out[k] =
        field?.strategy === "replace"
          ? patchValue
          : mergeMap(current, patchValue as JSONMap, field?.type);
    } else if (Array.isArray(current)) {
      out[k] =
        field?.strategy === "merge"
          ? mergeList(
              current,
              patchValue as JSONValue[],
              field.mergeKey ?? "",
              field.type,
              isDeleteList,
            )
          : patchValue;
    } else {
      out[k] = patchValue;
    }
  }
  return out;
}

/** `$patch: replace` takes the map as given; `$patch: delete` leaves an empty map. */
function mapDirective(patch: JSONMap): JSONMap {
  const directive = patch[DIRECTIVE];
  if (directive === "replace") {
    const replaced = { ...patch };
    delete replaced[DIRECTIVE];
    return replaced;
  }
  if (directive === "delete") return {};
  throw new Error(`unexpected patch directive "$patch: ${JSON.stringify(directive)}"`);
}

function directiveField(key: string, prefix: string): string {
  const slash = key.indexOf("/");
  if (slash < 0 || key.slice(0, slash) !== prefix) {
    throw new Error(`invalid patch: "${key}" must have the form "${prefix}/<field>"`);
  }
  return key.slice(slash + 1);
}

/** `$retainKeys: [...]` clears every original field not listed. */
function applyRetainKeys(original: JSONMap, patch: JSONMap): void {
  if (!(RETAIN_KEYS in patch)) return;
  const list = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw new Error("invalid patch: $retainKeys must be a list");
  const keep = new Set(list);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST) || k.startsWith(SET_ELEMENT_ORDER)) {
      continue;
    }
    if (!keep.has(k)) {
      throw new Error(`invalid patch: field "${k}" is set but not listed in $retainKeys`);
    }
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
}

/** `$setElementOrder/<field>`: merges that list now and orders it as the directive says. */
function mergeSetElementOrder(original: JSONMap, patch: JSONMap, schema?: TypeSchema): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = patch[key]!;
    delete patch[key];
    if (!Array.isArray(order)) throw new Error(`invalid patch: ${key} must be a list`);
    const field = directiveField(key, SET_ELEMENT_ORDER);
    const originalList = original[field];
    const patchList = patch[field];
    if (originalList !== undefined && !Array.isArray(originalList)) {
      throw new Error(`invalid patch: ${key} applies to "${field}", which is not a list`);
    }
    if (patchList !== undefined && !Array.isArray(patchList)) {
      throw new Error(`invalid patch: ${key} applies to "${field}", which is not a list`);
    }
    const meta = schema?.[field];
    const mergeKey = meta?.strategy === "merge" ? (meta.mergeKey ?? "") : "";
    checkOrderCoversPatch(patchList ?? [], order, mergeKey);

    let merged: JSONValue[];
    if (originalList && !patchList) merged = originalList;
    else if (!originalList && patchList) merged = patchList;
    else if (originalList && patchList) {
      merged =
        meta?.strategy === "merge"
          ? mergeList(originalList, patchList, mergeKey, meta.type, false)
          : patchList;
    } else return;

    const [inOrder, serverOnly] = partition(merged, order, mergeKey);
    const kind = elementKind(originalList ?? [], patchList ?? []);
    original[field] = normalizeElementOrder(
      inOrder,
      serverOnly,
      order,
      originalList ?? [],
      mergeKey,
      kind,
    );
    delete patch[field];
  }
}

/** The patch's items must appear in the $setElementOrder list, in the same relative order. */
function checkOrderCoversPatch(patchList: JSONValue[], order: JSONValue[], mergeKey: string): void {
  if (patchList.length === 0 || order.length === 0) return;
  const items = mergeKey ? patchList.filter((v) => !isDeleteItem(v)) : patchList;
  let p = 0;
  let o = 0;
  while (p < items.length && o < order.length) {
    if (isMap(items[p]) && DIRECTIVE in (items[p] as JSONMap)) {
      p++;
      continue;
    }
    if (sameKey(items[p]!, order[o]!, mergeKey)) p++;
    o++;
  }
  if (p < items.length) {
    throw new Error(
      `invalid patch: the order of the patch list does not match its ${SET_ELEMENT_ORDER} list`,
    );
  }
}

function sameKey(a: JSONValue, b: JSONValue, mergeKey: string): boolean {
  if (!mergeKey) return a === b;
  if (!isMap(a) || !isMap(b) || !(mergeKey in a) || !(mergeKey in b)) {
    throw new Error(`invalid patch: list items must be objects with the merge key "${mergeKey}"`);
  }
  return a[mergeKey] === b[mergeKey];
}

function isDeleteItem(v: JSONValue): boolean {
  return isMap(v) && v[DIRECTIVE] === "delete";
}

function elementKind(...lists: JSONValue[][]): Kind {
  let kind: Kind | undefined;
  for (const list of lists) {
    for (const v of list) {
      const k = kindOf(v);
      if (k === "list") throw new Error("invalid patch: lists of lists cannot be merged");
      if (kind !== undefined && k !== kind) {
        throw new Error("invalid patch: list element types are not identical");
      }
      kind = k;
    }
  }
  if (kind === undefined) throw new Error("invalid patch: no elements in any of the given lists");
  return kind;
}

/** patch.go mergeSlice. */
function mergeList(
  original: JSONValue[],
  patch: JSONValue[],
  mergeKey: string,
  itemSchema: TypeSchema | undefined,
  isDeleteList: boolean,
): JSONValue[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind(original, patch);
  let merged: JSONValue[];
  if (kind !== "map") {
    // A list of scalars with the merge strategy is a set; $deleteFromPrimitiveList removes.
    if (isDeleteList) return original.filter((v) => !patch.includes(v));
    merged = deduplicateScalars([...original, ...patch]);
  } else {
    if (!mergeKey) throw new Error("cannot merge lists without a merge key");
    [original, patch] = applyListDirectives(original, patch, mergeKey);
    merged = [...original];
    for (const item of patch) {
      const value = mergeKeyValue(item, mergeKey);
      const at = merged.findIndex((m) => isMap(m) && m[mergeKey] === value);
      if (at >= 0) merged[at] = mergeMap(merged[at] as JSONMap, item as JSONMap, itemSchema);
      else merged.push(item);
    }
  }
  const [patchItems, serverOnly] = partition(merged, patch, mergeKey);
  return normalizeElementOrder(patchItems, serverOnly, patch, original, mergeKey, kind);
}

function mergeKeyValue(item: JSONValue, mergeKey: string): JSONValue {
  if (!isMap(item) || !(mergeKey in item)) {
    throw new Error(
      `map ${JSON.stringify(item)} does not contain the declared merge key "${mergeKey}"`,
    );
  }
  return item[mergeKey]!;
}

/** `{$patch: delete, <key>: v}` removes items; `{$patch: replace}` replaces the whole list. */
function applyListDirectives(
  original: JSONValue[],
  patch: JSONValue[],
  mergeKey: string,
): [JSONValue[], JSONValue[]] {
  const plain: JSONValue[] = [];
  let replace = false;
  for (const item of patch) {
    if (!isMap(item) || !(DIRECTIVE in item)) {
      plain.push(item);
      continue;
    }
    const directive = item[DIRECTIVE];
    if (directive === "delete") {
      const value = mergeKeyValue(item, mergeKey);
      original = original.filter((o) => !(isMap(o) && o[mergeKey] === value));
    } else if (directive === "replace") {
      replace = true;
    } else if (directive === "merge") {
      throw new Error("merging lists cannot yet be specified in the patch");
    } else {
      throw new Error(`unexpected patch directive "$patch: ${JSON.stringify(directive)}"`);
    }
  }
  return replace ? [plain, []] : [original, plain];
}

/** patch.go deduplicateScalars, whose swap-with-last also decides the resulting order. */
function deduplicateScalars(s: JSONValue[]): JSONValue[] {
  let length = s.length - 1;
  for (let i = 0; i < length; i++) {
    for (let j = i + 1; j <= length; j++) {
      if (s[i] === s[j]) {
        s[j] = s[length]!;
        s = s.slice(0, length);
        length--;
        j--;
      }
    }
  }
  return s;
}

/** Splits `list` into items present in `by` (by merge key, or by value) and the others. */
function partition(
  list: JSONValue[],
  by: JSONValue[],
  mergeKey: string,
): [JSONValue[], JSONValue[]] {
  const present: JSONValue[] = [];
  const absent: JSONValue[] = [];
  for (const v of list) {
    const found = mergeKey
      ? by.some((b) => isMap(b) && b[mergeKey] === mergeKeyValue(v, mergeKey))
      : by.includes(v);
    (found ? present : absent).push(v);
  }
  return [present, absent];
}

function indexIn(list: JSONValue[], item: JSONValue, mergeKey: string, kind: Kind): number {
  const key = (v: JSONValue): JSONValue | undefined =>
    kind === "map" ? (isMap(v) ? v[mergeKey] : undefined) : v;
  const wanted = key(item);
  return list.findIndex((v) => key(v) === wanted);
}

/**
 * patch.go normalizeElementOrder: patch items in patch order, server-only items in their
 * original order, interleaved by their positions in the original list (new items go first).
 */
function normalizeElementOrder(
  patchItems: JSONValue[],
  serverOnly: JSONValue[],
  patchOrder: JSONValue[],
  serverOrder: JSONValue[],
  mergeKey: string,
  kind: Kind,
): JSONValue[] {
  const left = sortByOrder(serverOnly, serverOrder, mergeKey, kind);
  const right = sortByOrder(patchItems, patchOrder, mergeKey, kind);
  const out: JSONValue[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]!);
    else if (j >= right.length) out.push(left[i++]!);
    else {
      const li = indexIn(serverOrder, left[i]!, mergeKey, kind);
      const ri = indexIn(serverOrder, right[j]!, mergeKey, kind);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]!);
      else out.push(right[j++]!);
    }
  }
  return out;
}

/**
 * patch.go normalizeSliceOrder: `$patch: delete` items last, the rest by their index in
 * `order`, with Go's insertion sort and its comparator (true when either index is unknown).
 */
function sortByOrder(
  items: JSONValue[],
  order: JSONValue[],
  mergeKey: string,
  kind: Kind,
): JSONValue[] {
  let toSort = items;
  let toDelete: JSONValue[] = [];
  if (kind === "map") {
    for (const v of [...items, ...order]) mergeKeyValue(v, mergeKey);
    toSort = items.filter((v) => !isDeleteItem(v));
    toDelete = items.filter(isDeleteItem);
  }
  const less = (a: JSONValue, b: JSONValue): boolean => {
    const ia = indexIn(order, a, mergeKey, kind);
    const ib = indexIn(order, b, mergeKey, kind);
    return ia >= 0 && ib >= 0 ? ia < ib : true;
  };
  const sorted = [...toSort];
  for (let i = 1; i < sorted.length; i++) {
    for (let j = i; j > 0 && less(sorted[j]!, sorted[j - 1]!); j--) {
      [sorted[j], sorted[j - 1]] = [sorted[j - 1]!, sorted[j]!];
    }
  }
  return [...sorted, ...toDelete];
}
