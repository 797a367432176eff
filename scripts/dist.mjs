// Builds dist/ as it is committed: the bundles and their chunks, and licenses.txt with the
// licence of every package bundled into them. Shared by `npm run build` and `npm run check-dist`.
import { build } from "esbuild";
import { chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { buildOptions } from "./build-options.mjs";

/** The folder of the package a bundled file belongs to (the innermost node_modules entry). */
function packageDirOf(input) {
  const parts = input.split("/");
  const at = parts.lastIndexOf("node_modules");
  if (at < 0) return undefined;
  const scoped = parts[at + 1]?.startsWith("@");
  return parts.slice(0, at + (scoped ? 3 : 2)).join("/");
}

const LICENCE_FILE = /^(licen[cs]e|copying|notice)(\.(md|txt|markdown))?$/i;

/** One package's entry: name@version, its declared licence and the texts it ships. */
async function licenceEntry(dir) {
  const pkg = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
  // `license` is an SPDX expression; old packages have { type } or a `licenses` list instead.
  const declared =
    typeof pkg.license === "string"
      ? pkg.license
      : (pkg.license?.type ??
        (pkg.licenses?.map((l) => l.type).join(" OR ") || "no licence declared"));
  const names = (await readdir(dir)).filter((n) => LICENCE_FILE.test(n)).sort();
  const texts = [];
  for (const n of names) texts.push((await readFile(join(dir, n), "utf8")).trim());
  const body =
    texts.length > 0
      ? texts.join("\n\n")
      : `(the package ships no licence file; its package.json declares ${declared})`;
  return {
    id: `${pkg.name}@${pkg.version}`,
    text: `${pkg.name}@${pkg.version} (${declared})\n\n${body}\n`,
  };
}

/** dist/licenses.txt: every package whose code is in any output file, sorted by name. */
async function licences(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const dir = packageDirOf(input);
    if (dir) dirs.add(dir);
  }
  const entries = await Promise.all([...dirs].map(licenceEntry));
  const unique = new Map(entries.map((e) => [e.id, e.text]));
  const rule = `${"=".repeat(78)}\n`;
  const ids = [...unique.keys()].sort();
  return [
    "Third-party software bundled into kubeforge's dist/ files, with the licence each package ships.\n",
    ...ids.map((id) => rule + unique.get(id)),
  ].join("\n");
}

/** Every file under `dir`, relative to it, sorted. */
export async function filesUnder(dir) {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/**
 * Builds into `outdir`, emptied first so no chunk of an earlier build is left behind.
 * @returns {Promise<import("esbuild").Metafile>}
 */
export async function buildDist(outdir) {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  const result = await build({ ...buildOptions(outdir), metafile: true });
  await writeFile(join(outdir, "licenses.txt"), await licences(result.metafile));
  await chmod(join(outdir, "cli.js"), 0o755);
  return result.metafile;
}
