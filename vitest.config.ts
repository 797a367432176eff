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
    // The integration files mostly wait (SSH handshakes, etcd elections, simulated kubelets),
    // so one file more than there are cores keeps the machine busy; vitest's default (cores − 1)
    // ran a 2-core machine's files one at a time. Measured there on the whole suite: 1379 s
    // with 1 file at once, 709 s with 3, 671 s with 4 (each file slower under the contention).
    // Every test file makes its own namespaces, bridges, ports and folders, so files can overlap.
    // One more again while the Docker cluster files run first: one of them mostly waits for the
    // other's node image.
    maxWorkers: availableParallelism() + 2,
    sequence: { sequencer: LongFilesFirst },
  },
});
