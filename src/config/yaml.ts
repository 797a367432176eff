import { YAMLException, dump, loadAll, YAML11_SCHEMA } from "js-yaml";

// Kubernetes reads YAML with YAML 1.1 rules (sigs.k8s.io/yaml over go-yaml v2): `yes`, `on`,
// `y` are booleans and `0644` is octal. We read user files the same way, and write files that
// read back identically under those rules. Output mimics Go's marshalling: keys sorted (Go
// marshals through a JSON map), sequences not indented under their key, double quotes.

/** Parses a multi-document YAML stream as Kubernetes would. `source` names the file in errors. */
export function parseYAMLDocuments(text: string, source: string): unknown[] {
  try {
    return loadAll(text, { schema: YAML11_SCHEMA, filename: source }).filter(
      (doc) => doc !== null && doc !== undefined,
    );
  } catch (e) {
    if (e instanceof YAMLException) {
      const where = e.mark ? ` at line ${e.mark.line + 1}, column ${e.mark.column + 1}` : "";
      throw new Error(`${source} is not valid YAML${where}: ${e.reason}`, { cause: e });
    }
    throw e;
  }
}

/** One YAML document, as Go's sigs.k8s.io/yaml would print the same object. */
export function toYAML(value: unknown, opts: { sortKeys?: boolean } = {}): string {
  return dump(value, {
    sortKeys: opts.sortKeys ?? true,
    seqNoIndent: true,
    lineWidth: -1,
    quoteStyle: "double",
    noRefs: true,
  });
}

/** Several documents joined by `---` lines. */
export function toYAMLDocuments(values: unknown[], opts: { sortKeys?: boolean } = {}): string {
  return values.map((v) => toYAML(v, opts)).join("---\n");
}
