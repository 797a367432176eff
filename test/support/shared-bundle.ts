import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { type BuildOptions, build } from "esbuild";
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

const exists = async (path: string) => (await stat(path).catch(() => undefined)) !== undefined;

/**
 * Bundles with esbuild (the options for an output folder) into the run's shared folder, in a folder named by the output's content
 * (`<name>-<hash>`), and returns that folder. Test files running side by side that build the same
 * sources use one copy instead of each leaving its own (the CLI bundle is over 20 MB); processes
 * started from it may outlive the file that built it, so no test file removes it: the run does.
 */
export async function sharedBundle(
  name: string,
  options: (outdir: string) => BuildOptions,
): Promise<string> {
  const outdir = join(sharedTestDir(), `${name}-build`);
  const { outputFiles } = await build({ ...options(outdir), write: false });
  const hash = createHash("sha256");
  for (const f of outputFiles)
    hash.update(relative(outdir, f.path)).update("\0").update(f.contents);
  const dir = join(sharedTestDir(), `${name}-${hash.digest("hex").slice(0, 16)}`);
  if (await exists(dir)) return dir;
  const staging = `${dir}.${randomBytes(4).toString("hex")}`;
  for (const f of outputFiles) {
    const path = join(staging, relative(outdir, f.path));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, f.contents);
    // Read by other users too (a runner user, SSH test users), whatever the umask.
    await chmod(path, 0o644);
  }
  await chmod(staging, 0o755);
  try {
    await rename(staging, dir);
  } catch (err) {
    // Another test file finished the same bundle first: its copy is as good.
    await rm(staging, { recursive: true, force: true });
    if (!(await exists(dir))) throw err;
  }
  return dir;
}
