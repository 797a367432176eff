import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { goKeyCompare, isGoTimestamp } from "../../../src/config/go-yaml-style.js";
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
  "::",
  "::1",
  "[fd00::10]:6443",
  "it's: x",
  "a\tb",
  "x \ny",
  "  lead\nx",
  "x\n\n",
  "_1",
  "1_",
  "2001-13-01",
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

  it("prints like Go: sorted keys, unindented sequences", () => {
    expect(toYAML({ b: ["x", "yes"], a: 1 })).toBe('a: 1\nb:\n- x\n- "yes"\n');
    expect(toYAMLDocuments([{ a: 1 }, { b: 2 }])).toBe("a: 1\n---\nb: 2\n");
  });
});

// Expected text from go-yaml v2.4's encode_test.go marshalTests (the base of sigs.k8s.io/yaml's
// goyaml.v2 fork, which kubeadm's serializer marshals with).
const GO_YAML_MARSHAL_TESTS: [Record<string, unknown>, string][] = [
  [{ v: "hi" }, "v: hi\n"],
  [{ v: "true" }, 'v: "true"\n'],
  [{ v: "false" }, 'v: "false"\n'],
  [{ v: "10" }, 'v: "10"\n'],
  [{ v: "" }, 'v: ""\n'],
  [{ v: ["A", "B"] }, "v:\n- A\n- B\n"],
  [{ v: ["A", "B\nC"] }, "v:\n- A\n- |-\n  B\n  C\n"],
  [{ a: "-" }, "a: '-'\n"],
  [{ a: "<foo>" }, "a: <foo>\n"],
  [{ a: "1:1" }, 'a: "1:1"\n'],
  [{ a: "\x00" }, 'a: "\\0"\n'],
  [{ a: "你好" }, "a: 你好\n"],
  [{ a: "2015-02-24T18:19:39Z" }, 'a: "2015-02-24T18:19:39Z"\n'],
  [{ a: "b: c" }, "a: 'b: c'\n"],
  [{ a: "Hello #comment" }, "a: 'Hello #comment'\n"],
  [{ a: "你好 #comment" }, "a: '你好 #comment'\n"],
];

// Expected text worked out from go-yaml v2.4's rules: resolve.go resolve() (a plain scalar that
// would read as another type is double-quoted by encode.go stringv), emitterc.go
// yaml_emitter_analyze_scalar (what forbids plain, single-quoted and block styles) and
// yaml_emitter_write_block_scalar_hints (indentation and chomping indicators).
const GO_YAML_EMITTER_RULES: [string, string, string][] = [
  ["':' followed by the end is an indicator", "::", "'::'"],
  ["':' followed by ':' is not", "::1", "::1"],
  ["'[' first is an indicator", "[fd00::10]:6443", "'[fd00::10]:6443'"],
  ["an IPv6 range is plain", "fd00:10:244::/64", "fd00:10:244::/64"],
  ["',' inside matters only in flow context", "a,b", "a,b"],
  ["'*' first is an indicator", "*", "'*'"],
  ["a trailing space forbids plain only", "trail ", "'trail '"],
  ["a quote doubles inside single quotes", "it's: x", "'it''s: x'"],
  ["a tab is not printable to go-yaml v2", "a\tb", '"a\\tb"'],
  ["a space before a break forbids single quotes and blocks", "x \ny", '"x \\ny"'],
  ["YAML 1.1 booleans", "Off", '"Off"'],
  ["y is a boolean", "y", '"y"'],
  ["~ is null", "~", '"~"'],
  ["leading-zero octal", "0644", '"0644"'],
  ["hexadecimal", "0x1F", '"0x1F"'],
  ["underscores are dropped before numbers are parsed", "1_", '"1_"'],
  ["'_' first gives resolve no hint", "_1", "_1"],
  ["09 is a float", "09", '"09"'],
  ["1e3 is a float", "1e3", '"1e3"'],
  ["'.' first is a float", ".5", '".5"'],
  ["a sign", "+12", '"+12"'],
  ["a date", "2001-1-2", '"2001-1-2"'],
  ["a space-separated time", "2001-1-2 3:04:05", '"2001-1-2 3:04:05"'],
  ["a lower-case t with a zone", "2001-1-2t3:4:5Z", '"2001-1-2t3:4:5Z"'],
  ["a T layout needs a zone", "2001-1-2T3:4:5", "2001-1-2T3:4:5"],
  ["time.Parse refuses month 13", "2001-13-01", "2001-13-01"],
  ["2001 has no 29 February", "2001-02-29", "2001-02-29"],
  ["2004 has", "2004-02-29", '"2004-02-29"'],
  ["a trailing break: literal, clipped", "line1\nline2\n", "|\n  line1\n  line2"],
  ["a leading space: indentation indicator", "  lead\nx", "|2-\n    lead\n  x"],
  ["two trailing breaks: kept, and no document end marker", "x\n\n", "|+\n  x\n"],
];

