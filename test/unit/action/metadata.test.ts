import { readFileSync } from "node:fs";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { INPUTS } from "../../../src/action/inputs.js";

// action.yml, the code and the README name the same inputs and outputs.

const action = load(readFileSync("action.yml", "utf8")) as {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, unknown>;
  runs: Record<string, string>;
};
const readme = readFileSync("README.md", "utf8");

/** The first-column names of the README table under `### <heading>`. */
function tableNames(heading: string): string[] {
  const section = readme.split(`\n### ${heading}\n`)[1]!.split("\n#")[0]!;
  return [...section.matchAll(/^\| `([a-z-]+)` +\|/gm)].map((m) => m[1]!);
}

describe("action.yml", () => {
  it("runs the bundles on node24, with a post step", () => {
    expect(action.runs).toEqual({ using: "node24", main: "dist/main.js", post: "dist/post.js" });
  });

  it("declares exactly the inputs the code reads, each in the README's table", () => {
    expect(Object.keys(action.inputs).sort()).toEqual([...INPUTS].sort());
    expect(tableNames("Inputs").sort()).toEqual([...INPUTS].sort());
    // Evaluated by GitHub again for the post step: the job's status then.
    expect(action.inputs["job-status"]!.default).toBe("${{ job.status }}");
  });

  it("declares the outputs the README lists", () => {
    expect(tableNames("Outputs").sort()).toEqual(Object.keys(action.outputs).sort());
  });
});
