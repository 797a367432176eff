import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

// What a test left in a temporary folder, described for the failure message: each entry with its
// size, so a forgotten bundle copy (tens of MB) stands out from a stray socket.

/** The environment variable naming the test run's own temporary folder (set by global-setup). */
export const RUN_DIR_ENV = "KUBEFORGE_TEST_RUN_DIR";

/** The run folder's sub-folder for what test files share on purpose (bundles built once a run). */
export const SHARED_DIR_NAME = "shared";

/** The run folder's sub-folder naming each test file's folder (files are named by a hash). */
export const NAMES_DIR_NAME = "names";

/** Bytes under a path, symbolic links not followed; a file vanishing meanwhile counts nothing. */
async function sizeOf(path: string): Promise<number> {
  const st = await lstat(path).catch(() => undefined);
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  const names = await readdir(path).catch(() => [] as string[]);
  let total = 0;
  for (const name of names) total += await sizeOf(join(path, name));
  return total;
}

const human = (bytes: number) =>
  bytes >= 1 << 20
    ? `${(bytes / (1 << 20)).toFixed(1)} MB`
    : bytes >= 1 << 10
      ? `${(bytes / (1 << 10)).toFixed(1)} kB`
      : `${bytes} B`;

/** "name (kind, size)" for each entry of dir, sorted; [] when dir is empty or gone. */
export async function describeEntries(dir: string, skip: string[] = []): Promise<string[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => !skip.includes(n));
  const out: string[] = [];
  for (const name of names.sort()) {
    const path = join(dir, name);
    const st = await lstat(path).catch(() => undefined);
    const kind = !st ? "gone" : st.isDirectory() ? "folder" : st.isSocket() ? "socket" : "file";
    out.push(`${name} (${kind}, ${human(await sizeOf(path))})`);
  }
  return out;
}
