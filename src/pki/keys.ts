import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair as generateKeyPairCallback,
  type KeyObject,
} from "node:crypto";
import { availableParallelism } from "node:os";
import type { EncryptionAlgorithm } from "../config/types.js";
import type { KeyPair, KeySource } from "./key-source.js";
import { pemDecodeAll, pemEncode } from "./pem.js";

// Private keys as kubeadm makes them (kubeadm: util/pkiutil/pki_helpers.go GeneratePrivateKey)
// and writes them (client-go keyutil.MarshalPrivateKeyToPEM: RSA as PKCS#1 "RSA PRIVATE KEY",
// ECDSA as SEC1 "EC PRIVATE KEY"; public keys as PKIX "PUBLIC KEY").

export const DEFAULT_ENCRYPTION_ALGORITHM: EncryptionAlgorithm = "RSA-2048";

type KeySpec = { type: "rsa"; bits: number } | { type: "ec"; curve: "P-256" | "P-384" };

const KEY_SPECS: Record<EncryptionAlgorithm, KeySpec> = {
  "RSA-2048": { type: "rsa", bits: 2048 },
  "RSA-3072": { type: "rsa", bits: 3072 },
  "RSA-4096": { type: "rsa", bits: 4096 },
  "ECDSA-P256": { type: "ec", curve: "P-256" },
  "ECDSA-P384": { type: "ec", curve: "P-384" },
};

function keySpec(algorithm: EncryptionAlgorithm): KeySpec {
  const spec = KEY_SPECS[algorithm];
  if (!spec) {
    throw new Error(
      `encryptionAlgorithm "${String(algorithm)}" is not supported; use one of ${Object.keys(KEY_SPECS).join(", ")}`,
    );
  }
  return spec;
}

/**
 * A new key pair, generated natively on libuv's thread pool (so several run in parallel).
 * RSA uses exponent 65537 as Go's rsa.GenerateKey.
 */
export function generateKeyPair(algorithm: EncryptionAlgorithm): Promise<KeyPair> {
  const spec = keySpec(algorithm);
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, publicKey: KeyObject, privateKey: KeyObject) =>
      err
        ? reject(new Error(`could not generate a ${algorithm} key: ${err.message}`, { cause: err }))
        : resolve({ privateKey, publicKey });
    if (spec.type === "rsa") {
      generateKeyPairCallback("rsa", { modulusLength: spec.bits, publicExponent: 0x10001 }, done);
    } else {
      generateKeyPairCallback("ec", { namedCurve: spec.curve }, done);
    }
  });
}

/** The encryptionAlgorithm a key corresponds to, or undefined for other keys. */
export function encryptionAlgorithmOf(key: KeyObject): EncryptionAlgorithm | undefined {
  const d = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === "rsa") {
    const bits = d?.modulusLength;
    return bits === 2048
      ? "RSA-2048"
      : bits === 3072
        ? "RSA-3072"
        : bits === 4096
          ? "RSA-4096"
          : undefined;
  }
  if (key.asymmetricKeyType === "ec") {
    return d?.namedCurve === "prime256v1"
      ? "ECDSA-P256"
      : d?.namedCurve === "secp384r1"
        ? "ECDSA-P384"
        : undefined;
  }
  return undefined;
}

/** A private key in kubeadm's file format: PKCS#1 for RSA, SEC1 for ECDSA. */
export function privateKeyToPEM(key: KeyObject): string {
  if (key.asymmetricKeyType === "rsa") {
    return pemEncode("RSA PRIVATE KEY", key.export({ type: "pkcs1", format: "der" }));
  }
  if (key.asymmetricKeyType === "ec") {
    return pemEncode("EC PRIVATE KEY", key.export({ type: "sec1", format: "der" }));
  }
  throw new Error(`cannot write a ${key.asymmetricKeyType ?? "symmetric"} key; only RSA and ECDSA`);
}

/** DER SubjectPublicKeyInfo of a public (or private) key. */
export function publicKeyDER(key: KeyObject): Buffer {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  return pub.export({ type: "spki", format: "der" });
}

/** A public key as PEM "PUBLIC KEY" (PKIX), as kubeadm's EncodePublicKeyPEM writes sa.pub. */
export function publicKeyToPEM(key: KeyObject): string {
  return pemEncode("PUBLIC KEY", publicKeyDER(key));
}

