import { readFileSync, readdirSync } from "node:fs";
import { validateAction, validateWorkflow } from "@action-validator/core";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";

// The workflows (ci.yml, e2e.yml) and action.yml as GitHub reads them: checked against the
// SchemaStore schemas that action-validator bundles, and against this project's rules for them
// (actions pinned by commit, read-only token, a time limit on every job). e2e.yml cannot run on
// these machines; this is what can be known about it here.

const WORKFLOWS = ".github/workflows";
const workflowFiles = readdirSync(WORKFLOWS).filter((f) => /\.ya?ml$/.test(f));

interface Step {
  id?: string;
  uses?: string;
  with?: Record<string, unknown>;
}
interface Workflow {
  permissions?: unknown;
  jobs: Record<string, { "timeout-minutes"?: number; permissions?: unknown; steps?: Step[] }>;
}

const read = (file: string) => readFileSync(`${WORKFLOWS}/${file}`, "utf8");

describe("the workflows", () => {
  it("are ci.yml and e2e.yml", () => {
    expect(workflowFiles.sort()).toEqual(["ci.yml", "e2e.yml"]);
  });

  it.each(workflowFiles)("%s is a valid workflow", (file) => {
    expect(validateWorkflow(read(file)).errors).toEqual([]);
  });

  it("the schema check catches a misspelt key (it is not a check that cannot fail)", () => {
    const broken = read("e2e.yml").replace("timeout-minutes: 30", "timeout-minutez: 30");
    expect(validateWorkflow(broken).errors.length).toBeGreaterThan(0);
  });

  it.each(workflowFiles)(
    "%s pins every action by commit, grants a read-only token and limits every job's time",
    (file) => {
      const w = load(read(file)) as Workflow;
      expect(w.permissions).toEqual({ contents: "read" });
      for (const [name, job] of Object.entries(w.jobs)) {
        expect(job.permissions, `${file} job ${name}`).toBeUndefined();
        expect(job["timeout-minutes"], `${file} job ${name}`).toBeGreaterThan(0);
        for (const { uses } of job.steps ?? []) {
          if (uses === undefined || uses === "./") continue;
          expect(uses, `${file} job ${name}`).toMatch(/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/);
        }
      }
    },
  );
});

describe("the workflows' use of this action", () => {
  const action = load(readFileSync("action.yml", "utf8")) as {
    inputs: Record<string, unknown>;
    outputs: Record<string, unknown>;
  };

  it.each(workflowFiles)("%s gives only inputs action.yml declares", (file) => {
    const steps = Object.values((load(read(file)) as Workflow).jobs).flatMap((j) => j.steps ?? []);
    const ours = steps.filter((step) => step.uses === "./");
    for (const step of ours) {
      for (const input of Object.keys(step.with ?? {})) {
        expect(Object.keys(action.inputs), `${file}: input ${input}`).toContain(input);
      }
    }
  });

  it.each(workflowFiles)(
    "%s reads only outputs action.yml declares, of steps that use it",
    (file) => {
      const text = read(file);
      const steps = Object.values((load(text) as Workflow).jobs).flatMap((j) => j.steps ?? []);
      const ids = new Set(steps.filter((s) => s.uses === "./" && s.id).map((s) => s.id));
      const reads = [...text.matchAll(/steps\.([\w-]+)\.outputs\.([\w-]+)/g)];
      // ci.yml's dry run checks three outputs: the pattern must find them.
      if (file === "ci.yml") expect(reads.length).toBeGreaterThanOrEqual(3);
      for (const [, id, output] of reads) {
        expect(ids, `${file}: steps.${id}`).toContain(id);
        expect(Object.keys(action.outputs), `${file}: output ${output}`).toContain(output);
      }
    },
  );
});

describe("action.yml", () => {
  it("is a valid action (node24 aside, which the bundled schema predates)", () => {
    const text = readFileSync("action.yml", "utf8");
    expect(validateAction(text).errors).not.toEqual([]); // node24 is not in its enum
    expect(text.match(/^ {2}using: node24$/gm)).toHaveLength(1);
    expect(validateAction(text.replace(/^ {2}using: node24$/m, "  using: node20")).errors).toEqual(
      [],
    );
  });
});
