import { spawn } from "node:child_process";
import { chown, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { buildOptions } from "../../../scripts/build-options.mjs";
import { shellJoin, shellQuote } from "../../../src/remote/ssh/quote.js";
import { sharedBundle } from "../../support/shared-bundle.js";
import { fileDir } from "../../support/temp-dir.js";

// The action's main step run as the GitHub runner runs it: `node main.js` from a bundle of the
// current sources (built as `npm run build` builds dist/main.js), inputs in INPUT_* variables
// (the runner upper-cases the name and turns spaces into '_'; dashes stay), and the command
// files GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STATE, GITHUB_STEP_SUMMARY plus RUNNER_TEMP in a
// temporary folder.

/** One of the action's entry points bundled with the build's options, in the run's shared folder. */
async function bundled(entry: "main" | "post"): Promise<string> {
  const dir = await sharedBundle(`action-${entry}`, (outdir) => ({
    ...buildOptions(outdir),
    entryPoints: { [entry]: `src/action/${entry}.ts` },
  }));
  return join(dir, `${entry}.js`);
}

/** main.js bundled from the current sources (shared by the run's test files: never remove it). */
export const bundledMain = () => bundled("main");

/** post.js bundled from the current sources (shared by the run's test files: never remove it). */
export const bundledPost = () => bundled("post");

/** Reads a GitHub command file ("name<<delimiter\nvalue\ndelimiter" entries); later entries win. */
export function commandFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /^([^<\n]+)<<(\S+)\n([\s\S]*?)\n\2$/gm;
  for (const m of text.matchAll(re)) out.set(m[1]!, m[3]!);
  return out;
}

export interface StepResult {
  code: number | null;
  stdout: string;
  stderr: string;
  outputs: Map<string, string>;
  env: Map<string, string>;
  state: Map<string, string>;
  /** The raw GITHUB_STATE file (every value saved, not only the last of each name). */
  stateFile: string;
  summary: string;
  /** Folders the step added to PATH for later steps (GITHUB_PATH, one a line). */
  paths: string[];
  runnerTemp: string;
  /** Values the step registered with ::add-mask:: (unescaped), in order. */
  masks: string[];
}

/** The runner's command-value escaping, undone (actions/toolkit command.ts escapeData). */
function unescapeData(s: string): string {
  return s.replace(/%0D/g, "\r").replace(/%0A/g, "\n").replace(/%25/g, "%");
}

export interface RunStepOptions {
  inputs: Record<string, string>;
  /** RUNNER_TEMP; a new folder by default. */
  runnerTemp?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /**
   * Runs the step somewhere else (as another user, on a test host): the step's folders are
   * handed to `owner`, the whole step (its folder, environment and `node <script>`) is written
   * to a shell script, and `launch(scriptPath)` gives the argv run here (e.g. ssh ... sh FILE).
   */
  elsewhere?: {
    owner: { uid: number; gid: number };
    launch: (stepScript: string) => string[];
    /** The Node binary there (default this one's, which the other user may not reach). */
    node?: string;
  };
}

/** Runs main.js as the runner does and collects what it wrote. */
export async function runStep(mainJs: string, o: RunStepOptions): Promise<StepResult> {
  // Kept until the file's tests end: a later step (the post step) may be given its RUNNER_TEMP.
  const work = await fileDir("kubeforge-action-step-");
  const runnerTemp = o.runnerTemp ?? join(work, "runner-temp");
  const files: Record<string, string> = {};
  for (const k of [
    "GITHUB_OUTPUT",
    "GITHUB_ENV",
    "GITHUB_STATE",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_PATH",
  ]) {
    files[k] = join(work, k);
    await writeFile(files[k], "");
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    RUNNER_TEMP: runnerTemp,
    GITHUB_WORKSPACE: work,
    GITHUB_ACTIONS: "true",
    ...files,
    ...o.env,
  };
  for (const [k, v] of Object.entries(o.inputs))
    env[`INPUT_${k.replace(/ /g, "_").toUpperCase()}`] = v;
  await mkdir(runnerTemp, { recursive: true });
  let argv = [process.execPath, mainJs];
  if (o.elsewhere) {
    const stepScript = join(work, "step.sh");
    const assignments = Object.entries(env)
      .filter((e): e is [string, string] => e[1] !== undefined)
      .map(([k, v]) => `${k}=${v}`);
    await writeFile(
      stepScript,
      `cd ${shellQuote(work)} && exec ${shellJoin(["env", "-i", ...assignments, o.elsewhere.node ?? process.execPath, mainJs])}\n`,
    );
    const { uid, gid } = o.elsewhere.owner;
    for (const p of [work, runnerTemp, stepScript, ...Object.values(files)])
      await chown(p, uid, gid);
    argv = o.elsewhere.launch(stepScript);
  }
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = spawn(argv[0]!, argv.slice(1), { env, cwd: work });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      // A step that does not exit by itself (an open handle) fails the test: killed, code null.
      const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 400_000);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    },
  );
  const read = (k: string) => readFile(files[k]!, "utf8");
  const stateFile = await read("GITHUB_STATE");
  return {
    ...result,
    outputs: commandFile(await read("GITHUB_OUTPUT")),
    env: commandFile(await read("GITHUB_ENV")),
    state: commandFile(stateFile),
    stateFile,
    summary: await read("GITHUB_STEP_SUMMARY"),
    paths: (await read("GITHUB_PATH")).split("\n").filter((l) => l !== ""),
    runnerTemp,
    masks: result.stdout
      .split("\n")
      .filter((l) => l.startsWith("::add-mask::"))
      .map((l) => unescapeData(l.slice("::add-mask::".length))),
  };
}

/**
 * The stdout lines that would show `secret` in the job log: lines holding it where the values
 * registered with ::add-mask:: *before* that line do not cover it (the runner replaces each
 * registered value it finds in a line; masks registered later do not help).
 */
export function unmaskedLines(stdout: string, secret: string): string[] {
  const registered: string[] = [];
  const bad: string[] = [];
  for (const line of stdout.split("\n")) {
    if (line.startsWith("::add-mask::")) {
      registered.push(unescapeData(line.slice("::add-mask::".length)));
      continue;
    }
    if (!line.includes(secret)) continue;
    // The runner replaces every registered value found in the line; what is left must not
    // hold the secret.
    let masked = line;
    for (const r of [...registered].sort((a, b) => b.length - a.length)) {
      if (r !== "") masked = masked.split(r).join("***");
    }
    if (masked.includes(secret)) bad.push(line);
  }
  return bad;
}

/** A step's exit code and the tails of its output, for a failed expectation's message. */
export function stepReport(step: StepResult): string {
  return `exit ${step.code}\n--- stdout\n${step.stdout.slice(-8000)}\n--- stderr\n${step.stderr.slice(-3000)}`;
}

/** Every file under `dir` (a step's folder), by its path relative to `dir`, as text. */
export async function filesOf(dir: string): Promise<Record<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const out: Record<string, string> = {};
  for (const e of entries.filter((n) => n.isFile())) {
    const path = join(e.parentPath, e.name);
    out[relative(dir, path)] = await readFile(path, "utf8");
  }
  return out;
}
