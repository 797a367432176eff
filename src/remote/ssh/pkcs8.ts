import { createPrivateKey, type KeyObject } from "node:crypto";

// PKCS#8 private keys ("-----BEGIN PRIVATE KEY-----", "-----BEGIN ENCRYPTED PRIVATE KEY-----",
// what `openssl genpkey` and many key services write) are read by OpenSSH but not by ssh2,
// which knows OpenSSH's own format, PKCS#1 RSA and SEC1 EC PEM, and PuTTY's. Node's crypto
// re-encodes an RSA or ECDSA one into the PEM form ssh2 reads. (An Ed25519 key in PKCS#8 form
// is refused: OpenSSH 9 cannot load it either, and ssh2 reads Ed25519 only in OpenSSH's format.)

const PKCS8 = /-----BEGIN (ENCRYPTED )?PRIVATE KEY-----/;

export type Ssh2Key = { key: string | Buffer; passphrase?: string } | { problem: string };

/** The key (and passphrase) to hand to ssh2: unchanged unless it is PKCS#8. */
export function ssh2Key(key: string | Buffer, passphrase?: string): Ssh2Key {
  const match = PKCS8.exec(key.toString());
  if (!match) return { key, ...(passphrase !== undefined ? { passphrase } : {}) };
  const encrypted = match[1] !== undefined;
  if (encrypted && passphrase === undefined) {
    return { problem: "the PKCS#8 key is encrypted and no passphrase was given" };
  }
  let k: KeyObject;
  try {
    k = createPrivateKey({
      key,
      format: "pem",
      ...(encrypted ? { passphrase: passphrase! } : {}),
    });
  } catch {
    // OpenSSL's reason ("bad decrypt", "unsupported") would say less than this.
    return {
      problem: encrypted
        ? "cannot decrypt the PKCS#8 key with the passphrase given"
        : "the PKCS#8 key cannot be read",
    };
  }
  switch (k.asymmetricKeyType) {
    case "rsa":
      return { key: k.export({ type: "pkcs1", format: "pem" }) };
    case "ec":
      return { key: k.export({ type: "sec1", format: "pem" }) };
    default:
      return {
        problem: `${k.asymmetricKeyType ?? "this type of"} keys in PKCS#8 form cannot be used (OpenSSH cannot load them either): give the key in OpenSSH's format, as ssh-keygen writes it`,
      };
  }
}
