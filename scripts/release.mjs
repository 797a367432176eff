// The release workflow's checks and choices (.github/workflows/release.yml), in one place a test
// can reach. Node's standard library only: the publishing job runs it without `npm ci`.
//
//   node scripts/release.mjs notes vX.Y.Z           CHANGELOG.md's section for the version, on
//                                                  stdout; fails unless package.json says X.Y.Z
//   node scripts/release.mjs major vX.Y.Z [TAG...]  the major tag (v1) to move to this release,
//                                                  or nothing when a newer vX.* is among the TAGs
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const VERSION = /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

/** [major, minor, patch] of "vX.Y.Z"; throws naming the value otherwise. */
export function parseVersion(tag) {
  const m = VERSION.exec(tag);
  if (!m) throw new Error(`version ${JSON.stringify(tag)} is not of the form vX.Y.Z (v1.2.3)`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/**
 * The body of CHANGELOG.md's `## [X.Y.Z] - YYYY-MM-DD` section (Keep a Changelog), trimmed;
 * throws when the section is missing, undated or empty.
 */
export function changelogSection(changelog, tag) {
  parseVersion(tag);
  const version = tag.slice(1);
  const lines = changelog.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`## [${version}]`));
  if (start < 0) throw new Error(`CHANGELOG.md has no "## [${version}]" section for ${tag}`);
  if (!/^## \[[^\]]+\] - \d{4}-\d{2}-\d{2}$/.test(lines[start]))
    throw new Error(`CHANGELOG.md: "${lines[start]}" is not "## [${version}] - YYYY-MM-DD"`);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => l.startsWith("## ") || /^\[[^\]]+\]: /.test(l));
  const body = (end < 0 ? rest : rest.slice(0, end)).join("\n").trim();
  if (body === "") throw new Error(`CHANGELOG.md's section for ${tag} is empty`);
  return body;
}

/** Fails unless package.json's version is the tag's: the release's files say what they are. */
export function checkPackageVersion(pkg, tag) {
  parseVersion(tag);
  if (`v${pkg.version}` !== tag)
    throw new Error(
      `package.json says version ${pkg.version}, not ${tag.slice(1)}: set it (npm version --no-git-tag-version ${tag.slice(1)}) before tagging`,
    );
}

/**
 * The major tag ("v1") to point at this release, or undefined when one of the existing tags is
 * a newer release of the same major: a fix to an older minor must not move v1 backwards.
 */
export function majorTagToMove(tag, existingTags) {
  const [major, minor, patch] = parseVersion(tag);
  const newer = existingTags.some((t) => {
    if (!VERSION.test(t)) return false;
    const [M, m, p] = parseVersion(t);
    return M === major && (m > minor || (m === minor && p > patch));
  });
  return newer ? undefined : `v${major}`;
}

function main([command, tag, ...rest]) {
  const read = (file) => readFileSync(new URL(`../${file}`, import.meta.url), "utf8");
  if (command === "notes") {
    checkPackageVersion(JSON.parse(read("package.json")), tag);
    process.stdout.write(`${changelogSection(read("CHANGELOG.md"), tag)}\n`);
  } else if (command === "major") {
    const major = majorTagToMove(tag, rest);
    if (major) process.stdout.write(`${major}\n`);
    else console.error(`a newer v${parseVersion(tag)[0]}.x release exists: the major tag stays`);
  } else {
    throw new Error(`usage: release.mjs notes vX.Y.Z | major vX.Y.Z [existing tags...]`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`release: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
