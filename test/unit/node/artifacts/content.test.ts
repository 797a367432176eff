import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { contentKind, contentProblem, elfArch } from "../../../../src/node/artifacts/content.js";

const trueBinary = readFileSync("/bin/true");
const machineArch = process.arch === "x64" ? "amd64" : process.arch;

function withMachine(machine: number): Buffer {
  const b = Buffer.from(trueBinary.subarray(0, 64));
  b.writeUInt16LE(machine, 18);
  return b;
}

describe("content checks", () => {
  it("recognises this machine's /bin/true as an ELF executable for its arch", () => {
    expect(contentKind(trueBinary)).toBe("elf");
    expect(elfArch(trueBinary)).toBe(machineArch);
    expect(contentProblem(trueBinary, "binary", machineArch)).toBeUndefined();
  });

  it.each([
    [62, "amd64"],
    [183, "arm64"],
    [40, "elf-machine-40"],
  ])("reads e_machine %d as %s", (machine, arch) => {
    expect(elfArch(withMachine(machine))).toBe(arch);
  });

  it("refuses an ELF file for another architecture, naming both", () => {
    expect(contentProblem(withMachine(183), "binary", "amd64")).toBe(
      "is an ELF executable for arm64, not amd64",
    );
  });

  it.each([
    [
      "an HTML page",
      Buffer.from("\n  <!DOCTYPE html><html><body>502</body></html>"),
      "binary",
      "is an HTML page",
    ],
    ["an HTML page for an archive", Buffer.from("<html><head>"), "tar.gz", "is an HTML page"],
    ["text", Buffer.from("Not Found\n"), "binary", "is not an ELF executable"],
    ["a gzip stream for a binary", gzipSync("x"), "binary", "is not an ELF executable"],
    ["an ELF file for an archive", trueBinary, "tar.gz", "is not a gzip archive"],
    ["nothing", Buffer.alloc(0), "binary", "is not an ELF executable"],
  ] as const)("says what is wrong with %s", (_what, head, expected, problem) => {
    expect(contentProblem(head, expected, undefined)).toBe(problem);
  });

  it("accepts a real gzip stream as an archive", () => {
    expect(contentProblem(gzipSync("x"), "tar.gz", undefined)).toBeUndefined();
  });
});
