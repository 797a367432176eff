import { generateKeyPairSync } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Metafile } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { buildOptions } from "../../../scripts/build-options.mjs";
import { fileDir } from "../../support/temp-dir.js";
import { runStep } from "./support.js";

// What the shipped bundles load at run time. dist/ is split into chunks and the heavy clients
// (ssh2, @actions/artifact, @actions/cache) are imported with import() where they are used, so a
// job that never needs one never loads its code. Built here exactly as dist/ is (all three entry
// points sharing chunks), run as the runner runs them, and every module file Node loads recorded
// through a module hook; esbuild's metafile says which package's code each output file holds.

let dist: string;
let metafile: Metafile;
let hook: string;

beforeAll(async () => {
  dist = await fileDir("kubeforge-loaded-modules-");
  const out = join(dist, "dist");
  ({ metafile } = await build({ ...buildOptions(out), metafile: true }));
  // Node's synchronous module hooks (module.registerHooks): every URL loaded, one a line.
  hook = join(dist, "record-loads.mjs");
  await writeFile(
    hook,
    [
      'import { registerHooks } from "node:module";',
      'import { appendFileSync } from "node:fs";',
      "registerHooks({",
      "  load(url, context, next) {",
      '    appendFileSync(process.env.KUBEFORGE_TEST_LOADS, url + "\\n");',
      "    return next(url, context);",
      "  },",
      "});",
      "",
    ].join("\n"),
  );
}, 120_000);

/** The output files (absolute paths) holding code of the package under node_modules/`pkg`/. */
function outputsWith(pkg: string): string[] {
  const marker = `node_modules/${pkg}/`;
  return Object.entries(metafile.outputs)
    .filter(([, o]) => Object.keys(o.inputs).some((i) => i.includes(marker)))
    .map(([file]) => join(process.cwd(), file));
}

/** Runs one entry point of the built dist/ and returns the output files it loaded. */
async function loadedBy(
  entry: "main" | "post",
  inputs: Record<string, string>,
  env: NodeJS.ProcessEnv = {},
): Promise<{ loaded: string[]; stdout: string; code: number | null }> {
  const record = join(dist, `${entry}-${Object.keys(env).length}-loads.txt`);
  await writeFile(record, "");
  const step = await runStep(join(dist, "dist", `${entry}.js`), {
    inputs,
    env: {
      ...env,
      KUBEFORGE_TEST_LOADS: record,
      NODE_OPTIONS: `--import=${pathToFileURL(hook).href}`,
    },
    timeoutMs: 120_000,
  });
  const urls = (await readFile(record, "utf8")).split("\n").filter((u) => u.startsWith("file:"));
  const loaded = urls.map((u) => decodeURIComponent(new URL(u).pathname));
  return { loaded, stdout: step.stdout, code: step.code };
}

describe("the shipped bundles load heavy clients only when they are used", () => {
  it("holds ssh2 and the artifact client in chunks of their own, away from the entry points", () => {
    const entries = ["main.js", "post.js", "cli.js"].map((f) => join(dist, "dist", f));
    for (const pkg of ["ssh2", "@actions/artifact", "@actions/cache"]) {
      const files = outputsWith(pkg);
      expect(files.length, pkg).toBeGreaterThan(0);
      expect(
        files.filter((f) => entries.includes(f)),
        pkg,
      ).toEqual([]);
    }
  });

  it("a dry run of a one-node cluster on the runner loads no SSH client", async () => {
    const run = await loadedBy("main", { "dry-run": "true" });
    expect(run.code, run.stdout).toBe(0);
    // The recording works: the entry point and chunks of dist/ are among the loaded files.
    expect(run.loaded).toContain(join(dist, "dist", "main.js"));
    expect(run.loaded.some((f) => f.startsWith(join(dist, "dist", "chunks")))).toBe(true);
    const ssh2 = outputsWith("ssh2");
    expect(run.loaded.filter((f) => ssh2.includes(f))).toEqual([]);
  });

  it("the post step of a successful job loads neither the artifact client nor the cache client", async () => {
    const run = await loadedBy("post", { "dry-run": "true", "job-status": "success" });
    expect(run.code, run.stdout).toBe(0);
    expect(run.loaded).toContain(join(dist, "dist", "post.js"));
    const heavy = [...outputsWith("@actions/artifact"), ...outputsWith("@actions/cache")];
    expect(run.loaded.filter((f) => heavy.includes(f))).toEqual([]);
  });

  it("an SSH node does load the SSH client (the recording sees lazy chunks)", async () => {
    const pin = `SHA256:${"A".repeat(43)}`;
    const run = await loadedBy(
      "main",
      {
        cluster: [
          "apiVersion: kubeforge.dev/v1alpha1",
          "kind: Cluster",
          "kubernetesVersion: v1.35.0",
          "nodes:",
          `- {name: n1, role: control-plane, host: "ssh://root@127.0.0.1:1", ssh: {hostKeyFingerprints: ["${pin}"]}}`,
          "",
        ].join("\n"),
        "dry-run": "true",
        "ssh-private-key": generateKeyPairSync("ed25519")
          .privateKey.export({ type: "pkcs8", format: "pem" })
          .toString(),
      },
      { KUBEFORGE_CASE: "ssh" },
    );
    // Port 1 refuses the connection: the step fails, but only after loading ssh2 to try.
    expect(run.code).not.toBe(0);
    const ssh2 = outputsWith("ssh2");
    expect(run.loaded.filter((f) => ssh2.includes(f)).length, run.stdout).toBeGreaterThan(0);
  });
});
