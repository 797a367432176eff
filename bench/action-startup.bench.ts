// npm run bench (third figure): the action's start-up cost. The bundled main.js (built from the
// current sources as `npm run build` builds dist/main.js) is started as the runner starts it,
// with the inputs of a dry run on one SSH node, and timed until it prints its first phase line
// (::group::connect): loading the bundle, reading and checking the inputs, validating the
// Cluster and `up`'s checks before any host is contacted. It is killed at that line, so nothing
// after start-up (the network) is timed; the node's address refuses connections anyway. The
// figure is a ratio to starting an empty Node script (spawn to exit), taken in the same run.
// Printed, not asserted.
import { spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "vitest";
import { bundledMain } from "../test/integration/action/support.js";

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

it("action start-up: bundled main.js to its first phase vs an empty Node script", async () => {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-bench-startup-"));
  const empty = join(dir, "empty.mjs");
  await writeFile(empty, "");
  const mainJs = await bundledMain();
  try {
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
    const emptyMs: number[] = [];
    const mainMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      emptyMs.push(await timeStart(empty, env));
      mainMs.push(await timeStart(mainJs, env, FIRST_PHASE));
    }
    const e = median(emptyMs);
    const m = median(mainMs);
    console.log(
      `action start-up (${ROUNDS} rounds, medians): empty Node script ${e.toFixed(0)} ms, main.js to its first phase ${m.toFixed(0)} ms, ratio ${(m / e).toFixed(2)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 300_000);
