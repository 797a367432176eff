import { formatGoDurationNanos, tryParseGoDurationNanos } from "./duration.js";
import { childPath, isMapping } from "./values.js";

// A description of a Go struct as encoding/json sees it, for the component configurations
// kubeadm decodes into their Go types and marshals back whole (componentconfigs handler.Marshal).
// Marshalling follows encoding/json: a field without `omitempty` is always written (its Go zero
// value when unset: "", 0, false, or null for a pointer or slice); `omitempty` drops a nil
// pointer and a zero scalar, never a struct; fields the type does not know are dropped. The
// same description finds those unknown fields, as kubeadm's strict decoding does.

export type GoField =
  /** A scalar, pointer to scalar, or a type with its own JSON form (metav1.Duration). */
  | {
      kind: "scalar";
      /** Written when the field is unset and not omitted. */
      zero: unknown;
      omitEmpty?: boolean;
      /** A pointer: omitempty drops only nil, and an explicit zero value is kept. */
      pointer?: boolean;
      /** metav1.Duration and friends: a duration string is written in Go's canonical form. */
      duration?: boolean;
    }
  /** A struct, always written; `pointer` makes it a *Struct with omitempty (written when set). */
  | { kind: "struct"; fields: GoFields; pointer?: boolean }
  /** A slice; the items of a slice of structs are checked and marshalled field by field. */
  | { kind: "list"; of?: GoFields; omitEmpty?: boolean }
  /** A map or any other free-form value, written as given. */
  | { kind: "free"; omitEmpty?: boolean };

export type GoFields = Record<string, GoField>;

/** Constructors that keep type descriptions short. */
export const go = {
  /** string/int/bool with `omitempty`. */
  opt: (zero: unknown): GoField => ({ kind: "scalar", zero, omitEmpty: true }),
  /** string/int/bool without `omitempty`. */
  val: (zero: unknown): GoField => ({ kind: "scalar", zero }),
  /** *T with `omitempty`. */
  ptr: (): GoField => ({ kind: "scalar", zero: null, omitEmpty: true, pointer: true }),
  /** *T without `omitempty`: null when unset. */
  nullable: (): GoField => ({ kind: "scalar", zero: null, pointer: true }),
  /** metav1.Duration: always written, "0s" when unset. */
  duration: (): GoField => ({ kind: "scalar", zero: "0s", duration: true }),
  /** *metav1.Duration with `omitempty`. */
  durationPtr: (): GoField => ({
    kind: "scalar",
    zero: null,
    omitEmpty: true,
    pointer: true,
    duration: true,
  }),
  /** *metav1.Duration without `omitempty`. */
  nullableDuration: (): GoField => ({ kind: "scalar", zero: null, pointer: true, duration: true }),
  struct: (fields: GoFields): GoField => ({ kind: "struct", fields }),
  /** *Struct with `omitempty`. */
  structPtr: (fields: GoFields): GoField => ({ kind: "struct", fields, pointer: true }),
  /** []T with `omitempty`. */
  list: (of?: GoFields): GoField => ({ kind: "list", omitEmpty: true, ...(of ? { of } : {}) }),
  /** []T without `omitempty`: null when unset. */
  nullableList: (of?: GoFields): GoField => ({ kind: "list", ...(of ? { of } : {}) }),
  /** map[K]V with `omitempty`. */
  map: (): GoField => ({ kind: "free", omitEmpty: true }),
  /** A value written as given, null when unset. */
  free: (): GoField => ({ kind: "free" }),
} as const;

/** encoding/json's isEmptyValue for what YAML can hold. */
function isEmptyValue(value: unknown): boolean {
  if (value === undefined || value === null || value === "" || value === false || value === 0)
    return true;
  if (Array.isArray(value)) return value.length === 0;
  return isMapping(value) && Object.keys(value).length === 0;
}

/** metav1.Duration marshals through time.Duration.String ("60s" → "1m0s"). */
function canonicalDuration(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const nanos = tryParseGoDurationNanos(value);
  return nanos === undefined ? value : formatGoDurationNanos(nanos);
}

function marshalField(field: GoField, value: unknown): { value: unknown } | undefined {
  const absent = value === undefined || value === null;
  switch (field.kind) {
    case "scalar": {
      if (absent) return field.omitEmpty ? undefined : { value: field.zero };
      if (field.omitEmpty && !field.pointer && isEmptyValue(value)) return undefined;
      return { value: field.duration ? canonicalDuration(value) : structuredClone(value) };
    }
    case "struct":
      if (field.pointer && absent) return undefined;
      return { value: marshalGoStruct(field.fields, value) };
    case "list": {
      if (field.omitEmpty && isEmptyValue(value)) return undefined;
      if (!Array.isArray(value)) return { value: absent ? null : structuredClone(value) };
      const of = field.of;
      return {
        value: of ? value.map((item) => marshalGoStruct(of, item)) : structuredClone(value),
      };
    }
    case "free":
      if (field.omitEmpty && isEmptyValue(value)) return undefined;
      return { value: absent ? null : structuredClone(value) };
  }
}

/** The object encoding/json writes for `given` decoded into the struct `fields` describe. */
export function marshalGoStruct(fields: GoFields, given: unknown): Record<string, unknown> {
  const source = isMapping(given) ? given : {};
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(fields)) {
    const written = marshalField(field, source[name]);
    if (written) out[name] = written.value;
  }
  return out;
}

/**
 * Paths of the fields in `given` that the struct does not have ("logging.format2",
 * "reservedMemory[0].node"), as strict decoding reports them; free-form values are not entered.
 */
export function unknownGoFields(fields: GoFields, given: unknown, path = ""): string[] {
  if (!isMapping(given)) return [];
  const found: string[] = [];
  for (const [name, value] of Object.entries(given)) {
    const field = fields[name];
    const here = childPath(path, name);
    if (!field) found.push(here);
    else if (field.kind === "struct") found.push(...unknownGoFields(field.fields, value, here));
    else if (field.kind === "list" && field.of && Array.isArray(value)) {
      const of = field.of;
      value.forEach((item, i) => found.push(...unknownGoFields(of, item, childPath(here, i))));
    }
  }
  return found;
}
