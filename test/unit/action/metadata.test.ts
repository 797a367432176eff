import { existsSync, readFileSync, readdirSync } from "node:fs";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { INPUTS } from "../../../src/action/inputs.js";

// action.yml, the code and the README name the same inputs and outputs.

const action = load(readFileSync("action.yml", "utf8")) as {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, unknown>;
  runs: Record<string, string>;
  branding: { icon: string; color: string };
};
const readme = readFileSync("README.md", "utf8");
const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  repository: { url: string };
  homepage: string;
  bugs: { url: string };
};

/** The documentation users copy `uses:` lines from: README.md and docs/ (when there is one). */
function docs(): [string, string][] {
  const extra = existsSync("docs")
    ? readdirSync("docs", { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".md"))
    : [];
  return [
    ["README.md", readme],
    ...extra.map((f): [string, string] => [`docs/${f}`, readFileSync(`docs/${f}`, "utf8")]),
  ];
}

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

  it("has Marketplace branding of its own, not kind-action's and setup-minikube's box/blue", () => {
    expect(action.branding.icon).not.toBe("box");
    expect(action.branding.color).not.toBe("blue");
  });
});

describe("the repository users are sent to", () => {
  const repo = /^git\+https:\/\/github\.com\/([\w.-]+\/[\w.-]+)\.git$/.exec(
    pkg.repository.url,
  )?.[1];

  it("is package.json's repository, with its home page and issue tracker", () => {
    expect(repo).toBeDefined();
    expect(pkg.homepage).toBe(`https://github.com/${repo}#readme`);
    expect(pkg.bugs.url).toBe(`https://github.com/${repo}/issues`);
  });

  it.each(docs())("%s names it in every uses: line of this action", (_file, text) => {
    const lines = [...text.matchAll(/uses:\s*(\S+\/kubeforge)@([\w.-]+)/g)];
    expect(lines.length).toBeGreaterThan(0);
    for (const [line, path, ref] of lines) {
      expect(path, line).toBe(repo);
      expect(ref, line).toMatch(/^v\d+$|^[0-9a-f]{40}$/);
    }
  });
});
