import { describe, expect, it } from "vitest";
import {
  CERTIFICATE_KEY_SIZE,
  decodeCertificateKey,
  decryptBytes,
  encryptBytes,
  generateCertificateKey,
} from "../../../src/pki/certificate-key.js";

// Known answers: AES-256-GCM test cases 13 and 14 of McGrew & Viega, "The Galois/Counter
// Mode of Operation" (the GCM spec's appendix B): all-zero key and IV.
const ZERO_KEY = Buffer.alloc(32);
const ZERO_IV = Buffer.alloc(12);

describe("certificate key (kubeadm copycerts.CreateCertificateKey)", () => {
  it("is 32 random bytes as 64 lower-case hex characters", () => {
    const a = generateCertificateKey();
    const b = generateCertificateKey();
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
    expect(decodeCertificateKey(a)).toHaveLength(CERTIFICATE_KEY_SIZE);
  });

  it.each([
    ["ab".repeat(31), /must be 64 hexadecimal characters \(32 bytes\), got 31 bytes/],
    ["xy".repeat(32), /not a hexadecimal string/],
    ["abc", /not a hexadecimal string/],
  ])("refuses %s", (key, message) => {
    expect(() => decodeCertificateKey(key)).toThrow(message);
  });
});

describe("encryptBytes / decryptBytes (kubeadm util/crypto)", () => {
  it("matches GCM test case 13 (empty plaintext)", () => {
    const sealed = encryptBytes(Buffer.alloc(0), ZERO_KEY, ZERO_IV);
    expect(sealed.toString("hex")).toBe("00".repeat(12) + "530f8afbc74536b9a963b4f1c4cb738b");
  });

  it("matches GCM test case 14 (one zero block): nonce || ciphertext || tag", () => {
    const sealed = encryptBytes(Buffer.alloc(16), ZERO_KEY, ZERO_IV);
    expect(sealed.toString("hex")).toBe(
      "00".repeat(12) + "cea7403d4d606b6e074ec5d3baf39d18" + "d0d1c8a799996bf0265b98b5d48ab919",
    );
    expect(decryptBytes(sealed, ZERO_KEY)).toEqual(Buffer.alloc(16));
  });

  const data = Buffer.from("Lorem ipsum dolor sit amet, consectetur adipiscing elit.");

  it("round-trips with a hex certificate key and uses a fresh nonce each time", () => {
    const key = generateCertificateKey();
    const a = encryptBytes(data, key);
    const b = encryptBytes(data, key);
    expect(a.length).toBe(12 + data.length + 16);
    expect(a.subarray(0, 12)).not.toEqual(b.subarray(0, 12));
    expect(decryptBytes(a, key)).toEqual(data);
    expect(decryptBytes(b, key)).toEqual(data);
  });

  it("cannot decrypt with another key (kubeadm's TestEncryptAndDecryptData)", () => {
    const sealed = encryptBytes(data, generateCertificateKey());
    expect(() => decryptBytes(sealed, generateCertificateKey())).toThrow(/cannot be decrypted/);
    expect(() => decryptBytes(sealed, Buffer.alloc(0))).toThrow(/invalid AES key size 0/);
  });

  it("detects tampering with the ciphertext, the tag or the nonce", () => {
    const key = generateCertificateKey();
    const sealed = encryptBytes(data, key);
    for (const at of [0, 12, sealed.length - 1]) {
      const bad = Buffer.from(sealed);
      bad[at]! ^= 0x01;
      expect(() => decryptBytes(bad, key)).toThrow(/cannot be decrypted/);
    }
  });

  it("refuses data shorter than the nonce", () => {
    expect(() => decryptBytes(Buffer.alloc(5), ZERO_KEY)).toThrow(/less than the nonce/);
  });
});
