import { describe, expect, it } from "vitest";
import {
  SequenceMatcher,
  splitLines,
  unifiedDiff,
} from "../../../../src/phases/upgrade/difflib.js";

// `kubeadm upgrade diff` prints github.com/pmezard/go-difflib's unified diff. The expected
// values are go-difflib's own checked tests (difflib/difflib_test.go: TestGetOptCodes,
// TestGroupedOpCodes and ExampleGetUnifiedDiffCode, whose output `go test` compares).

const chars = (s: string) => [...s];

describe("go-difflib's SequenceMatcher", () => {
  it("TestGetOptCodes", () => {
    const a = "qabxcd";
    const b = "abycdf";
    const lines = new SequenceMatcher(chars(a), chars(b))
      .opCodes()
      .map(
        (op) =>
          `${op.tag} a[${op.i1}:${op.i2}], (${a.slice(op.i1, op.i2)}) b[${op.j1}:${op.j2}] (${b.slice(op.j1, op.j2)})`,
      );
    expect(lines).toEqual([
      "d a[0:1], (q) b[0:0] ()",
      "e a[1:3], (ab) b[0:2] (ab)",
      "r a[3:4], (x) b[2:3] (y)",
      "e a[4:6], (cd) b[3:5] (cd)",
      "i a[6:6], () b[5:6] (f)",
    ]);
  });

  it("TestGroupedOpCodes (default context 3)", () => {
    const a = Array.from({ length: 39 }, (_, i) => String(i).padStart(2, "0"));
    const b = [
      ...a.slice(0, 8),
      " i",
      ...a.slice(8, 19),
      " x",
      ...a.slice(20, 22),
      ...a.slice(27, 34),
      " y",
      ...a.slice(35),
    ];
    const groups = new SequenceMatcher(a, b)
      .groupedOpCodes(3)
      .map((g) => g.map((op) => `${op.tag}, ${op.i1}, ${op.i2}, ${op.j1}, ${op.j2}`));
    expect(groups).toEqual([
      ["e, 5, 8, 5, 8", "i, 8, 8, 8, 9", "e, 8, 11, 9, 12"],
      [
        "e, 16, 19, 17, 20",
        "r, 19, 20, 20, 21",
        "e, 20, 22, 21, 23",
        "d, 22, 27, 23, 23",
        "e, 27, 30, 23, 26",
      ],
      ["e, 31, 34, 27, 30", "r, 34, 35, 30, 31", "e, 35, 38, 31, 34"],
    ]);
  });
});

describe("go-difflib's unified diff", () => {
  it("ExampleGetUnifiedDiffCode (without the dates kubeadm does not set)", () => {
    const a = 'one\ntwo\nthree\nfour\nfmt.Printf("%s,%T",a,b)';
    const b = "zero\none\nthree\nfour";
    expect(
      unifiedDiff({
        a: splitLines(a),
        b: splitLines(b),
        fromFile: "Original",
        toFile: "Current",
        context: 3,
      }),
    ).toBe(
      [
        "--- Original",
        "+++ Current",
        "@@ -1,5 +1,4 @@",
        "+zero",
        " one",
        "-two",
        " three",
        " four",
        '-fmt.Printf("%s,%T",a,b)',
        "",
      ].join("\n"),
    );
  });

  it("prints nothing for equal texts (WriteUnifiedDiff writes no header without a group)", () => {
    const a = splitLines("a\nb\n");
    expect(unifiedDiff({ a, b: [...a], fromFile: "x", toFile: "y", context: 3 })).toBe("");
  });

  // difflib.go SplitLines itself (its TestSplitLines uses assertEqual, which only prints).
  it("SplitLines is strings.SplitAfter with a newline added to the last element", () => {
    expect(splitLines("foo")).toEqual(["foo\n"]);
    expect(splitLines("foo\nbar")).toEqual(["foo\n", "bar\n"]);
    expect(splitLines("foo\nbar\n")).toEqual(["foo\n", "bar\n", "\n"]);
  });
});
