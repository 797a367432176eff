import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import LongFilesFirst from "./test/support/sequencer.js";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Every run and every test file get a temporary folder of their own, which must be left empty.
    globalSetup: ["test/support/run-temp/global-setup.ts"],
    setupFiles: ["test/support/run-temp/per-file.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests start real daemons on fixed-free ports; keep files isolated in forks.
    pool: "forks",
    // Files that mostly wait (SSH handshakes, etcd elections) overlap well, but the cluster files
    // (an `up` of four nodes, an upgrade) each keep about one core busy on their own, measured
    // with process accounting: with four files at once on 2 cores the load reached 11-16 and
    // steps of those files ran 2-3 times slower than alone, past their timeouts. One file more
    // than there are cores keeps the machine busy without that pile-up. Every test file makes its
    // own namespaces, bridges, ports and folders, so files can overlap.
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: LongFilesFirst },
  },
});
