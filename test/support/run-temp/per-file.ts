import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { join, relative } from "node:path";
import { afterAll, expect } from "vitest";
import { NAMES_DIR_NAME, RUN_DIR_ENV, SHARED_DIR_NAME, describeEntries } from "./leftovers.js";

// Each test file gets its own temporary folder inside the run's (global-setup.ts) as TMPDIR, for
// itself and every program it starts that keeps TMPDIR; after the file's own afterAll hooks (this
// hook is registered first, and vitest runs afterAll hooks in reverse order), the folder must be
// empty, or the file fails naming what it left. The folder's name is a short hash of the file's
// path, not the path itself: Unix socket paths under it must stay within 108 bytes.

const run = process.env[RUN_DIR_ENV];
if (run) {
  const file = relative(process.cwd(), expect.getState().testPath ?? "unknown test file");
  const id = createHash("sha256").update(file).digest("hex").slice(0, 8);
  const dir = join(run, id);
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  writeFileSync(join(run, NAMES_DIR_NAME, id), file);
  process.env.TMPDIR = dir;
  // kubeforge keeps Node's compile cache, by default in the temporary folder (this file's, which
  // must be left empty): the programs this file starts keep it in the run's shared folder. Not
  // for the test processes themselves, which would write theirs while the run removes its folder.
  process.env.NODE_COMPILE_CACHE = join(run, SHARED_DIR_NAME, "node-compile-cache");

  afterAll(async () => {
    const left = await describeEntries(dir);
    if (left.length > 0)
      throw new Error(
        `${file} left ${left.length} entr${left.length === 1 ? "y" : "ies"} in its temporary folder (${dir}): ${left.join(", ")}; a test removes what it makes, in afterAll or finally`,
      );
    await rmdir(dir);
  });
}
