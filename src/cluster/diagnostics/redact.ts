// Secrets out of diagnostics text. What kubeforge collects from a node (manifests, kubelet
// configuration, logs, its own phase log) is uploaded as an artifact anyone with read access to
// the repository can download, so every kind of secret a Kubernetes node holds is cut out here:
// private keys, kubeconfig credentials, bootstrap tokens, certificate keys, bearer tokens, and
// the values the caller knows are secret (an SSH key, a sudo password).

export const REDACTED = "<redacted>";

// PEM private keys of every kind (PKCS#1 "RSA PRIVATE KEY", SEC1 "EC PRIVATE KEY", PKCS#8
// "PRIVATE KEY" and "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY"): a whole block, also one
// written on a single line with escaped newlines (a JSON string in a log); then a block a log
// cut short (no END line): the rest of its line and the base64 lines after it.
const PEM_PRIVATE_KEY = new RegExp(
  String.raw`-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----(?:[\s\S]*?-----END \1-----|` +
    String.raw`.*(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: .*)[ \t]*(?=\r?\n|$(?![\s\S])))*)`,
  "g",
);

/** The whitespace a line starts with, for the line holding `offset`. */
function indentAt(text: string, offset: number): string {
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart, offset))![0];
}

function redactPrivateKeys(text: string): string {
  const block = (label: string, indent: string) =>
    `-----BEGIN ${label}-----\n${indent}${REDACTED}\n${indent}-----END ${label}-----`;
  return text.replace(PEM_PRIVATE_KEY, (_m, label: string, offset: number, all: string) =>
    block(label, indentAt(all, offset)),
  );
}

// Fields whose value is a credential: kubeconfig users (client-key-data, token, password,
// auth-provider id-token/refresh-token/client-secret), kubeadm's bootstrap tokens and
// certificate key (InitConfiguration/JoinConfiguration), the bootstrap token Secret's
// token-secret, and the Cluster file's SSH secrets.
const SECRET_FIELDS = [
  "client-key-data",
  "token",
  "token-secret",
  "tokenSecret",
  "tlsBootstrapToken",
  "password",
  "passphrase",
  "sudoPassword",
  "privateKey",
  "id-token",
  "refresh-token",
  "access-token",
  "client-secret",
  "certificate-key",
  "certificateKey",
];
const FIELD_NAMES = SECRET_FIELDS.join("|");

// `name: value`, `"name": "value"`, `name=value`, `--name=value`. The separator must follow the
// name (`tokenFile:` and `--token-auth-file=` name paths, not secrets), and a YAML block scalar's
// indicator (`|`, `>`) is left alone: its content, a PEM key, is cut by the PEM rule.
const FIELD_VALUE = new RegExp(
  String.raw`(?<![A-Za-z0-9_])(["']?)(${FIELD_NAMES})\1([ \t]*[:=][ \t]*)` +
    String.raw`(?!<redacted>)(?![|>][-+0-9]*[ \t]*$)` +
    String.raw`("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,}\]"']+)`,
  "gm",
);

// A secret given as the next command-line word: `--token abcdef.0123456789abcdef`,
// `--certificate-key 0f1e...` (kubeadm's join command).
const FLAG_WORD = /(--(?:token|certificate-key|password|tls-bootstrap-token)[ \t]+)(\S+)/g;

// A bootstrap token anywhere ("[a-z0-9]{6}.[a-z0-9]{16}"; kubeadm: bootstraptoken/v1): the id
// is public (`kubeadm token list` shows it), the secret after the dot is not.
const BOOTSTRAP_TOKEN = /(?<![A-Za-z0-9])([a-z0-9]{6})\.[a-z0-9]{16}(?![A-Za-z0-9])/g;

// HTTP bearer credentials and JWTs (service-account tokens) that a log line may carry.
const BEARER = /(\bBearer[ \t]+)[A-Za-z0-9._~+/=-]+/gi;
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+/g;

/** Lines of a known secret worth looking for (short lines would blank out ordinary words). */
function secretNeedles(secrets: readonly string[]): string[] {
  const needles = new Set<string>();
  for (const s of secrets) {
    if (s.trim().length >= 4) needles.add(s);
    for (const line of s.split(/\r?\n/)) {
      const t = line.trim();
      if (t.length >= 8) needles.add(t);
    }
  }
  // Longest first, so a whole value goes before one of its lines.
  return [...needles].sort((a, b) => b.length - a.length);
}

/**
 * The text with every secret it may hold replaced by "<redacted>": PEM private key blocks,
 * credential fields of kubeconfigs and kubeadm/kubeforge configuration, secret flags, bootstrap
 * token secrets, bearer tokens, JWTs, and the given secret values (whole and line by line).
 */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const needle of secretNeedles(secrets)) out = out.split(needle).join(REDACTED);
  out = redactPrivateKeys(out);
  out = out.replace(FIELD_VALUE, (_m, q: string, name: string, sep: string, value: string) => {
    const quoted = /^["']/.test(value) ? `${value[0]}${REDACTED}${value[0]}` : REDACTED;
    return `${q}${name}${q}${sep}${quoted}`;
  });
  out = out.replace(FLAG_WORD, `$1${REDACTED}`);
  out = out.replace(BOOTSTRAP_TOKEN, `$1.${REDACTED}`);
  out = out.replace(BEARER, `$1${REDACTED}`);
  out = out.replace(JWT, REDACTED);
  return out;
}

/** File names never copied off a node, whatever their content: private keys. */
export function isKeyFileName(name: string): boolean {
  return /\.key$/i.test(name);
}
