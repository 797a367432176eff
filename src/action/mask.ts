import { BOOTSTRAP_TOKEN_PATTERN } from "../pki/token.js";

// Masking for the GitHub runner. core.setSecret registers a value; the runner replaces it in
// every later log line, but it matches line by line, so a multi-line value registered whole is
// never found: every line must be registered on its own too (actions/runner#161).

/** Registers `value` whole and every one of its lines (trimmed, non-empty). */
export function maskSecret(value: string, setSecret: (s: string) => void): void {
  if (value.trim() === "") return;
  setSecret(value);
  const lines = value.split(/\r?\n/).map((l) => l.trim());
  if (lines.length < 2) {
    // A one-line value with padding: the runner finds the trimmed text inside it anyway.
    if (lines[0] !== value) setSecret(lines[0]!);
  } else {
    for (const line of new Set(lines)) if (line !== "") setSecret(line);
  }
  // A bootstrap token's secret half is what the cluster stores (Secret token-secret) and what
  // `kubeadm token list` leaves out: it may be printed alone.
  const token = BOOTSTRAP_TOKEN_PATTERN.exec(value.trim());
  if (token) setSecret(token[2]!);
}

/** Keys whose values are credentials in a kubeconfig (client-go's AuthInfo fields). */
const CREDENTIAL_KEYS = /^\s*(client-key-data|token|password):\s*"?([^"\s]+)"?\s*$/;

/**
 * Masks a kubeconfig (admin.conf): the whole text, every credential line and value, and every
 * line of the decoded client key. Structural lines ("apiVersion: v1", "users:") are not
 * registered on their own: the runner would then star them out of every later step's log.
 */
export function maskKubeconfig(text: string, setSecret: (s: string) => void): void {
  if (text.trim() === "") return;
  setSecret(text);
  for (const line of text.split(/\r?\n/)) {
    const m = CREDENTIAL_KEYS.exec(line);
    if (!m) continue;
    setSecret(line.trim());
    setSecret(m[2]!);
    if (m[1] === "client-key-data") {
      maskSecret(Buffer.from(m[2]!, "base64").toString("utf8"), setSecret);
    }
  }
}
