import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

// The key that encrypts the control-plane certificates kubeadm uploads to the kubeadm-certs
// Secret (kubeadm: phases/copycerts/copycerts.go CreateCertificateKey; util/crypto/crypto.go):
// 32 random bytes shown as 64 lower-case hex characters; AES-GCM with a 12-byte random
// nonce, sealed as nonce || ciphertext || 16-byte tag.

export const CERTIFICATE_KEY_SIZE = 32;
const NONCE_SIZE = 12;
const TAG_SIZE = 16;

/** A new certificate key: 64 lower-case hex characters. */
export function generateCertificateKey(): string {
  return randomBytes(CERTIFICATE_KEY_SIZE).toString("hex");
}

/** The 32 key bytes of a certificate key; throws a sentence when it is not 64 hex characters. */
export function decodeCertificateKey(key: string): Buffer {
  if (!/^[0-9a-fA-F]*$/.test(key) || key.length % 2 !== 0) {
    throw new Error("the certificate key is not a hexadecimal string");
  }
  const bytes = Buffer.from(key, "hex");
  if (bytes.length !== CERTIFICATE_KEY_SIZE) {
    throw new Error(
      `the certificate key must be ${CERTIFICATE_KEY_SIZE * 2} hexadecimal characters (${CERTIFICATE_KEY_SIZE} bytes), got ${bytes.length} bytes`,
    );
  }
  return bytes;
}

function aesKey(key: string | Uint8Array): {
  bytes: Buffer;
  cipher: "aes-128-gcm" | "aes-192-gcm" | "aes-256-gcm";
} {
  const bytes = typeof key === "string" ? decodeCertificateKey(key) : Buffer.from(key);
  switch (bytes.length) {
    case 16:
      return { bytes, cipher: "aes-128-gcm" };
    case 24:
      return { bytes, cipher: "aes-192-gcm" };
    case 32:
      return { bytes, cipher: "aes-256-gcm" };
    default:
      // Go's aes.NewCipher: "crypto/aes: invalid key size".
      throw new Error(`invalid AES key size ${bytes.length}: it must be 16, 24 or 32 bytes`);
  }
}

/**
 * kubeadm's EncryptBytes: AES-GCM under `key` (a hex certificate key, or raw 16/24/32 bytes),
 * returning nonce || ciphertext || tag. `nonce` is random unless given (known-answer tests).
 */
export function encryptBytes(
  data: Uint8Array,
  key: string | Uint8Array,
  nonce: Uint8Array = randomBytes(NONCE_SIZE),
): Buffer {
  if (nonce.length !== NONCE_SIZE) throw new Error(`the AES-GCM nonce must be ${NONCE_SIZE} bytes`);
  const { bytes, cipher } = aesKey(key);
  const c = createCipheriv(cipher, bytes, nonce);
  const sealed = Buffer.concat([c.update(data), c.final()]);
  return Buffer.concat([nonce, sealed, c.getAuthTag()]);
}

/** kubeadm's DecryptBytes: opens nonce || ciphertext || tag; throws when it was tampered with. */
export function decryptBytes(data: Uint8Array, key: string | Uint8Array): Buffer {
  const { bytes, cipher } = aesKey(key);
  if (data.length < NONCE_SIZE) throw new Error("size of data is less than the nonce");
  if (data.length < NONCE_SIZE + TAG_SIZE) {
    throw new Error("the encrypted data is too short to hold an authentication tag");
  }
  const nonce = data.subarray(0, NONCE_SIZE);
  const tag = data.subarray(data.length - TAG_SIZE);
  const d = createDecipheriv(cipher, bytes, nonce);
  d.setAuthTag(tag);
  try {
    return Buffer.concat([d.update(data.subarray(NONCE_SIZE, data.length - TAG_SIZE)), d.final()]);
  } catch (e) {
    throw new Error("the data cannot be decrypted: wrong certificate key or corrupted data", {
      cause: e,
    });
  }
}
