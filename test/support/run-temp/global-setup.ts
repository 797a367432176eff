import { chmod, mkdir, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NAMES_DIR_NAME, RUN_DIR_ENV, SHARED_DIR_NAME, describeEntries } from "./leftovers.js";

// A test run leaves nothing behind in the machine's temporary folder. The run gets a folder of
// its own, made here and handed to every test file as TMPDIR (each file then takes a sub-folder,
// per-file.ts), so whatever a test or a program it starts puts in the temporary folder lands
// where this run alone writes: other test runs and programs on the machine cannot make it look
// dirty or clean. When the run ends, anything still in that folder (written after its file's
// own check, or outside any file) fails the run, named; then the folder is removed either way.

export default async function setup(): Promise<() => Promise<void>> {
  const run = await mkdtemp(join(tmpdir(), "kubeforge-tests-"));
  // Traversable: tests run programs as other users (a runner user, SSH test users) on files here.
  await chmod(run, 0o755);
  for (const sub of [SHARED_DIR_NAME, NAMES_DIR_NAME]) await mkdir(join(run, sub), { mode: 0o755 });
  process.env[RUN_DIR_ENV] = run;
  process.env.TMPDIR = run;

  return async () => {
    const names = join(run, NAMES_DIR_NAME);
    const problems: string[] = [];
    for (const entry of await readdir(run)) {
      if (entry === SHARED_DIR_NAME || entry === NAMES_DIR_NAME) continue;
      const file = await readFile(join(names, entry), "utf8").catch(() => undefined);
      const left = file ? await describeEntries(join(run, entry)) : [];
      problems.push(
        file
          ? `${file} left in its temporary folder: ${left.join(", ") || "(nothing, but the folder remains)"}`
          : `${entry} was left in the run's temporary folder by something outside any test file: ${(await describeEntries(run, [SHARED_DIR_NAME, NAMES_DIR_NAME])).join(", ")}`,
      );
    }
    await rm(run, { recursive: true, force: true });
    if (problems.length > 0)
      throw new Error(
        `the test run left files behind:\n - ${[...new Set(problems)].join("\n - ")}`,
      );
  };
}
