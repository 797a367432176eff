import { describe, expect, it } from "vitest";
import {
  artifactCacheKeys,
  artifactCachePaths,
  restoreArtifacts,
  saveArtifacts,
} from "../../../src/action/artifact-cache.js";

// What the action keeps between runs with GitHub's cache service, and that it stays out of the
// way where there is none.

describe("release artifact cache", () => {
  it("caches kubeforge's tool-cache entries only, keyed by OS, architecture and version", () => {
    expect(artifactCachePaths({ RUNNER_TOOL_CACHE: "/opt/hostedtoolcache" })).toEqual([
      "/opt/hostedtoolcache/kubeforge-*",
    ]);
    const { key, prefix } = artifactCacheKeys("v1.35.2");
    expect(key).toBe(`kubeforge-artifacts-v1-${process.platform}-${process.arch}-v1.35.2`);
    expect(key.startsWith(prefix)).toBe(true);
    expect(artifactCacheKeys("v1.34.0").prefix).toBe(prefix);
  });

  it("is a no-op outside GitHub Actions or without the cache service", async () => {
    const lines: string[] = [];
    const log = (l: string) => lines.push(l);
    for (const env of [{}, { RUNNER_TOOL_CACHE: "/opt/hostedtoolcache" }]) {
      const saved = { ...process.env };
      delete process.env.ACTIONS_CACHE_URL;
      delete process.env.ACTIONS_RESULTS_URL;
      try {
        expect(await restoreArtifacts(env, "v1.35.2", log)).toBeUndefined();
        await saveArtifacts(env, "v1.35.2", undefined, log);
      } finally {
        process.env = saved;
      }
    }
    expect(lines).toEqual([]);
  });
});
