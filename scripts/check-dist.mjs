// Fails when dist/ differs from a fresh build of the current sources.
import { build } from "esbuild";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildOptions } from "./build-options.mjs";

const fresh = await mkdtemp(join(tmpdir(), "kubeforge-dist-"));
try {
  await build(buildOptions(fresh));
  const expected = (await readdir(fresh)).sort();
  const actual = (await readdir("dist").catch(() => [])).sort();
  const problems = [];
  for (const name of new Set([...expected, ...actual])) {
    if (!expected.includes(name)) problems.push(`dist/${name} is not produced by the build`);
    else if (!actual.includes(name)) problems.push(`dist/${name} is missing`);
    else if (!(await readFile(join(fresh, name))).equals(await readFile(join("dist", name))))
      problems.push(`dist/${name} differs from a fresh build`);
  }
  if (problems.length > 0) {
    console.error(`${problems.join("\n")}\nRun "npm run build" and commit dist/.`);
    process.exit(1);
  }
  console.log(`dist/ matches a fresh build (${expected.join(", ")})`);
} finally {
  await rm(fresh, { recursive: true, force: true });
}