const PRIVATE_KEY_BLOCKS: Record<string, "pkcs1" | "sec1" | "pkcs8"> = {
  "RSA PRIVATE KEY": "pkcs1",
  "EC PRIVATE KEY": "sec1",
  "PRIVATE KEY": "pkcs8",
};

/**
 * The first RSA or ECDSA private key in a PEM file (PKCS#1, SEC1 or PKCS#8), as client-go's
 * keyutil.ParsePrivateKeyPEM; other blocks (e.g. "EC PARAMETERS") are skipped.
 * `file` names the file in errors.
 */
export function parsePrivateKeyPEM(pem: string | Uint8Array, file: string): KeyObject {
  for (const block of pemDecodeAll(pem)) {
    const type = PRIVATE_KEY_BLOCKS[block.type];
    if (!type) continue;
    if (block.headers["Proc-Type"]?.includes("ENCRYPTED")) {
      throw new Error(
        `the private key file ${file} is encrypted; kubeadm needs an unencrypted key`,
      );
    }
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: block.der, format: "der", type });
    } catch (e) {
      throw new Error(`the private key file ${file} cannot be parsed: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (key.asymmetricKeyType !== "rsa" && key.asymmetricKeyType !== "ec") {
      throw new Error(`the private key file ${file} is neither in RSA nor ECDSA format`);
    }
    return key;
  }
  throw new Error(`${file} does not contain a valid RSA or ECDSA private key`);
}

/** The first public key ("PUBLIC KEY" PKIX or "RSA PUBLIC KEY" PKCS#1) in a PEM file. */
export function parsePublicKeyPEM(pem: string | Uint8Array, file: string): KeyObject {
  for (const block of pemDecodeAll(pem)) {
    const type =
      block.type === "PUBLIC KEY" ? "spki" : block.type === "RSA PUBLIC KEY" ? "pkcs1" : undefined;
    if (!type) continue;
    try {
      return createPublicKey({ key: block.der, format: "der", type });
    } catch (e) {
      throw new Error(`the public key file ${file} cannot be parsed: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }
  throw new Error(`${file} does not contain a valid public key`);
}

/** True when the private key belongs to the public key (their SubjectPublicKeyInfo is equal). */
export function keysMatch(privateKey: KeyObject, publicKeyOrSpki: KeyObject | Uint8Array): boolean {
  const spki =
    publicKeyOrSpki instanceof Uint8Array
      ? Buffer.from(publicKeyOrSpki)
      : publicKeyDER(publicKeyOrSpki);
  return publicKeyDER(privateKey).equals(spki);
}

/**
 * KeySource that generates keys ahead of need. Keygen is CPU-bound and runs on libuv's
 * thread pool; at most one job per CPU runs at a time so file I/O (which shares that pool)
 * is not starved behind a queue of keygens.
 */
export class KeyPool implements KeySource {
  private readonly queued = new Map<EncryptionAlgorithm, Promise<KeyPair>[]>();
  private readonly waiting: (() => void)[] = [];
  private running = 0;

  constructor(
    private readonly generate: (
      algorithm: EncryptionAlgorithm,
    ) => Promise<KeyPair> = generateKeyPair,
    private readonly parallelism: number = availableParallelism(),
  ) {}

  prefetch(algorithm: EncryptionAlgorithm, count: number): void {
    keySpec(algorithm);
    const list = this.queued.get(algorithm) ?? [];
    for (let i = 0; i < count; i++) {
      const job = this.limited(algorithm);
      // A prefetched key nobody takes must not surface as an unhandled rejection.
      job.catch(() => undefined);
      list.push(job);
    }
    this.queued.set(algorithm, list);
  }

  take(algorithm: EncryptionAlgorithm): Promise<KeyPair> {
    const next = this.queued.get(algorithm)?.shift();
    return next ?? this.generate(algorithm);
  }

  /** Prefetched keys not yet taken (ready or still being generated). */
  pending(algorithm: EncryptionAlgorithm): number {
    return this.queued.get(algorithm)?.length ?? 0;
  }

  /** Drops prefetched keys that were not taken; jobs not yet started are never started. */
  discard(): void {
    this.queued.clear();
    this.waiting.length = 0;
  }

  private async limited(algorithm: EncryptionAlgorithm): Promise<KeyPair> {
    if (this.running >= this.parallelism) {
      // A job dropped by discard() never resumes; nothing holds its promise any more.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running++;
    try {
      return await this.generate(algorithm);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}
