// What a downloaded file is, from its first bytes: a release server that answers with an error
// page and status 200 must never leave an HTML page installed as a binary (helm/kind-action#48).

/** ELF e_machine values of the architectures kubeforge installs (System V ABI, elf.h). */
const ELF_MACHINES: Record<number, string> = { 62: "amd64", 183: "arm64" };

export type ContentKind = "elf" | "gzip" | "html" | "unknown";

export function contentKind(head: Buffer): ContentKind {
  if (head.length >= 4 && head.readUInt32BE(0) === 0x7f454c46) return "elf";
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  const text = head.subarray(0, 512).toString("latin1").trimStart().toLowerCase();
  if (/^<(!doctype html|html|head|body|\?xml)/.test(text)) return "html";
  return "unknown";
}

/** The Go arch of an ELF file's header (e_machine), or undefined for others/unknown ones. */
export function elfArch(head: Buffer): string | undefined {
  if (contentKind(head) !== "elf" || head.length < 20) return undefined;
  // e_ident[EI_DATA] (byte 5): 1 = little-endian, 2 = big-endian; e_machine is the u16 at 18.
  const machine = head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
  return ELF_MACHINES[machine] ?? `elf-machine-${machine}`;
}

/**
 * The problem with a file's content, or undefined: `what` names it in the message
 * ("the kubelet binary"), `expected` is what the file must be.
 */
export function contentProblem(
  head: Buffer,
  expected: "binary" | "tar.gz",
  arch: string | undefined,
): string | undefined {
  const kind = contentKind(head);
  if (kind === "html") return "is an HTML page";
  if (expected === "tar.gz") return kind === "gzip" ? undefined : "is not a gzip archive";
  if (kind !== "elf") return "is not an ELF executable";
  const found = elfArch(head);
  if (arch && found !== arch) return `is an ELF executable for ${found}, not ${arch}`;
  return undefined;
}
