import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseYAMLDocuments, toYAML, toYAMLDocuments } from "../../../src/config/yaml.js";

const dir = mkdtempSync(join(tmpdir(), "kubeforge-yaml-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Reads a file with Kubernetes' own parser (kubectl, offline) and returns the object. */
function kubectlRead(text: string): Record<string, unknown> {
  const file = join(dir, `doc-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  const out = execFileSync(
    "kubectl",
    ["label", "--local", "-f", file, "kubeforge=test", "-o", "json"],
    {
      encoding: "utf8",
    },
  );
  const obj = JSON.parse(out) as { metadata: { labels?: Record<string, string> } };
  delete obj.metadata.labels; // the label we added to make kubectl print the object
  return obj;
}

// Strings that YAML 1.1 / go-yaml would turn into something else when written plain.
const TRAPS = [
  "yes",
  "no",
  "on",
  "off",
  "y",
  "n",
  "Y",
  "N",
  "YES",
  "Off",
  "true",
  "False",
  "~",
  "null",
  "NULL",
  "",
  "0644",
  "012",
  "09",
  "0x1F",
  "0o17",
  "0b101",
  "1_000",
  "1e3",
  "1.5e+3",
  ".5",
  "-.5",
  "+12",
  ".inf",
  "-.Inf",
  ".nan",
  "1:20",
  "190:20:30",
  "2001-01-01",
  "2001-12-14t21:59:43.10-05:00",
  "=",
  "<<",
  "-",
  "#c",
  "a: b",
  " lead",
  "trail ",
  "multi\nline",
  "'q'",
  '"dq"',
  "@at",
  "`tick",
  "%pct",
  "[x]",
  "{y}",
  "*star",
  "&amp",
  "!bang",
  "|pipe",
  ">gt",
  "?q",
];

describe("toYAML writes what Kubernetes reads back unchanged (kubectl, YAML 1.1 traps)", () => {
  it("keeps every trap string a string", () => {
    const data = Object.fromEntries(TRAPS.map((s, i) => [`k${i}`, s]));
    const obj = {
      apiVersion: "example.com/v1",
      kind: "Thing",
      metadata: { name: "traps" },
      spec: { data, list: TRAPS },
    };
    const text = toYAML(obj);
    expect(kubectlRead(text)).toEqual(obj);
    expect(parseYAMLDocuments(text, "traps.yaml")[0]).toEqual(obj);
  });

  it("keeps numbers, booleans, null and empty collections typed", () => {
    const spec = {
      i: 3,
      neg: -7,
      f: 0.5,
      big: 1e21,
      t: true,
      f2: false,
      z: null,
      e: {},
      l: [],
      nested: [{ a: 1 }],
    };
    const obj = { apiVersion: "example.com/v1", kind: "Thing", metadata: { name: "typed" }, spec };
    expect(kubectlRead(toYAML(obj))).toEqual(obj);
  });

  it("prints like Go: sorted keys, unindented sequences, double quotes", () => {
    expect(toYAML({ b: ["x", "yes"], a: 1 })).toBe('a: 1\nb:\n- x\n- "yes"\n');
    expect(toYAMLDocuments([{ a: 1 }, { b: 2 }])).toBe("a: 1\n---\nb: 2\n");
  });
});

describe("parseYAMLDocuments reads plain scalars as Kubernetes does", () => {
  const doc = [
    "a: y",
    "b: 1:20",
    "c: 0644",
    "d: ~",
    "e: on",
    "g: 0x1f",
    "h: 1_000",
    "l: N",
    "m: 1e3",
    "o: 09",
    "r: 190:20:30.15",
    "j: 2001-01-01",
    "k: 0b11",
    "s: .5",
    "t: +12",
    "u: 1.5e+3",
    "v: 0o17",
    "w: Off",
    "z: 2001-12-14t21:59:43.10-05:00",
    "n2: -.5",
    "p: 0.",
    "q: 1.",
  ].join("\n");

  it("agrees with kubectl on every value", () => {
    const wrapped = `apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: scalars\nspec:\n${doc
      .split("\n")
      .map((l) => `  ${l}`)
      .join("\n")}\n`;
    const ours = parseYAMLDocuments(wrapped, "s.yaml")[0] as { spec: Record<string, unknown> };
    const theirs = kubectlRead(wrapped) as { spec: Record<string, unknown> };
    expect(ours).toEqual(theirs);
    expect(ours.spec).toMatchObject({ a: true, b: "1:20", c: 420, o: 9, m: 1000, j: "2001-01-01" });
  });

  it("reads the YAML 1.1 specials kubectl cannot print as JSON", () => {
    expect(parseYAMLDocuments("a: .inf\nb: -.Inf\nc: .NaN\n", "f.yaml")[0]).toEqual({
      a: Infinity,
      b: -Infinity,
      c: NaN,
    });
  });

  it("skips empty documents and names the file and line of a syntax error", () => {
    expect(parseYAMLDocuments("---\n---\na: 1\n---\n", "f.yaml")).toEqual([{ a: 1 }]);
    expect(parseYAMLDocuments("", "f.yaml")).toEqual([]);
    expect(() => parseYAMLDocuments("a: [\n", "bad.yaml")).toThrow(
      /^bad\.yaml is not valid YAML at line 2/,
    );
    expect(() => parseYAMLDocuments("a: 1\na: 2\n", "dup.yaml")).toThrow(
      /dup\.yaml is not valid YAML at line 2.*duplicated mapping key/,
    );
  });
});
