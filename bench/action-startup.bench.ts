// npm run bench (third figure): what every job pays for the action before it does anything.
// dist/ is built from the current sources exactly as `npm run build` builds it, into a
// temporary folder; its size and gzipped size are printed (the runner downloads the repository).
// Then main.js is started as the runner starts it, with the inputs of a dry run on one SSH
// node, and timed until it prints its first phase line (::group::): loading the bundle, reading
// and checking the inputs, validating the Cluster and `up`'s checks before any host is
// contacted. It is killed at that line, so nothing after start-up (the network) is timed; the
// node's address refuses connections anyway. post.js is timed to its first line, with the
// inputs and no saved state (as after a main step that never started). Each figure is a ratio
// to starting an empty Node script (spawn to exit), taken in the same rounds. Printed, not
// asserted; the goals are the README's.
import { spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { it } from "vitest";
import { buildDist, filesUnder } from "../scripts/dist.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const FIRST_PHASE = "::group::";

/** Starts `script` and resolves with the ms until `until` appears on stdout (or until exit). */
function timeStart(script: string, env: NodeJS.ProcessEnv, until?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [script], { env, stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    let done = false;
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (!done && until !== undefined && out.includes(until)) {
        done = true;
        resolve(performance.now() - started);
        child.kill("SIGKILL");
      }
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (done) return;
      if (until === undefined && code === 0) resolve(performance.now() - started);
      else reject(new Error(`${script} exited (${code}) before printing ${until}:\n${out}`));
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const GOALS = { sizeMB: 6, main: 3, post: 3 };

/** dist/'s total size and the sum of its files gzipped (level 9), in MB. */
async function distSize(dist: string): Promise<{ raw: number; gzipped: number; files: number }> {
  let raw = 0;
  let gzipped = 0;
  const files = await filesUnder(dist);
  for (const f of files) {
    raw += (await stat(join(dist, f))).size;
    gzipped += gzipSync(await readFile(join(dist, f)), { level: 9 }).length;
  }
  return { raw: raw / 1e6, gzipped: gzipped / 1e6, files: files.length };
}

const verdict = (value: number, goal: number) =>
  `(goal <= ${goal}): ${value <= goal ? "within goal" : "ABOVE GOAL"}`;

it("action size and start-up: dist/, main.js to its first phase, post.js to its first line", async () => {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-bench-startup-"));
  const empty = join(dir, "empty.mjs");
  await writeFile(empty, "");
  const dist = join(dir, "dist");
  try {
    await buildDist(dist);
    const size = await distSize(dist);
    console.log(
      `dist/: ${size.files} files, ${size.raw.toFixed(2)} MB, ${size.gzipped.toFixed(2)} MB gzipped ${verdict(size.raw, GOALS.sizeMB)}`,
    );
    const mainJs = join(dist, "main.js");
    const postJs = join(dist, "post.js");
    const key = generateKeyPairSync("rsa", { modulusLength: 2048 })
      .privateKey.export({ type: "pkcs1", format: "pem" })
      .toString();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dir,
      RUNNER_TEMP: join(dir, "runner-temp"),
      GITHUB_WORKSPACE: dir,
      "INPUT_DRY-RUN": "true",
      INPUT_CLUSTER: [
        "apiVersion: kubeforge.dev/v1alpha1",
        "kind: Cluster",
        "kubernetesVersion: v1.35.0",
        "nodes:",
        `- {name: n1, role: control-plane, host: "ssh://root@127.0.0.1:1", ssh: {hostKeyFingerprints: ["SHA256:${"A".repeat(43)}"]}}`,
        "",
      ].join("\n"),
      "INPUT_SSH-PRIVATE-KEY": key,
    };
    for (const f of ["GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_ENV"]) {
      env[f] = join(dir, f);
      await writeFile(env[f], "");
    }
    // Warm-up: the file cache for Node and the bundle.
    await timeStart(empty, env);
    await timeStart(mainJs, env, FIRST_PHASE);
    await timeStart(postJs, env, "");
    const emptyMs: number[] = [];
    const mainMs: number[] = [];
    const postMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      emptyMs.push(await timeStart(empty, env));
      mainMs.push(await timeStart(mainJs, env, FIRST_PHASE));
      postMs.push(await timeStart(postJs, env, ""));
    }
    const e = median(emptyMs);
    const m = median(mainMs);
    const p = median(postMs);
    console.log(
      `action start-up (${ROUNDS} rounds, medians): empty Node script ${e.toFixed(0)} ms, main.js to its first phase ${m.toFixed(0)} ms, ratio ${(m / e).toFixed(2)} ${verdict(m / e, GOALS.main)}`,
    );
    console.log(
      `post step start-up: post.js to its first line ${p.toFixed(0)} ms, ratio ${(p / e).toFixed(2)} ${verdict(p / e, GOALS.post)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 300_000);
