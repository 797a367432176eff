import { defineConfig } from "vitest/config";

// `npm run bench`'s TypeScript benchmarks: run by vitest for the test support they share with
// the integration tests; each prints its figure.
export default defineConfig({
  test: {
    include: ["bench/**/*.bench.ts"],
    pool: "forks",
    testTimeout: 900_000,
    hookTimeout: 120_000,
  },
});
