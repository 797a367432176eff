import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { userCacheDir } from "../cache-home.js";
import { sha256File } from "./checksum.js";

// The runner-side artifact cache. Entries use @actions/tool-cache's layout,
// <root>/<tool>/<version without "v">/<arch>/ plus an empty "<arch>.complete" marker written
// last (tool-cache.js _createToolPath/_completeToolPath), so in GitHub Actions the entries live
// in RUNNER_TOOL_CACHE where `tc.find("kubeforge-kubelet", "1.35.0", "amd64")` sees them and
// @actions/cache can save and restore the folder between runs. The entries are placed by
// renaming a verified staging folder (no copy of a 100 MB kubelet), and each carries a
// manifest of its files' SHA-256, checked again before every reuse.

/** The manifest inside every entry (a dotfile: tools reading the folder ignore it). */
const MANIFEST = ".kubeforge-artifact.json";

export interface CacheManifest {
  /** URL or runner path the entry came from. */
  source: string;
  /** SHA-256 of what was downloaded (the binary, or the archive). */
  sha256: string;
  /** Entry-relative path → SHA-256 and mode of every file in the entry. */
  files: Record<string, { sha256: string; mode: number }>;
}

export interface CacheKey {
  tool: string;
  version: string;
  arch: string;
}

/**
 * The cache root: RUNNER_TOOL_CACHE in GitHub Actions (@actions/tool-cache's own root), else
 * $XDG_CACHE_HOME/kubeforge, else ~/.cache/kubeforge (XDG Base Directory default).
 */
export function artifactCacheDir(env: NodeJS.ProcessEnv): string {
  const toolCache = env.RUNNER_TOOL_CACHE;
  if (toolCache && isAbsolute(toolCache)) return toolCache;
  return userCacheDir(env);
}

/** tool-cache's folder name for a version (semver.clean: no leading "v"). */
function versionFolder(version: string): string {
  return version.trim().replace(/^[=v]+/, "");
}

export function entryDir(root: string, key: CacheKey): string {
  return join(root, key.tool, versionFolder(key.version), key.arch);
}

/**
 * A verified entry's manifest, or undefined when there is none. An entry whose files do not
 * match its manifest (or without one) is removed, with a log line saying why.
 */
export async function readVerifiedEntry(
  root: string,
  key: CacheKey,
  log?: (line: string) => void,
): Promise<CacheManifest | undefined> {
  const dir = entryDir(root, key);
  const complete = await stat(`${dir}.complete`).catch(() => undefined);
  const folder = await stat(dir).catch(() => undefined);
  if (!complete && !folder) return undefined;
  const problem = await entryProblem(dir, complete !== undefined);
  if (typeof problem !== "string") return problem;
  log?.(`cached ${key.tool} ${key.version} (${key.arch}) in ${dir} ${problem}; fetching it again`);
  await removeEntry(root, key);
  return undefined;
}

async function entryProblem(dir: string, complete: boolean): Promise<string | CacheManifest> {
  if (!complete) return "is incomplete";
  let manifest: CacheManifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, MANIFEST), "utf8")) as CacheManifest;
  } catch {
    return "has no readable manifest";
  }
  const files = Object.entries(manifest.files ?? {});
  if (files.length === 0) return "lists no files";
  for (const [rel, want] of files) {
    const got = await sha256File(join(dir, rel)).catch(() => undefined);
    if (got === undefined) return `lacks ${rel}`;
    if (got !== want.sha256) return `is corrupt (${rel}: sha256 ${got}, expected ${want.sha256})`;
  }
  return manifest;
}

export async function removeEntry(root: string, key: CacheKey): Promise<void> {
  const dir = entryDir(root, key);
  await rm(`${dir}.complete`, { force: true });
  await rm(dir, { recursive: true, force: true });
}

/** A staging folder on the cache's file system (so placing it is a rename); removed by `dispose`. */
export async function stagingDir(root: string): Promise<{ dir: string; dispose(): Promise<void> }> {
  await mkdir(root, { recursive: true });
  const dir = await mkdtemp(join(root, ".kubeforge-staging-"));
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Moves a verified staging folder into place as the entry for `key` (its manifest written
 * first, the .complete marker last). When another process placed the same entry meanwhile,
 * its entry is kept if it verifies.
 */
export async function placeEntry(
  root: string,
  key: CacheKey,
  staged: string,
  manifest: CacheManifest,
): Promise<string> {
  const dir = entryDir(root, key);
  await writeFile(join(staged, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, {
    mode: 0o644,
  });
  await removeEntry(root, key);
  await mkdir(dirname(dir), { recursive: true });
  try {
    await rename(staged, dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if ((code === "ENOTEMPTY" || code === "EEXIST") && (await readVerifiedEntry(root, key))) {
      return dir;
    }
    throw new Error(`placing ${key.tool} ${key.version} in the cache ${dir} failed`, {
      cause: e,
    });
  }
  // The marker is written atomically too: a reader never sees a half-written entry as complete.
  const tmp = `${dir}.complete.${randomBytes(4).toString("hex")}`;
  await writeFile(tmp, "");
  await rename(tmp, `${dir}.complete`);
  return dir;
}
