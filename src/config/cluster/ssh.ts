import { parseHostURL } from "./host-url.js";
import type { ClusterNodeSpec, ClusterSpec, ClusterSshSpec, NodeSshTarget } from "./types.js";
import { quoteValue } from "../values.js";

// SSH settings of the Cluster file: the formats of host-key pins and known_hosts lines, the
// shape of an inline private key, and how a node's `ssh` overrides merge over the cluster's.

export const DEFAULT_SSH_PORT = 22;

/** `ssh-keygen -l` prints "SHA256:" and the unpadded base64 of a SHA-256 digest (43 characters). */
const SHA256_FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

/** Host key algorithms a known_hosts line may name (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"). */
export const KNOWN_HOST_KEY_TYPES = [
  "ssh-ed25519",
  "ssh-rsa",
  "ssh-dss",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
];

/** The problem with a host-key pin, or undefined. */
export function fingerprintProblem(text: string): string | undefined {
  if (SHA256_FINGERPRINT.test(text)) return undefined;
  if (/^MD5:|^([0-9a-f]{2}:){15}[0-9a-f]{2}$/i.test(text)) {
    return `${quoteValue(text)} is an MD5 fingerprint; pin the SHA256 one (ssh-keygen -l -E sha256 -f <host key>.pub)`;
  }
  if (/^SHA256:[A-Za-z0-9+/]{43}=$/.test(text)) {
    return `${quoteValue(text)} has base64 padding; write it as ssh-keygen prints it, without the trailing "="`;
  }
  return `${quoteValue(text)} is not a host key fingerprint of the form "SHA256:" followed by 43 base64 characters (ssh-keygen -l -f <host key>.pub prints it)`;
}

/** The key type an SSH public key blob names in its first field (RFC 4253 §6.6), if readable. */
function blobKeyType(base64: string): string | undefined {
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length < 4) return undefined;
  const length = bytes.readUInt32BE(0);
  if (length > 64 || bytes.length < 4 + length) return undefined;
  return bytes.subarray(4, 4 + length).toString("latin1");
}

/**
 * The problem with one known_hosts line, or undefined: "[marker] hosts keytype base64
 * [comment]", the key type one we know and the one the key blob itself names.
 */
export function knownHostsLineProblem(line: string): string | undefined {
  const fields = line.trim().split(/\s+/);
  if (fields[0]?.startsWith("@")) {
    if (fields[0] !== "@cert-authority" && fields[0] !== "@revoked") {
      return `the marker ${quoteValue(fields[0])} is neither @cert-authority nor @revoked`;
    }
    fields.shift();
  }
  if (fields.length < 3) {
    return 'a known_hosts line has at least three fields: "host keytype base64-key" (ssh-keyscan prints them)';
  }
  const [, keyType, key] = fields as [string, string, string];
  if (!KNOWN_HOST_KEY_TYPES.includes(keyType)) {
    return `the key type ${quoteValue(keyType)} is not one of ${KNOWN_HOST_KEY_TYPES.join(", ")}`;
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key) || blobKeyType(key) !== keyType) {
    return `the key is not a base64 ${keyType} public key`;
  }
  return undefined;
}

/** Every known_hosts entry in the items (an item may hold several lines; # comments skipped). */
export function knownHostsEntries(items: readonly string[]): { item: number; line: string }[] {
  return items.flatMap((text, item) =>
    text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"))
      .map((line) => ({ item, line })),
  );
}

