// Generic helpers for reading YAML-decoded values and naming them in problems, shared by the
// kubeadm loader (load.ts) and the Cluster file reader (cluster/fields.ts).

export function isMapping(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date)
  );
}

/** "a.b", "a[1]": the path of a child field. */
export function childPath(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return path === "" ? key : `${path}.${key}`;
}

// Values quoted in messages go to logs, job summaries and kubeforge.log, where the runner's
// masking does not reach: a message quotes at most a short excerpt of a value, with what looks
// like a secret (a private key, a bootstrap token's secret half) cut out.
const QUOTED_MAX = 64;
const QUOTED_EXCERPT = 40;
const PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*/g;
const TOKEN_SECRET = /\b([a-z0-9]{6})\.[a-z0-9]{16}\b/g;

/** A value as messages quote it: JSON, at most an excerpt of QUOTED_MAX characters, secrets cut. */
export function quoteValue(value: unknown): string {
  const isText = typeof value === "string";
  const text = isText ? value : (JSON.stringify(value) ?? String(value));
  const redacted = text
    .replace(PRIVATE_KEY, "-----BEGIN … PRIVATE KEY----- (a private key, not shown)")
    .replace(TOKEN_SECRET, "$1.***");
  const cut = redacted.length > QUOTED_MAX;
  const excerpt = cut ? `${redacted.slice(0, QUOTED_EXCERPT)}…` : redacted;
  const shown = isText ? JSON.stringify(excerpt) : excerpt;
  return cut ? `${shown} (${text.length} characters)` : shown;
}

/** How a value looks, for "must be a string, got a list". */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `string ${quoteValue(value)}`;
  if (typeof value === "number" || typeof value === "boolean") return `${typeof value} ${value}`;
  return typeof value;
}

/**
 * What a whole document is when it is not a mapping ("a string", "a list"), never its content:
 * a file given by mistake (a token, a key) is named, not printed.
 */
export function describeDocument(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return `a ${typeof value}`;
}
