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

/** How a value looks, for "must be a string, got a list". */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `string ${JSON.stringify(value)}`;
  if (typeof value === "number" || typeof value === "boolean") return `${typeof value} ${value}`;
  return typeof value;
}
