import { readFileSync, readdirSync } from "node:fs";
import { validateAction, validateWorkflow } from "@action-validator/core";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";

// The workflows (ci.yml, e2e.yml, release.yml) and action.yml as GitHub reads them: checked
// against the SchemaStore schemas that action-validator bundles, and against this project's rules
// for them (actions pinned by commit, a read-only token unless a job is named below, a time limit
// on every job, no user-typed value spliced into a script). The workflows cannot run on these
// machines; this is what can be known about them here.

const WORKFLOWS = ".github/workflows";
const workflowFiles = readdirSync(WORKFLOWS).filter((f) => /\.ya?ml$/.test(f));

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Job {
  "timeout-minutes"?: number;
  permissions?: unknown;
  needs?: string | string[];
  steps?: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: unknown;
  jobs: Record<string, Job>;
}

/**
 * A user-typed value expanded into a script's text (${{ }} is replaced before the shell reads
 * it, so an input or branch name holding `"; curl ... #` would run); through env it stays data.
 */
const SPLICED_USER_VALUE =
  /\$\{\{[^}]*\b(inputs\.|github\.event\.|github\.head_ref|github\.ref_name)/;

/** The only jobs given more than the workflow's read-only token, and what they get. */
const WRITERS: Record<string, unknown> = {
  // Creates the release and moves the major tag.
  "release.yml publish": { contents: "write" },
};

const read = (file: string) => readFileSync(`${WORKFLOWS}/${file}`, "utf8");

describe("the workflows", () => {
  it("are ci.yml, e2e.yml and release.yml", () => {
    expect(workflowFiles.sort()).toEqual(["ci.yml", "e2e.yml", "release.yml"]);
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
        expect(job.permissions, `${file} job ${name}`).toEqual(WRITERS[`${file} ${name}`]);
        expect(job["timeout-minutes"], `${file} job ${name}`).toBeGreaterThan(0);
        for (const { uses } of job.steps ?? []) {
          if (uses === undefined || uses === "./") continue;
          expect(uses, `${file} job ${name}`).toMatch(/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/);
        }
      }
    },
  );

  it.each(workflowFiles)("%s hands user-typed values to scripts as data, never as code", (file) => {
    const steps = Object.values((load(read(file)) as Workflow).jobs).flatMap((j) => j.steps ?? []);
    for (const { run } of steps) expect(run ?? "", file).not.toMatch(SPLICED_USER_VALUE);
    // The rule finds the splice it is there for.
    expect('echo "${{ inputs.version }}"').toMatch(SPLICED_USER_VALUE);
  });
});

