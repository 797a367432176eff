import {
  DEFAULT_SCALAR_STYLE_RULES,
  DUMP_SCHEMA,
  FAILSAFE_SCHEMA,
  NOT_RESOLVED,
  Schema,
  YAMLException,
  boolYaml11Tag,
  defineScalarTag,
  dump,
  floatCoreTag,
  floatYaml11Tag,
  intCoreTag,
  intYaml11Tag,
  loadAll,
  mergeTag,
  nullYaml11Tag,
} from "js-yaml";
import { goKeyCompare, goStringStyle } from "./go-yaml-style.js";

// Kubernetes reads YAML through sigs.k8s.io/yaml, which resolves plain scalars with go-yaml v2's
// rules (goyaml.v2 resolve.go), not strict YAML 1.1: `yes`, `on`, `y`, `~` are booleans/null,
// `0644` is octal and `09` a float, `1e3` is a number, but `1:20` (sexagesimal) and dates stay
// strings. We read user files with those rules, and write files that read back identically
// under them. Output mimics Go's marshalling: keys in go-yaml's order (Go marshals through a
// JSON map), sequences not indented under their key, strings quoted as go-yaml quotes them
// (go-yaml-style.ts).

// strconv.ParseInt(s, 0, 64) after removing "_": optional sign, then 0x/0o/0b prefixes or a
// leading 0 for octal, else decimal.
const GO_INT = /^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/;
// goyaml.v2 yamlStyleFloat, tried when the text is not an integer.
const GO_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const INT64_MIN = -(1n << 63n);
const UINT64_MAX = (1n << 64n) - 1n;

function goInteger(source: string): number | typeof NOT_RESOLVED {
  const plain = source.replace(/_/g, "");
  if (!GO_INT.test(plain)) return NOT_RESOLVED;
  const negative = plain.startsWith("-");
  let digits = plain.replace(/^[-+]/, "");
  let radix = 10;
  if (/^0[xX]/.test(digits)) [radix, digits] = [16, digits.slice(2)];
  else if (/^0[oO]/.test(digits)) [radix, digits] = [8, digits.slice(2)];
  else if (/^0[bB]/.test(digits)) [radix, digits] = [2, digits.slice(2)];
  else if (digits.length > 1 && digits.startsWith("0")) [radix, digits] = [8, digits.slice(1)];
  let value = 0n;
  for (const c of digits) value = value * BigInt(radix) + BigInt(parseInt(c, radix));
  if (negative) value = -value;
  // Beyond int64 Go tries uint64, then a float; a JS number holds both approximately.
  if (value < INT64_MIN || value > UINT64_MAX) return NOT_RESOLVED;
  return Number(value);
}

const goIntTag = defineScalarTag<number>("tag:yaml.org,2002:int", {
  implicit: true,
  implicitFirstChars: ["+", "-", ..."0123456789"],
  resolve: (source) => goInteger(source),
  identify: (data) => typeof data === "number" && Number.isInteger(data),
  represent: (data: number) => String(data),
});

const goFloatTag = defineScalarTag<number>("tag:yaml.org,2002:float", {
  implicit: true,
  implicitFirstChars: ["+", "-", ".", ..."0123456789"],
  resolve: (source, isExplicit, tagName) => {
    // .inf/.nan and friends come from the YAML 1.1 table, as in goyaml's resolve map.
    const special = floatYaml11Tag.resolve(source, isExplicit, tagName);
    if (special !== NOT_RESOLVED && /^[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)$/.test(source)) {
      return special;
    }
    const plain = source.startsWith(".") ? source : source.replace(/_/g, "");
    return GO_FLOAT.test(plain) ? Number(plain) : NOT_RESOLVED;
  },
  identify: (data) => typeof data === "number" && !Number.isInteger(data),
  represent: (data: number) =>
    Number.isNaN(data)
      ? ".nan"
      : data === Infinity
        ? ".inf"
        : data === -Infinity
          ? "-.inf"
          : String(data),
});

/** The scalar rules of sigs.k8s.io/yaml (goyaml.v2): no timestamps, no sexagesimal numbers. */
export const KUBERNETES_YAML_SCHEMA = new Schema([
  ...FAILSAFE_SCHEMA.tags,
  nullYaml11Tag,
  boolYaml11Tag,
  goIntTag,
  goFloatTag,
  mergeTag,
]);

// The dumper quotes a string whenever a plain scalar would resolve to another type under any
// of these rules: YAML 1.1, YAML 1.2 core and goyaml.v2. Quoting too much is harmless.
function anyOf(...tags: { resolve: (s: string, e: boolean, t: string) => unknown }[]) {
  return (source: string, isExplicit: boolean, tagName: string): number | typeof NOT_RESOLVED => {
    for (const tag of tags) {
      const v = tag.resolve(source, isExplicit, tagName);
      if (v !== NOT_RESOLVED) return v as number;
    }
    return NOT_RESOLVED;
  };
}

const WRITE_SCHEMA = DUMP_SCHEMA.withTags(
  { ...intYaml11Tag, resolve: anyOf(intYaml11Tag, intCoreTag, goIntTag) },
  { ...floatYaml11Tag, resolve: anyOf(floatYaml11Tag, floatCoreTag, goFloatTag) },
);

// Bounds on what a YAML text may cost to read. Configuration is kilobytes; the largest text
// kubeforge reads is a CNI manifest of a few hundred. An alias is a reference when parsed, but
// every use of the value turns it into a copy (re-serialising the documents, converting them to
// JSON): a few lines of nested aliases ("billion laughs") become gigabytes. Kubernetes' own
// reader refuses such documents: goyaml v2 (decode.go, allowedAliasRatio) lets aliases supply 99%
// of a document's values up to 400,000 of them, falling to 10% at 4,000,000 ("document contains
// excessive aliasing"). The same rule applies here, before anything expands a document.

