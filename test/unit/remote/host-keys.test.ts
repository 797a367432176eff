import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HostKeyChecker,
  fingerprintOf,
  keyTypeOf,
  knownHostsName,
  normalizeFingerprint,
  parseKnownHostsLine,
  patternsMatch,
} from "../../../src/remote/ssh/host-keys.js";

// Expected values come from OpenSSH's own ssh-keygen: fingerprints (-l), hashed names (-H)
// and known_hosts lookups (-F).

interface Key {
  type: string;
  base64: string;
  blob: Buffer;
  fingerprint: string;
}

let dir: string;
const keys: Record<string, Key> = {};

function sshKeygen(...args: string[]): string {
  return execFileSync("ssh-keygen", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function makeKey(name: string, type: string, bits?: string): Key {
  const file = join(dir, name);
  sshKeygen("-q", "-t", type, ...(bits ? ["-b", bits] : []), "-N", "", "-C", name, "-f", file);
  const [keyType, base64] = readFileSync(`${file}.pub`, "utf8").trim().split(" ");
  const fingerprint = sshKeygen("-l", "-E", "sha256", "-f", `${file}.pub`).split(" ")[1]!;
  return { type: keyType!, base64: base64!, blob: Buffer.from(base64!, "base64"), fingerprint };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kubeforge-hostkeys-"));
  keys.ed = makeKey("ed", "ed25519");
  keys.ed2 = makeKey("ed2", "ed25519");
  keys.ecdsa = makeKey("ecdsa", "ecdsa", "256");
  keys.rsa = makeKey("rsa", "rsa", "2048");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("fingerprints", () => {
  it("match ssh-keygen -l for every key type", () => {
    for (const k of Object.values(keys)) {
      expect(fingerprintOf(k.blob)).toBe(k.fingerprint);
      expect(keyTypeOf(k.blob)).toBe(k.type);
    }
  });

  it("normalizes pins and rejects other forms with the value named", () => {
    const fp = keys.ed!.fingerprint;
    expect(normalizeFingerprint(` ${fp}= `)).toBe(fp);
    for (const bad of ["MD5:aa:bb", fp.slice(7), `SHA256:${"A".repeat(42)}`, "sha256:x"]) {
      expect(() => normalizeFingerprint(bad)).toThrow(
        `host key fingerprint "${bad}" is not of the form`,
      );
    }
  });
});

describe("known_hosts lines", () => {
  it("parse markers, patterns and key", () => {
    const k = keys.ed!;
    expect(parseKnownHostsLine(`web,10.0.0.1 ${k.type} ${k.base64} a comment`)).toEqual({
      patterns: ["web", "10.0.0.1"],
      keyType: k.type,
      fingerprint: k.fingerprint,
    });
    expect(parseKnownHostsLine(`@revoked * ${k.type} ${k.base64}`)?.marker).toBe("revoked");
    expect(parseKnownHostsLine("  # comment")).toBeUndefined();
    expect(parseKnownHostsLine("")).toBeUndefined();
  });

  it.each([
    ["web ssh-ed25519", /needs "hosts keytype base64-key"/],
    ["web ssh-ed25519 !!!notbase64", /is not base64/],
    ["@foo web ssh-ed25519 AAAA", /unknown known_hosts marker "@foo"/],
  ])("reject %s", (line, message) => {
    expect(() => parseKnownHostsLine(line)).toThrow(message);
  });

  it("rejects a key whose blob is of another type than the line says", () => {
    expect(() => parseKnownHostsLine(`web ssh-rsa ${keys.ed!.base64}`)).toThrow(
      'the key of known_hosts line "web ssh-rsa …" is not a ssh-rsa key',
    );
  });

  it("name a non-22 port the [host]:port way", () => {
    expect(knownHostsName("10.0.0.1", 22)).toBe("10.0.0.1");
    expect(knownHostsName("10.0.0.1", 2222)).toBe("[10.0.0.1]:2222");
  });

  // Each pattern list against each host:port, decided by `ssh-keygen -F` on a real file.
  const patternCases: [string, string, number][] = [
    ["web.example.com", "web.example.com", 22],
    ["web.example.com", "WEB.example.com", 22],
    ["web.example.com", "web.example.com", 2222],
    ["[web.example.com]:2222", "web.example.com", 2222],
    ["[web.example.com]:2222", "web.example.com", 22],
    ["*.example.com", "db.example.com", 22],
    ["*.example.com,!db.example.com", "db.example.com", 22],
    ["10.0.0.?", "10.0.0.7", 22],
    ["10.0.0.?", "10.0.0.17", 22],
    ["[10.0.0.*]:2222", "10.0.0.5", 2222],
    ["other,10.1.2.3", "10.1.2.3", 22],
  ];

  it.each(patternCases)(
    "pattern %s for %s port %d agrees with ssh-keygen -F",
    (patterns, host, port) => {
      const file = join(dir, `kh-${Math.random().toString(36).slice(2)}`);
      writeFileSync(file, `${patterns} ${keys.ed!.type} ${keys.ed!.base64}\n`);
      let found: boolean;
      try {
        sshKeygen("-F", knownHostsName(host, port), "-f", file);
        found = true;
      } catch {
        found = false;
      }
      expect(patternsMatch(patterns.split(","), host, port)).toBe(found);
    },
  );

  it("match hashed names written by ssh-keygen -H, for port 22 and another port", () => {
    const file = join(dir, "hashed");
    const k = keys.ed!;
    writeFileSync(
      file,
      `web.example.com ${k.type} ${k.base64}\n[10.9.8.7]:2200 ${k.type} ${k.base64}\n`,
    );
    sshKeygen("-q", "-H", "-f", file);
    const lines = readFileSync(file, "utf8").trim().split("\n");
    expect(lines.every((l) => l.startsWith("|1|"))).toBe(true);
    const [web, other] = lines.map((l) => parseKnownHostsLine(l)!);
    expect(patternsMatch(web!.patterns, "web.example.com", 22)).toBe(true);
    expect(patternsMatch(web!.patterns, "web.example.org", 22)).toBe(false);
    expect(patternsMatch(other!.patterns, "10.9.8.7", 2200)).toBe(true);
    expect(patternsMatch(other!.patterns, "10.9.8.7", 22)).toBe(false);
  });
});

describe("HostKeyChecker", () => {
  const target = { host: "10.0.0.1", port: 22 };

  it("accepts a pinned key and refuses another with both fingerprints", () => {
    const c = new HostKeyChecker(
      { fingerprints: [keys.ed!.fingerprint, keys.ecdsa!.fingerprint] },
      target,
    );
    expect(c.check(keys.ed!.blob)).toEqual({ ok: true, how: "pinned" });
    expect(c.check(keys.ed2!.blob)).toEqual({
      ok: false,
      reason: `host key mismatch: expected ${keys.ed!.fingerprint} or ${keys.ecdsa!.fingerprint}, got ${keys.ed2!.fingerprint} (ssh-ed25519)`,
    });
  });

  it("uses only the known_hosts lines that name the host", () => {
    const lines = [
      `10.0.0.1 ${keys.ed!.type} ${keys.ed!.base64}`,
      `10.0.0.2 ${keys.ed2!.type} ${keys.ed2!.base64}`,
    ];
    const c = new HostKeyChecker({ knownHosts: lines }, target);
    expect(c.check(keys.ed!.blob)).toEqual({ ok: true, how: "known-hosts" });
    const refused = c.check(keys.ed2!.blob);
    expect(refused).toEqual({
      ok: false,
      reason: `host key mismatch: expected ${keys.ed!.fingerprint}, got ${keys.ed2!.fingerprint} (ssh-ed25519)`,
    });
  });

  it("refuses a @revoked key even when it is also pinned", () => {
    const c = new HostKeyChecker(
      {
        fingerprints: [keys.ed!.fingerprint],
        knownHosts: [`@revoked * ${keys.ed!.type} ${keys.ed!.base64}`],
      },
      target,
    );
    expect(c.check(keys.ed!.blob)).toEqual({
      ok: false,
      reason: `host key ${keys.ed!.fingerprint} (ssh-ed25519) is marked @revoked in knownHosts`,
    });
  });

  it("with no policy, refuses and says how to pin the key it got", () => {
    const c = new HostKeyChecker({}, target);
    const d = c.check(keys.ed!.blob);
    expect(d.ok).toBe(false);
    expect(!d.ok && d.reason).toContain(`hostKeyFingerprints: ["${keys.ed!.fingerprint}"]`);
    expect(!d.ok && d.reason).toContain("acceptNewHostKeys: true");
  });

  it("accept-new trusts the first key for the run and refuses a different one later", () => {
    const t = { host: `accept-new-${Math.random()}`, port: 22 };
    expect(new HostKeyChecker({ acceptNew: true }, t).check(keys.ed!.blob)).toEqual({
      ok: true,
      how: "accepted-new",
    });
    const again = new HostKeyChecker({ acceptNew: true }, t);
    expect(again.check(keys.ed!.blob)).toEqual({ ok: true, how: "seen-this-run" });
    expect(again.check(keys.ed2!.blob)).toEqual({
      ok: false,
      reason: `host key mismatch: expected ${keys.ed!.fingerprint} (accepted earlier in this run), got ${keys.ed2!.fingerprint} (ssh-ed25519)`,
    });
    // The same address behind a jump host is another host.
    const viaJump = new HostKeyChecker({ acceptNew: true }, { ...t, via: "ssh://root@bastion:22" });
    expect(viaJump.check(keys.ed2!.blob)).toEqual({ ok: true, how: "accepted-new" });
  });

  it("accept-new does not override pins: an unpinned key is a mismatch", () => {
    const c = new HostKeyChecker({ acceptNew: true, fingerprints: [keys.ed!.fingerprint] }, target);
    expect(c.check(keys.ed2!.blob).ok).toBe(false);
  });

  it("offers the host key algorithms of the known_hosts lines first", () => {
    const c = new HostKeyChecker(
      {
        knownHosts: [
          `10.0.0.1 ${keys.rsa!.type} ${keys.rsa!.base64}`,
          `10.0.0.1 ${keys.ecdsa!.type} ${keys.ecdsa!.base64}`,
          `other ${keys.ed!.type} ${keys.ed!.base64}`,
        ],
      },
      target,
    );
    expect(c.knownKeyAlgorithms()).toEqual([
      "rsa-sha2-512",
      "rsa-sha2-256",
      "ssh-rsa",
      "ecdsa-sha2-nistp256",
    ]);
    expect(
      new HostKeyChecker({ fingerprints: [keys.ed!.fingerprint] }, target).knownKeyAlgorithms(),
    ).toEqual([]);
  });

  it("names the bad line of a policy", () => {
    expect(() => new HostKeyChecker({ knownHosts: ["ok", "x y"] }, target)).toThrow(
      /^knownHosts\[0\]: /,
    );
  });
});
