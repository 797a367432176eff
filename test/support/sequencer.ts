import { BaseSequencer, type TestSpecification } from "vitest/node";

// vitest runs files it has no timings for (a fresh clone has none) largest first, which puts the
// Docker cluster tests — small files that take minutes (a node image built by mmdebstrap, then
// clusters of containers) — at the very end, where nothing overlaps them. They go first here, so
// the rest of the suite runs beside them.
const LONG_RUNNING = [
  /\/test\/integration\/docker\/up-docker-ha\.test\.ts$/,
  /\/test\/integration\/docker\/up-docker\.test\.ts$/,
];

export default class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_RUNNING.findIndex((re) => re.test(f.moduleId));
      return i === -1 ? LONG_RUNNING.length : i;
    };
    // Array.prototype.sort is stable: the rest keep the base order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
