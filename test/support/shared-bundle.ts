import { createHash, randomBytes } from "node:crypto";
import { chmod, readdir, rename, stat } from "node:fs/promises";
import { join } from "node:path";
import { type BuildOptions, build } from "esbuild";
import { withFileLock } from "./file-lock.js";
import { RUN_DIR_ENV, SHARED_DIR_NAME } from "./run-temp/leftovers.js";

/** The test run's folder for what its test files share; the run's teardown removes it. */
export function sharedTestDir(): string {
  const run = process.env[RUN_DIR_ENV];
  if (!run)
    throw new Error(
      `${RUN_DIR_ENV} is not set: run the tests through vitest with this project's config (npm test), whose global setup makes the run's folders`,
    );
  return join(run, SHARED_DIR_NAME);
}

/** For a bundle being built by another file; the simulated kubelet's takes about 10 s alone. */
const BUILD_WAIT_MS = 10 * 60_000;

const exists = async (path: string) => (await stat(path).catch(() => undefined)) !== undefined;

/**
 * Bundles with esbuild (the options for an output folder) into the run's shared folder and
 * returns that folder, `<name>-<hash of the options>`. The sources cannot change during a run,
 * so the first test file to ask builds it and every other file of the run reuses it: building
 * the bundles once per file took over ten CPU minutes of a run (the simulated kubelet's bundle
 * alone is 19 MB). Files asking at once wait for the one building (an flock). Processes
 * started from a bundle may outlive the file that built it, so no test file removes it: the
 * run does.
 */
export async function sharedBundle(
  name: string,
  options: (outdir: string) => BuildOptions,
): Promise<string> {
  const placeholder = "<outdir>";
  const key = createHash("sha256")
    .update(JSON.stringify(options(placeholder)))
    .digest("hex")
    .slice(0, 16);
  const dir = join(sharedTestDir(), `${name}-${key}`);
  if (await exists(dir)) return dir;
  return withFileLock(
    `${dir}.lock`,
    async () => {
      if (!(await exists(dir))) await buildInto(dir, options);
      return dir;
    },
    BUILD_WAIT_MS,
  );
}

async function buildInto(dir: string, options: (outdir: string) => BuildOptions): Promise<void> {
  const staging = `${dir}.${randomBytes(4).toString("hex")}`;
  await build({ ...options(staging), write: true });
  // Read by other users too (a runner user, SSH test users), whatever the umask.
  await chmodTree(staging);
  await rename(staging, dir);
}

async function chmodTree(path: string): Promise<void> {
  const entries = await readdir(path, { withFileTypes: true });
  await chmod(path, 0o755);
  for (const e of entries) {
    const child = join(path, e.name);
    if (e.isDirectory()) await chmodTree(child);
    else await chmod(child, 0o644);
  }
}
