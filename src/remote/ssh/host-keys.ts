import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { HostKeyPolicy } from "./types.js";

// Host-key checking as OpenSSH does it (ssh(1) "VERIFYING HOST KEYS", sshd(8) "SSH_KNOWN_HOSTS
// FILE FORMAT"), from keys given in the input only: kubeforge never reads or writes a
// known_hosts file. Accept-new trusts an unknown host for the rest of this process; a host seen
// again with another key in the same run is refused like a pinned one (k0sctl#445: writing
// known_hosts breaks the next run when a VM is recreated on the same address).

/** "SHA256:" + unpadded base64 of the key blob's SHA-256, as `ssh-keygen -l` prints it. */
export function fingerprintOf(keyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")}`;
}

/** The key type named at the start of an SSH public key blob ("ssh-ed25519"...). */
export function keyTypeOf(keyBlob: Buffer): string {
  if (keyBlob.length < 4) return "unknown";
  const len = keyBlob.readUInt32BE(0);
  if (len > 64 || keyBlob.length < 4 + len) return "unknown";
  return keyBlob.subarray(4, 4 + len).toString("latin1");
}

const PIN = /^SHA256:([A-Za-z0-9+/]{43})=?$/;

/** A pin in canonical form; throws a sentence naming the bad value. */
export function normalizeFingerprint(pin: string): string {
  const m = PIN.exec(pin.trim());
  if (!m) {
    throw new Error(
      `host key fingerprint "${pin}" is not of the form SHA256:<43 base64 characters> (as ssh-keygen -lf prints)`,
    );
  }
  return `SHA256:${m[1]}`;
}

export interface KnownHostEntry {
  marker?: "cert-authority" | "revoked";
  /** Comma-separated host patterns, or one hashed name `|1|salt|hash`. */
  patterns: string[];
  keyType: string;
  fingerprint: string;
}

/** One known_hosts line; undefined for blank lines and comments; throws when malformed. */
export function parseKnownHostsLine(line: string): KnownHostEntry | undefined {
  const text = line.trim();
  if (text === "" || text.startsWith("#")) return undefined;
  const fields = text.split(/\s+/);
  let marker: KnownHostEntry["marker"];
  if (fields[0]?.startsWith("@")) {
    const m = fields.shift()!;
    if (m !== "@cert-authority" && m !== "@revoked") {
      throw new Error(`unknown known_hosts marker "${m}"`);
    }
    marker = m.slice(1) as KnownHostEntry["marker"];
  }
  const [hosts, keyType, key] = fields;
  if (!hosts || !keyType || !key) {
    throw new Error(`a known_hosts line needs "hosts keytype base64-key", got "${text}"`);
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key)) {
    throw new Error(`the key of known_hosts line "${hosts} ${keyType} …" is not base64`);
  }
  const blob = Buffer.from(key, "base64");
  if (keyTypeOf(blob) !== keyType) {
    throw new Error(`the key of known_hosts line "${hosts} ${keyType} …" is not a ${keyType} key`);
  }
  return {
    ...(marker ? { marker } : {}),
    patterns: hosts.split(","),
    keyType,
    fingerprint: fingerprintOf(blob),
  };
}

/** The name known_hosts uses for a host: `host`, or `[host]:port` when the port is not 22. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function hashedNameMatches(pattern: string, name: string): boolean {
  // |1|base64(salt)|base64(HMAC-SHA1(salt, name)) — OpenSSH hostfile.c
  const parts = pattern.split("|");
  if (parts.length !== 4 || parts[1] !== "1") return false;
  const salt = Buffer.from(parts[2]!, "base64");
  const want = Buffer.from(parts[3]!, "base64");
  const got = createHmac("sha1", salt).update(name).digest();
  return want.length === got.length && timingSafeEqual(want, got);
}

function globMatches(pattern: string, name: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${re}$`, "i").test(name);
}

/** Whether a line's host patterns name this host (negated patterns win, as in OpenSSH). */
export function patternsMatch(patterns: readonly string[], host: string, port: number): boolean {
  const name = knownHostsName(host, port);
  let matched = false;
  for (const p of patterns) {
    if (p.startsWith("|")) {
      if (hashedNameMatches(p, name)) matched = true;
    } else if (p.startsWith("!")) {
      if (globMatches(p.slice(1), name)) return false;
    } else if (globMatches(p, name)) matched = true;
  }
  return matched;
}

