import { BaseSequencer, type TestSpecification } from "vitest/node";

// vitest runs files it has no timings for (a fresh clone has none) largest first, which puts the
// Docker cluster test — a small file that takes minutes (a node image built by mmdebstrap, then a
// cluster of five containers upgraded node by node) — at the very end, where nothing overlaps it.
// It goes first here, so the rest of the suite runs beside it.
const LONG_RUNNING = [/\/test\/integration\/docker\/up-docker\.test\.ts$/];

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
