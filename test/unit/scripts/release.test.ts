import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  changelogSection,
  checkPackageVersion,
  majorTagToMove,
  parseVersion,
} from "../../../scripts/release.mjs";

// The release workflow's choices (scripts/release.mjs): which notes a version gets, whether the
// files agree on the version, and whether the major tag moves.

const CHANGELOG = `# Changelog

## [Unreleased]

### Fixed

- something not released yet

## [1.2.0] - 2026-03-01

### Added

- the \`load-images\` input

## [1.1.9] - 2026-02-01

### Fixed

- a fix

[unreleased]: https://github.com/kubeforge/kubeforge/compare/v1.2.0...HEAD
[1.2.0]: https://github.com/kubeforge/kubeforge/compare/v1.1.9...v1.2.0
`;

describe("parseVersion", () => {
  it("reads vX.Y.Z", () => {
    expect(parseVersion("v1.12.0")).toEqual([1, 12, 0]);
  });

  it.each(["1.2.3", "v1.2", "v1.2.3-rc.1", "v01.2.3", "v1.2.3 ", "main"])("refuses %j", (v) => {
    expect(() => parseVersion(v)).toThrow(`version ${JSON.stringify(v)} is not of the form vX.Y.Z`);
  });
});

describe("changelogSection", () => {
  it("is the version's section, up to the next one", () => {
    expect(changelogSection(CHANGELOG, "v1.2.0")).toBe("### Added\n\n- the `load-images` input");
  });

  it("stops at the link references after the last section", () => {
    expect(changelogSection(CHANGELOG, "v1.1.9")).toBe("### Fixed\n\n- a fix");
  });

  it("refuses a version without a section, naming it", () => {
    expect(() => changelogSection(CHANGELOG, "v1.3.0")).toThrow(
      'CHANGELOG.md has no "## [1.3.0]" section for v1.3.0',
    );
  });

  it("refuses an undated heading and an empty section", () => {
    expect(() => changelogSection("## [2.0.0]\n\n- x\n", "v2.0.0")).toThrow(
      'is not "## [2.0.0] - YYYY-MM-DD"',
    );
    expect(() =>
      changelogSection("## [2.0.0] - 2026-01-01\n\n## [1.0.0] - 2025-01-01\n- x", "v2.0.0"),
    ).toThrow("CHANGELOG.md's section for v2.0.0 is empty");
  });
});

describe("checkPackageVersion", () => {
  it("accepts package.json's own version and refuses another, saying how to set it", () => {
    expect(() => checkPackageVersion({ version: "1.2.0" }, "v1.2.0")).not.toThrow();
    expect(() => checkPackageVersion({ version: "1.1.9" }, "v1.2.0")).toThrow(
      "package.json says version 1.1.9, not 1.2.0: set it (npm version --no-git-tag-version 1.2.0) before tagging",
    );
  });
});

describe("majorTagToMove", () => {
  it("moves v1 to the newest v1 release", () => {
    expect(majorTagToMove("v1.2.0", ["v1.0.0", "v1.1.9", "v1", "v2.0.0"])).toBe("v1");
    expect(majorTagToMove("v1.2.0", ["v1.2.0"])).toBe("v1"); // its own tag among them
    expect(majorTagToMove("v0.1.0", [])).toBe("v0");
  });

  it("leaves it where it is when a newer release of the same major exists (a backported fix)", () => {
    expect(majorTagToMove("v1.1.10", ["v1.2.0"])).toBeUndefined();
    expect(majorTagToMove("v1.2.0", ["v1.2.1"])).toBeUndefined();
  });
});

describe("the project's own files", () => {
  const changelog = readFileSync("CHANGELOG.md", "utf8");

  it("CHANGELOG.md has an Unreleased section with content, and dated released sections", () => {
    const unreleased = changelog.split("\n## [Unreleased]\n")[1]?.split("\n## ")[0] ?? "";
    expect(unreleased).toMatch(/^### (Added|Changed|Deprecated|Removed|Fixed|Security)$/m);
    for (const [, version] of changelog.matchAll(/^## \[(\d+\.\d+\.\d+)\]/gm))
      expect(() => changelogSection(changelog, `v${version}`)).not.toThrow();
  });

  it("the script, run as the workflow runs it, fails with one line naming a bad version", () => {
    let stderr = "";
    try {
      execFileSync(process.execPath, ["scripts/release.mjs", "notes", "v0.0.0-x"], {
        stdio: "pipe",
      });
    } catch (e) {
      stderr = String((e as { stderr: Buffer }).stderr);
    }
    expect(stderr).toBe('release: version "v0.0.0-x" is not of the form vX.Y.Z (v1.2.3)\n');
  });
});