export type HostKeyDecision =
  | { ok: true; how: "pinned" | "known-hosts" | "accepted-new" | "seen-this-run" }
  | { ok: false; reason: string };

/** Host key algorithms ssh2 knows. */
const HOST_KEY_ALGORITHMS = [
  "ssh-ed25519",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "rsa-sha2-512",
  "rsa-sha2-256",
  "ssh-rsa",
];

/** Keys accepted on first use during this process: "<target>" → fingerprint. */
const acceptedThisRun = new Map<string, string>();

/** Checks the keys one host presents against the policy; construct once per target. */
export class HostKeyChecker {
  private readonly pins: string[];
  private readonly entries: KnownHostEntry[];

  /**
   * @param target the host and port as dialled (from the jump host when there is one)
   * @param via what the target is reached through, so the same address behind two jump
   *   hosts is two hosts for accept-new
   */
  constructor(
    private readonly policy: HostKeyPolicy,
    private readonly target: { host: string; port: number; via?: string },
  ) {
    this.pins = (policy.fingerprints ?? []).map(normalizeFingerprint);
    this.entries = [];
    (policy.knownHosts ?? []).forEach((line, i) => {
      let entry: KnownHostEntry | undefined;
      try {
        entry = parseKnownHostsLine(line);
      } catch (e) {
        throw new Error(`knownHosts[${i}]: ${(e as Error).message}`, { cause: e });
      }
      if (entry && patternsMatch(entry.patterns, target.host, target.port))
        this.entries.push(entry);
    });
  }

  /**
   * Host key algorithms to offer first: those of the known_hosts lines for this host, as ssh(1)
   * orders them, so a server with several host keys presents the one the line is about.
   */
  knownKeyAlgorithms(): string[] {
    const algos = new Set<string>();
    for (const e of this.entries) {
      if (e.marker !== undefined) continue;
      if (e.keyType === "ssh-rsa")
        ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"].forEach((a) => algos.add(a));
      else if (HOST_KEY_ALGORITHMS.includes(e.keyType)) algos.add(e.keyType);
    }
    return [...algos];
  }

  check(keyBlob: Buffer): HostKeyDecision {
    const got = fingerprintOf(keyBlob);
    const gotText = `${got} (${keyTypeOf(keyBlob)})`;
    if (this.entries.some((e) => e.marker === "revoked" && e.fingerprint === got)) {
      return { ok: false, reason: `host key ${gotText} is marked @revoked in knownHosts` };
    }
    const known = this.entries.filter((e) => e.marker === undefined).map((e) => e.fingerprint);
    if (this.pins.includes(got)) return { ok: true, how: "pinned" };
    if (known.includes(got)) return { ok: true, how: "known-hosts" };
    const expected = [...new Set([...this.pins, ...known])];
    if (expected.length > 0) {
      return {
        ok: false,
        reason: `host key mismatch: expected ${expected.join(" or ")}, got ${gotText}`,
      };
    }
    if (this.policy.acceptNew) {
      const key = `${this.target.via ? `${this.target.via} > ` : ""}${knownHostsName(this.target.host, this.target.port)}`;
      const seen = acceptedThisRun.get(key);
      if (seen === undefined) {
        acceptedThisRun.set(key, got);
        return { ok: true, how: "accepted-new" };
      }
      if (seen === got) return { ok: true, how: "seen-this-run" };
      return {
        ok: false,
        reason: `host key mismatch: expected ${seen} (accepted earlier in this run), got ${gotText}`,
      };
    }
    return {
      ok: false,
      reason:
        `host key ${gotText} is not trusted: no fingerprint pin or known_hosts line matches this host; ` +
        `pin it (hostKeyFingerprints: ["${got}"]) after checking it out of band, or set acceptNewHostKeys: true to trust it for this run only`,
    };
  }
}