describe("release.yml", () => {
  const w = load(read("release.yml")) as Workflow;
  const steps = (job: string) => w.jobs[job]!.steps ?? [];
  const runs = (job: string) => steps(job).map((s) => s.run ?? "");

  it("runs on a vX.Y.Z tag or by hand with a version", () => {
    const dispatch = w.on.workflow_dispatch as { inputs: Record<string, object> };
    expect(Object.keys(w.on)).toEqual(["push", "workflow_dispatch"]);
    expect(w.on.push).toEqual({ tags: ["v[0-9]+.[0-9]+.[0-9]+"] });
    expect(Object.keys(dispatch.inputs)).toEqual(["version"]);
    expect(dispatch.inputs.version).toMatchObject({ required: true, type: "string" });
  });

  it("publishes only after the read-only check of dist/, the version and the notes", () => {
    expect(w.jobs.publish!.needs).toBe("check");
    expect(runs("check")).toContain("npm run check-dist");
    expect(runs("check").join("\n")).toContain('node scripts/release.mjs notes "$VERSION"');
    const publish = runs("publish").join("\n");
    expect(publish).toContain('gh release create "$VERSION" --target "$COMMIT"');
    expect(publish).toContain('--notes-file "$RUNNER_TEMP/notes.md"');
    expect(publish).toContain('node scripts/release.mjs major "$VERSION"');
  });

  it("keeps the token out of the checked-out repository", () => {
    for (const job of Object.keys(w.jobs))
      for (const step of steps(job).filter((s) => s.uses?.startsWith("actions/checkout@")))
        expect(step.with?.["persist-credentials"], `job ${job}`).toBe(false);
  });
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
    "%s reads outputs of its own steps, and of this action only those action.yml declares",
    (file) => {
      const text = read(file);
      const steps = Object.values((load(text) as Workflow).jobs).flatMap((j) => j.steps ?? []);
      const ours = new Set(steps.filter((s) => s.uses === "./" && s.id).map((s) => s.id));
      const ids = new Set(steps.map((s) => s.id).filter((id) => id !== undefined));
      const reads = [...text.matchAll(/steps\.([\w-]+)\.outputs\.([\w-]+)/g)];
      // ci.yml's dry run checks three outputs: the pattern must find them.
      if (file === "ci.yml") expect(reads.length).toBeGreaterThanOrEqual(3);
      for (const [, id, output] of reads) {
        expect(ids, `${file}: steps.${id}`).toContain(id);
        if (ours.has(id))
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

// action-validator knows workflows and action metadata only (validateWorkflow, validateAction):
// dependabot.yml is checked against Dependabot's configuration reference — its keys, required
// keys and values as SchemaStore's dependabot-2.0.json lists them — for the parts used here.
describe("dependabot.yml", () => {
  interface Update {
    "package-ecosystem": string;
    directory?: string;
    schedule?: { interval?: string };
    groups?: Record<string, Record<string, unknown>>;
    [key: string]: unknown;
  }
  const UPDATE_KEYS = [
    "allow",
    "assignees",
    "commit-message",
    "cooldown",
    "directories",
    "directory",
    "groups",
    "ignore",
    "insecure-external-code-execution",
    "labels",
    "milestone",
    "open-pull-requests-limit",
    "package-ecosystem",
    "pull-request-branch-name",
    "rebase-strategy",
    "registries",
    "schedule",
    "target-branch",
    "vendor",
    "versioning-strategy",
  ];
  const GROUP_KEYS = [
    "applies-to",
    "dependency-type",
    "patterns",
    "exclude-patterns",
    "update-types",
  ];
  const INTERVALS = ["daily", "weekly", "monthly", "quarterly", "semiannually", "yearly"];

  /** What the reference refuses in the file, one line each; [] for a valid file. */
  function problems(text: string): string[] {
    const c = load(text) as { version?: unknown; updates?: Update[]; [key: string]: unknown };
    const out: string[] = [];
    for (const key of Object.keys(c))
      if (!["version", "updates", "registries", "enable-beta-ecosystems"].includes(key))
        out.push(`unknown key ${key}`);
    if (c.version !== 2) out.push("version must be 2");
    for (const [i, u] of (c.updates ?? []).entries()) {
      for (const key of Object.keys(u))
        if (!UPDATE_KEYS.includes(key)) out.push(`updates[${i}]: unknown key ${key}`);
      if (!u.directory?.startsWith("/")) out.push(`updates[${i}]: directory must start with /`);
      if (!INTERVALS.includes(u.schedule?.interval ?? ""))
        out.push(`updates[${i}]: schedule.interval ${u.schedule?.interval}`);
      for (const [name, group] of Object.entries(u.groups ?? {})) {
        const keys = Object.keys(group);
        if (keys.length === 0 || keys.some((k) => !GROUP_KEYS.includes(k)))
          out.push(`updates[${i}].groups.${name}: keys ${keys.join(", ")}`);
      }
    }
    return out;
  }
  const text = readFileSync(".github/dependabot.yml", "utf8");

  it("is a valid configuration", () => {
    expect(problems(text)).toEqual([]);
  });

  it("the check catches a misspelt key and a wrong interval (it can fail)", () => {
    expect(problems(text.replace("schedule:", "schedul:"))).not.toEqual([]);
    expect(problems(text.replace("interval: weekly", "interval: weekl"))).not.toEqual([]);
  });

  it("updates the npm packages and the pinned actions, a week after their release", () => {
    const { updates } = load(text) as { updates: Update[] };
    expect(updates.map((u) => [u["package-ecosystem"], u.directory])).toEqual([
      ["npm", "/"],
      ["github-actions", "/"],
    ]);
    for (const u of updates) expect(u.cooldown).toEqual({ "default-days": 7 });
  });
});