/** The longest YAML text kubeforge reads (bytes of UTF-16, as JavaScript counts them). */
export const MAX_YAML_LENGTH = 8 * 1024 * 1024;
const ALIAS_RATIO_LOW = 400_000;
const ALIAS_RATIO_HIGH = 4_000_000;

function allowedAliasRatio(values: number): number {
  if (values <= ALIAS_RATIO_LOW) return 0.99;
  if (values >= ALIAS_RATIO_HIGH) return 0.1;
  return 0.99 - (0.89 * (values - ALIAS_RATIO_LOW)) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW);
}

/** A YAML text refused for what reading it would cost; the message does not name the source. */
export class YAMLBoundError extends Error {}

/**
 * How many values a document holds written out (`expanded`: every alias replaced by a copy) and
 * as parsed (`distinct`: each aliased mapping or list once). A document whose aliases refer to an
 * enclosing value never ends when written out: Infinity.
 */
function valueCounts(doc: unknown): { expanded: number; distinct: number } {
  const sizes = new Map<object, number>();
  const open = new Set<object>();
  let distinct = 0;
  const size = (v: unknown): number => {
    if (v === null || typeof v !== "object") {
      distinct++;
      return 1;
    }
    const known = sizes.get(v);
    if (known !== undefined) return known;
    if (open.has(v)) return Infinity;
    open.add(v);
    distinct++;
    let total = 1;
    for (const child of Array.isArray(v) ? v : Object.values(v)) total += size(child);
    open.delete(v);
    sizes.set(v, total);
    return total;
  };
  return { expanded: size(doc), distinct };
}

function checkAliasing(doc: unknown, index: number): void {
  const { expanded, distinct } = valueCounts(doc);
  if (expanded <= 1000) return;
  const fromAliases = (expanded - distinct) / expanded;
  if (expanded === Infinity || fromAliases > allowedAliasRatio(expanded)) {
    const total = expanded === Infinity ? "no end" : `${expanded} values`;
    throw new YAMLBoundError(
      `document ${index + 1} contains excessive aliasing: written out, it would hold ${total}, ${distinct} of them written in the file (Kubernetes refuses it too)`,
    );
  }
}

/**
 * js-yaml's loadAll with kubeforge's bounds: the text's length and each document's aliasing.
 * Throws YAMLException for malformed YAML and YAMLBoundError for a refused text.
 */
export function loadYAMLDocuments(text: string, source: string): unknown[] {
  if (text.length > MAX_YAML_LENGTH) {
    throw new YAMLBoundError(
      `it is ${text.length} characters long; kubeforge reads YAML of at most ${MAX_YAML_LENGTH}`,
    );
  }
  const docs = loadAll(text, { schema: KUBERNETES_YAML_SCHEMA, filename: source });
  docs.forEach(checkAliasing);
  return docs;
}

/** Parses a multi-document YAML stream as Kubernetes would. `source` names the file in errors. */
export function parseYAMLDocuments(text: string, source: string): unknown[] {
  try {
    return loadYAMLDocuments(text, source).filter((doc) => doc !== null && doc !== undefined);
  } catch (e) {
    if (e instanceof YAMLException) {
      const where = e.mark ? ` at line ${e.mark.line + 1}, column ${e.mark.column + 1}` : "";
      throw new Error(`${source} is not valid YAML${where}: ${e.reason}`, { cause: e });
    }
    if (e instanceof YAMLBoundError) throw new Error(`${source}: ${e.message}`, { cause: e });
    throw e;
  }
}

/**
 * The documents of parseYAMLDocuments, each with the same document read with every scalar kept
 * as its source text (YAML's failsafe schema): `raw` says what the user wrote where `value`
 * holds what Kubernetes' YAML rules made of it (`0644` → 420), for messages.
 */
export function parseYAMLDocumentsWithText(
  text: string,
  source: string,
): { value: unknown; raw: unknown }[] {
  // Parsing with Kubernetes' rules first reports malformed or refused YAML, naming the source.
  parseYAMLDocuments(text, source);
  const typed = loadYAMLDocuments(text, source);
  let raw: unknown[] = [];
  try {
    raw = loadAll(text, { schema: FAILSAFE_SCHEMA, filename: source });
  } catch {
    // Only used for messages: without it they show the converted value.
  }
  return typed
    .map((value, i) => ({ value, raw: raw.length === typed.length ? raw[i] : undefined }))
    .filter((d) => d.value !== null && d.value !== undefined);
}

const STRING_STYLE = goStringStyle(KUBERNETES_YAML_SCHEMA);

/** One YAML document, as Go's sigs.k8s.io/yaml would print the same object. */
export function toYAML(value: unknown, opts: { sortKeys?: boolean } = {}): string {
  const text = dump(value, {
    schema: WRITE_SCHEMA,
    sortKeys: (opts.sortKeys ?? true) ? goKeyCompare : false,
    seqNoIndent: true,
    lineWidth: -1,
    scalarStyleRules: [STRING_STYLE, DEFAULT_SCALAR_STYLE_RULES.fallbackToDoubleQuoted],
    noRefs: true,
  });
  // js-yaml ends a document whose last scalar keeps its trailing newlines (`|+`) with `...`;
  // go-yaml's encoder clears that state before the stream ends (encode.go finish).
  return text.endsWith("\n...\n") ? text.slice(0, -4) : text;
}

/** Several documents joined by `---` lines. */
export function toYAMLDocuments(values: unknown[], opts: { sortKeys?: boolean } = {}): string {
  return values.map((v) => toYAML(v, opts)).join("---\n");
}
