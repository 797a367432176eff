// PEM as Go's encoding/pem reads and writes it: 64-column base64 bodies, optional
// "Key: value" headers (legacy encrypted keys carry "Proc-Type: 4,ENCRYPTED").

export interface PemBlock {
  type: string;
  headers: Record<string, string>;
  der: Buffer;
}

/** One PEM block in Go's pem.EncodeToMemory layout. */
export function pemEncode(type: string, der: Uint8Array): string {
  const body = Buffer.from(der).toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < body.length; i += 64) lines.push(body.slice(i, i + 64));
  return `-----BEGIN ${type}-----\n${lines.join("\n")}${lines.length ? "\n" : ""}-----END ${type}-----\n`;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/** Every well-formed PEM block in `text`, in order; anything between blocks is ignored as Go does. */
export function pemDecodeAll(text: string | Uint8Array): PemBlock[] {
  const source = typeof text === "string" ? text : Buffer.from(text).toString("latin1");
  const blocks: PemBlock[] = [];
  for (const m of source.matchAll(BLOCK)) {
    const headers: Record<string, string> = {};
    const bodyLines: string[] = [];
    for (const raw of m[2]!.split(/\r?\n/)) {
      const line = raw.trim();
      const header = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
      if (header && bodyLines.length === 0) headers[header[1]!] = header[2]!;
      else if (line) bodyLines.push(line);
    }
    const body = bodyLines.join("");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body)) continue;
    blocks.push({ type: m[1]!, headers, der: Buffer.from(body, "base64") });
  }
  return blocks;
}
