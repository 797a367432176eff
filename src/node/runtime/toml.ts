// The little TOML kubeforge writes (containerd's config.toml and hosts.toml): strings and keys.
// No TOML library: the files are small and fixed in shape, so only quoting needs care.

/** A TOML basic string: `"..."` with `"`, `\` and control characters escaped (TOML 1.0 §String). */
export function tomlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A TOML key: bare when it only has A-Za-z0-9_- (TOML's bare keys), else a quoted string. */
export function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}

/** A dotted table name from its parts, each quoted as needed: plugins."io.containerd.grpc.v1.cri". */
export function tomlTable(...parts: string[]): string {
  return parts.map(tomlKey).join(".");
}

/** A TOML array of strings on one line. */
export function tomlStringArray(values: readonly string[]): string {
  return `[${values.map(tomlString).join(", ")}]`;
}
