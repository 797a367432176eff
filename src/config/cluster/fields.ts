// Strict reading of a YAML-decoded value against the fields we expect: unknown fields, wrong
// types and missing required fields become one sentence each, naming the field path
// ("nodes[1].rol: unknown field; did you mean \"role\"?"). Values of secret fields are never
// described in a problem.

import type { LocatedProblem } from "../load.js";
import { childPath, describeValue, isMapping } from "../values.js";

export { childPath, describeValue, isMapping };

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** The known field closest to a misspelt one (case-insensitive, at most 2 edits), if any. */
export function suggestField(unknown: string, known: readonly string[]): string | undefined {
  const lower = unknown.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = name.toLowerCase() === lower ? 0 : editDistance(lower, name.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) {
      best = { name, distance };
    }
  }
  return best?.name;
}

export interface ReadOptions {
  /** The value is a secret: problems describe what is expected, never what was given. */
  secret?: boolean;
}

/**
 * Collects problems as "<source>: <path>: <sentence>", naming where a value came from when it
 * was not the file ("cluster.yaml: networking.podSubnet (from input pod-network-cidr): ..."), and
 * keeps each one's place as data too (`located`).
 */
export class FieldReader {
  readonly located: LocatedProblem[] = [];

  constructor(
    readonly problems: string[],
    private readonly source?: string,
    readonly originOf: (path: string) => string | undefined = () => undefined,
  ) {}

  /** How a field is named in problems ("cluster.yaml: nodes[1].role"). */
  where(path: string): string {
    const origin = this.originOf(path);
    const named = this.source !== undefined ? `${this.source}: ${path}` : path;
    return origin !== undefined ? `${named} (from ${origin})` : named;
  }

  /** A problem with the field at `path`; `note` follows its name ("(the default)"). */
  report(path: string, message: string, note?: string): void {
    const text = `${this.where(path)}${note ? ` ${note}` : ""}: ${message}`;
    this.problems.push(text);
    const origin = this.originOf(path);
    this.located.push({
      text,
      message,
      place: {
        source: this.source ?? "",
        field: path,
        ...(origin !== undefined ? { origin } : {}),
      },
    });
  }

  private typeError(path: string, value: unknown, expected: string, opts: ReadOptions): undefined {
    this.report(
      path,
      opts.secret ? `must be ${expected}` : `must be ${expected}, got ${describeValue(value)}`,
    );
    return undefined;
  }

  /** A mapping whose keys must all be in `known`; unknown keys are reported. */
  mapping(
    value: unknown,
    path: string,
    known: readonly string[],
  ): Record<string, unknown> | undefined {
    if (value === null || value === undefined) return undefined;
    if (!isMapping(value)) return this.typeError(path, value, "a mapping", {});
    for (const key of Object.keys(value)) {
      if (known.includes(key)) continue;
      const suggestion = suggestField(key, known);
      this.report(
        childPath(path, key),
        suggestion ? `unknown field; did you mean "${suggestion}"?` : "unknown field",
      );
    }
    return value;
  }

  /**
   * A string. Numbers and booleans are turned into text, as sigs.k8s.io/yaml does for a Go
   * string field (so `value: true` is "true"), unless `strict` (where that would lose text,
   * such as a version 1.30 read as the number 1.3).
   */
  string(
    value: unknown,
    path: string,
    opts: ReadOptions & { strict?: boolean } = {},
  ): string | undefined {
    if (value === null || value === undefined) return undefined;
    if (typeof value === "string") return value;
    if (!opts.strict && (typeof value === "number" || typeof value === "boolean")) {
      return String(value);
    }
    return this.typeError(path, value, "a string", opts);
  }

  bool(value: unknown, path: string): boolean | undefined {
    if (value === null || value === undefined) return undefined;
    return typeof value === "boolean" ? value : this.typeError(path, value, "true or false", {});
  }

  int(value: unknown, path: string, min: number, max: number): number | undefined {
    if (value === null || value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value)) {
      return this.typeError(path, value, `an integer from ${min} to ${max}`, {});
    }
    if (value < min || value > max) {
      this.report(path, `${value} is out of range; it must be from ${min} to ${max}`);
      return undefined;
    }
    return value;
  }

  list(value: unknown, path: string): unknown[] | undefined {
    if (value === null || value === undefined) return undefined;
    return Array.isArray(value) ? value : this.typeError(path, value, "a list", {});
  }

  /** A list of strings; items that are not are reported and left out. */
  stringList(value: unknown, path: string, opts: ReadOptions = {}): string[] | undefined {
    const items = this.list(value, path);
    if (items === undefined) return undefined;
    const out: string[] = [];
    items.forEach((item, i) => {
      const text = this.string(item, childPath(path, i), opts);
      if (text !== undefined) out.push(text);
      else if (item === null) this.report(childPath(path, i), "must be a string, got null");
    });
    return out;
  }

  /** A mapping of strings (labels); values are read as strings the Kubernetes way. */
  stringMap(value: unknown, path: string): Record<string, string> | undefined {
    if (value === null || value === undefined) return undefined;
    if (!isMapping(value)) return this.typeError(path, value, "a mapping", {});
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(value)) {
      // A null label value is the empty string in Kubernetes (`key:` alone).
      const text = v === null ? "" : this.string(v, childPath(path, k));
      if (text !== undefined) out[k] = text;
    }
    return out;
  }

  required(value: unknown, path: string, what: string): boolean {
    if (value === null || value === undefined || value === "") {
      this.report(path, `required: ${what}`);
      return false;
    }
    return true;
  }
}
