import { defineConfig } from "vitest/config";

// `npm run bench`'s TypeScript benchmarks: run by vitest for the test support they share with
// the integration tests; each prints its figure.
export default defineConfig({
  test: {
    include: ["bench/**/*.bench.ts"],
    // The test support's temporary folders, as in vitest.config.ts (bundles are shared there).
    globalSetup: ["test/support/run-temp/global-setup.ts"],
    setupFiles: ["test/support/run-temp/per-file.ts"],
    pool: "forks",
    // One benchmark at a time: each is a ratio of two timings on a two-core machine, and
    // another benchmark running beside it (the upgrade's five hosts) would be in both.
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 120_000,
  },
});