describe("toYAML writes strings as go-yaml v2.4 (sigs.k8s.io/yaml) does", () => {
  it.each(GO_YAML_MARSHAL_TESTS)("encode_test.go: %j", (value, text) => {
    expect(toYAML(value)).toBe(text);
  });

  it.each(GO_YAML_EMITTER_RULES)("%s: %j", (_why, value, written) => {
    expect(toYAML({ a: value })).toBe(`a: ${written}\n`);
    expect(parseYAMLDocuments(toYAML({ a: value }), "s.yaml")[0]).toEqual({ a: value });
  });

  it("quotes a key as a value", () => {
    expect(toYAML({ true: 1, "::": 2 })).toBe("'::': 2\n\"true\": 1\n");
  });

  it("accepts exactly the dates time.Parse accepts in go-yaml's layouts", () => {
    expect(isGoTimestamp("2001-12-14t21:59:43.10-05:00")).toBe(true);
    expect(isGoTimestamp("2001-12-14 21:59:43,5")).toBe(true);
    expect(isGoTimestamp("2001-12-14 21:59:43.10 -5")).toBe(false); // resolve.go's noted exception
    expect(isGoTimestamp("2001-12-14T24:00:00Z")).toBe(false);
    expect(isGoTimestamp("2001-12-14 21:59:43Z")).toBe(false);
    expect(isGoTimestamp("20011-12-14")).toBe(false);
  });
});

// go-yaml v2.4's encode_test.go TestSortedOutput, string keys (sigs.k8s.io/yaml marshals only
// string keys: the object went through JSON first).
const GO_YAML_KEY_ORDER = [
  "",
  ".1",
  ".2",
  ".a",
  "1",
  "2",
  "a!10",
  "a/0001",
  "a/002",
  "a/3",
  "a/10",
  "a/11",
  "a/0012",
  "a/100",
  "a~10",
  "ab/1",
  "b/1",
  "b/01",
  "b/2",
  "b/02",
  "b/3",
  "b/03",
  "b1",
  "b01",
  "b3",
  "c2.10",
  "c10.2",
  "d1",
  "d7",
  "d7abc",
  "d12",
  "d12a",
];

describe("toYAML orders keys as go-yaml v2.4's sorter.go", () => {
  it("sorts TestSortedOutput's keys into its order", () => {
    const shuffled = [...GO_YAML_KEY_ORDER].reverse();
    expect(shuffled.sort(goKeyCompare)).toEqual(GO_YAML_KEY_ORDER);
    const written = toYAML(Object.fromEntries(shuffled.map((k) => [k, 1])));
    const keys = written
      .trimEnd()
      .split("\n")
      .map((line) => parseYAMLDocuments(line, "k.yaml")[0] as Record<string, number>)
      .map((doc) => Object.keys(doc)[0]);
    expect(keys).toEqual(GO_YAML_KEY_ORDER);
  });

  it("puts a non-letter before a letter, unlike code-point order", () => {
    expect(toYAML({ B: 1, _a: 2 })).toBe("_a: 2\nB: 1\n");
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
