// Fails when dist/ differs from a fresh build of the current sources: every file under dist/
// (entry points, chunks, licenses.txt) is compared, and a file no build produces any more (a
// stale chunk) is an error too.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildDist, filesUnder } from "./dist.mjs";

const fresh = await mkdtemp(join(tmpdir(), "kubeforge-dist-"));
try {
  await buildDist(fresh);
  const expected = await filesUnder(fresh);
  const actual = await filesUnder("dist");
  const problems = [];
  for (const name of [...new Set([...expected, ...actual])].sort()) {
    if (!expected.includes(name)) problems.push(`dist/${name} is not produced by the build`);
    else if (!actual.includes(name)) problems.push(`dist/${name} is missing`);
    else if (!(await readFile(join(fresh, name))).equals(await readFile(join("dist", name))))
      problems.push(`dist/${name} differs from a fresh build`);
  }
  if (problems.length > 0) {
    console.error(`${problems.join("\n")}\nRun "npm run build" and commit dist/.`);
    process.exit(1);
  }
  console.log(`dist/ matches a fresh build (${expected.length} files)`);
} finally {
  await rm(fresh, { recursive: true, force: true });
}
