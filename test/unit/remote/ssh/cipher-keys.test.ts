import { KeyObject, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { cipherKeysAsObjects } from "../../../../src/remote/ssh/cipher-keys.js";

// ssh2's own native ciphers (lib/protocol/crypto.js), given their keys as KeyObjects through the
// protocol object's setters, must write and read exactly what they do with the keys as bytes.

interface SshCipher {
  allocPacket(payloadLen: number): Buffer;
  encrypt(packet: Buffer): void;
}
interface SshDecipher {
  decrypt(data: Buffer, p: number, len: number): void;
}
const ssh2Crypto = createRequire(import.meta.url)("ssh2/lib/protocol/crypto.js") as {
  CIPHER_INFO: Record<string, { keyLen: number; ivLen: number }>;
  MAC_INFO: Record<string, { len: number }>;
  createCipher(config: unknown): SshCipher;
  createDecipher(config: unknown): SshDecipher;
};

const CASES = [
  { cipher: "aes128-gcm@openssh.com" },
  { cipher: "aes256-gcm@openssh.com" },
  { cipher: "aes128-ctr", mac: "hmac-sha2-256" },
  { cipher: "aes256-ctr", mac: "hmac-sha2-512-etm@openssh.com" },
];

/** The keys of one direction, as a key exchange derives them. */
function keys(c: (typeof CASES)[number]) {
  const info = ssh2Crypto.CIPHER_INFO[c.cipher]!;
  const mac = c.mac ? ssh2Crypto.MAC_INFO[c.mac]! : undefined;
  return {
    info,
    mac,
    key: randomBytes(info.keyLen),
    iv: randomBytes(info.ivLen),
    macKey: mac ? randomBytes(mac.len) : undefined,
  };
}

/** An ssh2 cipher for `k`, set on a protocol object as ssh2's key exchange sets it. */
function cipher(k: ReturnType<typeof keys>, out: Buffer[], asObjects: boolean) {
  const protocol: { _cipher?: SshCipher; _decipher?: unknown } = {};
  const client = { _protocol: protocol };
  if (asObjects) expect(cipherKeysAsObjects(client)).toBe(true);
  protocol._cipher = ssh2Crypto.createCipher({
    outbound: {
      onWrite: (b: Buffer) => out.push(Buffer.from(b)),
      cipherInfo: k.info,
      cipherKey: Buffer.from(k.key),
      cipherIV: Buffer.from(k.iv),
      seqno: 3,
      forceNative: true,
      ...(k.mac ? { macInfo: k.mac, macKey: Buffer.from(k.macKey!) } : {}),
    },
  });
  return protocol._cipher;
}

function send(c: SshCipher, payloads: Buffer[]): void {
  for (const p of payloads) {
    const packet = c.allocPacket(p.length);
    p.copy(packet, 5);
    // The random padding, made equal for both ciphers compared.
    packet.fill(7, 5 + p.length);
    c.encrypt(packet);
  }
}

describe("cipherKeysAsObjects", () => {
  for (const c of CASES) {
    it(`${c.cipher}${c.mac ? ` with ${c.mac}` : ""}: the same bytes on the wire, read back by a decipher with key objects`, () => {
      const k = keys(c);
      const payloads = [randomBytes(1), randomBytes(100), randomBytes(5000)];
      const asBytes: Buffer[] = [];
      const asObjects: Buffer[] = [];
      send(cipher(k, asBytes, false), payloads);
      const converted = cipher(k, asObjects, true);
      send(converted, payloads);
      expect(Buffer.concat(asObjects).equals(Buffer.concat(asBytes))).toBe(true);
      const fields = converted as unknown as Record<string, unknown>;
      expect(fields._encKey ?? fields._macKey).toBeInstanceOf(KeyObject);

      const protocol: { _cipher?: unknown; _decipher?: SshDecipher } = {};
      cipherKeysAsObjects({ _protocol: protocol });
      const received: Buffer[] = [];
      protocol._decipher = ssh2Crypto.createDecipher({
        inbound: {
          // A value returned would stop the decipher (ssh2 reads it as "wait").
          onPayload: (p: Buffer) => {
            received.push(Buffer.from(p));
          },
          decipherInfo: k.info,
          decipherKey: Buffer.from(k.key),
          decipherIV: Buffer.from(k.iv),
          seqno: 3,
          forceNative: true,
          ...(k.mac ? { macInfo: k.mac, macKey: Buffer.from(k.macKey!) } : {}),
        },
      });
      const wire = Buffer.concat(asBytes);
      protocol._decipher.decrypt(wire, 0, wire.length);
      expect(received).toEqual(payloads);
      const decipher = protocol._decipher as unknown as Record<string, unknown>;
      expect(decipher._decipherKey ?? decipher._macKey).toBeInstanceOf(KeyObject);
    });
  }

  it("converts the ciphers already set, and leaves alone what holds no key as bytes", () => {
    const key = randomBytes(16);
    const protocol: Record<string, unknown> = { _cipher: { _encKey: key }, _decipher: undefined };
    expect(cipherKeysAsObjects({ _protocol: protocol })).toBe(true);
    const first = protocol._cipher as Record<string, unknown>;
    expect(first._encKey).toBeInstanceOf(KeyObject);
    expect((first._encKey as KeyObject).export().equals(key)).toBe(true);
    const other = { _encKeyMain: randomBytes(32), _macKey: "not bytes" };
    protocol._decipher = other;
    expect(protocol._decipher).toBe(other);
    expect(other._encKeyMain).toBeInstanceOf(Buffer);
    expect(other._macKey).toBe("not bytes");
  });

  it("changes nothing of a client without a protocol object", () => {
    const client = {};
    expect(cipherKeysAsObjects(client)).toBe(false);
    expect(client).toEqual({});
  });
});
