import type * as CacheModule from "@actions/cache";

/**
 * GitHub's cache service through @actions/cache, or undefined where it is not available. The
 * client (and the Azure storage client under it) is loaded only then: a job that caches nothing
 * never loads it. Neither of the service's URLs set means no service, whatever its version.
 */
export async function cacheService(
  env: NodeJS.ProcessEnv,
): Promise<typeof CacheModule | undefined> {
  if (!env.ACTIONS_CACHE_URL && !env.ACTIONS_RESULTS_URL) return undefined;
  const cache = await import("@actions/cache");
  return cache.isFeatureAvailable() ? cache : undefined;
}
