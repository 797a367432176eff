import { join } from "node:path";
import { artifactCacheDir } from "../node/artifacts/fetch.js";
import { cacheService as serviceOf } from "./cache-service.js";

// The downloaded release artifacts (kubelet, kubectl, crictl, CNI plugins) kept between runs
// with GitHub's cache service: the main step restores them into the tool cache before `up`
// downloads anything, the post step saves them when the run succeeded and did not find them
// all already (so the upload never delays the job's own steps). Every file is still verified
// against its recorded SHA-256 before use (node/artifacts/cache.ts). Outside GitHub Actions, or
// where the cache service is not available, both are no-ops.

/** The cache service, inside GitHub Actions (whose tool cache holds the artifacts) only. */
const cacheService = (env: NodeJS.ProcessEnv) =>
  env.RUNNER_TOOL_CACHE ? serviceOf(env) : Promise.resolve(undefined);

/** Bumped when the cached layout changes. */
const LAYOUT = "v1";

/** The cached folders: kubeforge's entries in the tool cache, nothing else of the runner's. */
export function artifactCachePaths(env: NodeJS.ProcessEnv): string[] {
  return [join(artifactCacheDir(env), "kubeforge-*")];
}

/** Primary key: OS, architecture and the Kubernetes version asked for; a prefix restores older. */
export function artifactCacheKeys(kubernetesVersion: string): { key: string; prefix: string } {
  const prefix = `kubeforge-artifacts-${LAYOUT}-${process.platform}-${process.arch}-`;
  return { key: `${prefix}${kubernetesVersion}`, prefix };
}

/** Restores the artifacts; returns the key restored (exact or an older prefix match). */
export async function restoreArtifacts(
  env: NodeJS.ProcessEnv,
  kubernetesVersion: string,
  log: (line: string) => void,
): Promise<string | undefined> {
  const cache = await cacheService(env);
  if (!cache) return undefined;
  const { key, prefix } = artifactCacheKeys(kubernetesVersion);
  try {
    const hit = await cache.restoreCache(artifactCachePaths(env), key, [prefix]);
    log(
      hit ? `[cache] release artifacts restored (${hit})` : "[cache] no cached release artifacts",
    );
    return hit;
  } catch (e) {
    // A cache outage never fails the job: the artifacts are downloaded instead.
    log(`[cache] could not restore the release artifacts: ${(e as Error).message}`);
    return undefined;
  }
}

/** Saves the artifacts under the exact key, unless that key was restored. */
export async function saveArtifacts(
  env: NodeJS.ProcessEnv,
  kubernetesVersion: string,
  restored: string | undefined,
  log: (line: string) => void,
): Promise<void> {
  const { key } = artifactCacheKeys(kubernetesVersion);
  if (restored === key) return;
  const cache = await cacheService(env);
  if (!cache) return;
  try {
    await cache.saveCache(artifactCachePaths(env), key);
    log(`[cache] release artifacts saved (${key})`);
  } catch (e) {
    log(`[cache] could not save the release artifacts: ${(e as Error).message}`);
  }
}
