import { writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseChecksumFile, sha256File } from "../../../../src/node/artifacts/checksum.js";
import { testDir } from "../../../support/temp-dir.js";

const HEX = "4b0ed9a4c23a8e9e0e0b8e9a0d0b6f0f8f4bb2e1a0b0d1a3f8e3c6e0d0b0a0f1";
const OTHER = "0".repeat(64);
const SRC = "https://example.test/x.sha256";

describe("parseChecksumFile", () => {
  it.each([
    ["a bare digest (dl.k8s.io, cri-tools)", `${HEX}\n`],
    ["a bare digest without newline", HEX],
    ["upper-case hex", `${HEX.toUpperCase()}\n`],
    ["sha256sum's text mode line (CNI plugins)", `${HEX}  cni.tgz\n`],
    ["sha256sum's binary mode line", `${HEX} *cni.tgz\n`],
    ["a path in the name", `${HEX}  release-v1.8.0/cni.tgz\n`],
    ["a list with the file in it", `${OTHER}  other.tgz\n${HEX}  cni.tgz\n`],
    ["CRLF line ends", `${HEX}  cni.tgz\r\n`],
  ])("reads %s", (_what, text) => {
    expect(parseChecksumFile(text, "cni.tgz", SRC)).toBe(HEX);
  });

  it.each([
    ["an empty file", "", /checksum file https:\/\/example\.test\/x\.sha256 is empty/],
    ["an HTML page", "<!DOCTYPE html><html>oops</html>", /x\.sha256 is an HTML page/],
    ["a short digest", `${HEX.slice(1)}\n`, /x\.sha256 is not a SHA-256 checksum file/],
    [
      "a sha1",
      "da39a3ee5e6b4b0d3255bfef95601890afd80709  cni.tgz\n",
      /is not a SHA-256 checksum file/,
    ],
    [
      "another file's entry",
      `${HEX}  other.tgz\n`,
      /has no entry for cni\.tgz \(it lists other\.tgz\)/,
    ],
  ])("refuses %s, naming the checksum URL", (_what, text, message) => {
    expect(() => parseChecksumFile(text, "cni.tgz", SRC)).toThrow(message);
  });
});

describe("sha256File", () => {
  it("agrees with coreutils sha256sum", async () => {
    const dir = await testDir("kubeforge-sha-");
    const file = join(dir, "f");
    await writeFile(file, Buffer.alloc(3 * 1024 * 1024 + 7, 0xab));
    const expected = execFileSync("sha256sum", [file]).toString().split(" ")[0];
    expect(await sha256File(file)).toBe(expected);
  });
});