/** The problem with an inline private key, worded without any of its content. */
export function privateKeyProblem(text: string): string | undefined {
  const trimmed = text.trim();
  if (
    /^-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]+-----END [A-Z0-9 ]*PRIVATE KEY-----$/.test(
      trimmed,
    )
  ) {
    return undefined;
  }
  if (/^PuTTY-User-Key-File-[23]:/.test(trimmed)) return undefined;
  if (!trimmed.includes("\n") && /^(~|\.{0,2}\/)/.test(trimmed)) {
    return "holds the key itself, not a path; to name a key file use privateKeyFile";
  }
  if (
    /-----BEGIN [A-Z0-9 ]*PUBLIC KEY-----|^(ssh|ecdsa|sk)-[a-z0-9-]+(@openssh\.com)? /.test(trimmed)
  ) {
    return "holds a public key; SSH needs the private key";
  }
  return "is not a private key (expected a PEM or OpenSSH block from -----BEGIN ... PRIVATE KEY----- to -----END ... PRIVATE KEY-----)";
}

const KEY_FIELDS = ["privateKey", "privateKeyFile"] as const;
const HOST_KEY_FIELDS = ["hostKeyFingerprints", "knownHosts", "acceptNewHostKeys"] as const;

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * A node's SSH settings: its own fields win over the cluster's. A key or a host-key policy is
 * taken as a whole: a node that names its own key (privateKey or privateKeyFile) does not inherit
 * the cluster's key or passphrase, and a node that sets any of hostKeyFingerprints, knownHosts or
 * acceptNewHostKeys does not inherit the cluster's others (a pinned node is not also accept-new).
 */
export function mergeSsh(
  cluster: ClusterSshSpec,
  node: Partial<ClusterSshSpec> | undefined,
): ClusterSshSpec {
  const own = defined(node ?? {});
  const base: Partial<ClusterSshSpec> = defined(cluster);
  if (KEY_FIELDS.some((k) => own[k] !== undefined)) {
    delete base.privateKey;
    delete base.privateKeyFile;
    delete base.passphrase;
  }
  if (HOST_KEY_FIELDS.some((k) => own[k] !== undefined)) {
    for (const k of HOST_KEY_FIELDS) delete base[k];
  }
  return { ...base, ...own };
}

/**
 * Everything the edge needs to connect to a node over SSH; undefined for a local or docker node. Throws
 * when the spec was not validated (an ssh:// node without a user).
 */
export function sshTargetOf(spec: ClusterSpec, node: ClusterNodeSpec): NodeSshTarget | undefined {
  const url = parseHostURL(node.host);
  if ("problem" in url) throw new Error(`node ${node.name}: host: ${url.problem}`);
  if (url.type !== "ssh") return undefined;
  const s = mergeSsh(spec.ssh, node.ssh);
  const user = url.user ?? s.user;
  if (user === undefined) throw new Error(`node ${node.name}: no SSH user`);
  let jump: NodeSshTarget["jump"];
  if (s.jumpHost !== undefined) {
    const j = parseHostURL(s.jumpHost);
    if ("problem" in j || j.type !== "ssh") {
      throw new Error(`node ${node.name}: ssh.jumpHost is not an ssh:// URL`);
    }
    jump = { host: j.host, port: j.port ?? DEFAULT_SSH_PORT, user: j.user ?? user };
  }
  return {
    endpoint: { host: url.host, port: url.port ?? s.port ?? DEFAULT_SSH_PORT, user },
    auth: {
      ...(s.privateKeyFile !== undefined ? { privateKeyFile: s.privateKeyFile } : {}),
      ...(s.privateKey !== undefined ? { privateKey: s.privateKey } : {}),
      ...(s.passphrase !== undefined ? { passphrase: s.passphrase } : {}),
      ...(s.password !== undefined ? { password: s.password } : {}),
      agent: s.agent ?? false,
    },
    hostKeys: {
      ...(s.hostKeyFingerprints !== undefined ? { fingerprints: s.hostKeyFingerprints } : {}),
      ...(s.knownHosts !== undefined ? { knownHosts: s.knownHosts } : {}),
      ...(s.acceptNewHostKeys !== undefined ? { acceptNew: s.acceptNewHostKeys } : {}),
    },
    ...(jump !== undefined ? { jump } : {}),
    ...(s.sudoPassword !== undefined ? { sudoPassword: s.sudoPassword } : {}),
  };
}
