import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** True for a SHA-256 written as 64 hex digits. */
export function isSha256(text: string): boolean {
  return HEX64.test(text);
}

/**
 * The digest a published checksum file gives for `fileName`. Accepts both formats the release
 * locations use: a bare hex digest (dl.k8s.io, cri-tools) and sha256sum's "hex  name" or
 * "hex *name" lines (CNI plugins), one or several. `source` names the file in errors.
 */
export function parseChecksumFile(text: string, fileName: string, source: string): string {
  if (/^\s*<(!doctype|html|head|body|\?xml)/i.test(text)) {
    throw new Error(`checksum file ${source} is an HTML page, not a checksum`);
  }
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const entries = lines.map((line) => {
    const m = /^([0-9a-fA-F]{64})(?:\s+\*?(.+))?$/.exec(line);
    if (!m) {
      throw new Error(
        `checksum file ${source} is not a SHA-256 checksum file (line "${line.slice(0, 80)}")`,
      );
    }
    return { hex: m[1]!.toLowerCase(), name: m[2]?.trim() };
  });
  if (entries.length === 0) throw new Error(`checksum file ${source} is empty`);
  const baseName = (n: string) => n.replace(/^.*\//, "");
  const named = entries.filter((e) => e.name !== undefined);
  if (entries.length === 1 && entries[0]!.name === undefined) return entries[0]!.hex;
  const match = named.find((e) => baseName(e.name!) === fileName);
  if (match) return match.hex;
  const listed = named.map((e) => e.name).join(", ");
  throw new Error(`checksum file ${source} has no entry for ${fileName} (it lists ${listed})`);
}

/** SHA-256 of a file, streamed. */
export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });
}
