import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, onTestFinished } from "vitest";

// Folders in the temporary folder (TMPDIR) that remove themselves, so a test cannot forget to:
// the test run fails when a test file leaves anything there (test/support/run-temp/).

/**
 * A new folder, removed with everything in it when the test that made it finishes, passed or
 * failed. Only inside a test (it throws elsewhere); a folder tests share is fileDir's.
 */
export async function testDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const fileDirs: string[] = [];
// Registered when a test file's imports are read, so on that file: it runs after the file's own
// afterAll hooks (vitest runs them in reverse order), which may still use the folders.
afterAll(async () => {
  for (const dir of fileDirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/**
 * A new folder, removed with everything in it after the file's own afterAll hooks: for what
 * several tests of a file use (a step's RUNNER_TEMP that the post step reads later, a host).
 */
export async function fileDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  fileDirs.push(dir);
  return dir;
}
