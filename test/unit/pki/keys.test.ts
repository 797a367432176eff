import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { EncryptionAlgorithm } from "../../../src/config/types.js";
import type { KeyPair } from "../../../src/pki/key-source.js";
import {
  KeyPool,
  encryptionAlgorithmOf,
  generateKeyPair,
  keysMatch,
  parsePrivateKeyPEM,
  parsePublicKeyPEM,
  privateKeyToPEM,
  publicKeyToPEM,
} from "../../../src/pki/keys.js";
import { pemEncode } from "../../../src/pki/pem.js";

describe("generateKeyPair (kubeadm GeneratePrivateKey)", () => {
  it.each<[EncryptionAlgorithm, string, Record<string, unknown>]>([
    ["RSA-2048", "rsa", { modulusLength: 2048, publicExponent: 65537n }],
    ["RSA-3072", "rsa", { modulusLength: 3072 }],
    ["ECDSA-P256", "ec", { namedCurve: "prime256v1" }],
    ["ECDSA-P384", "ec", { namedCurve: "secp384r1" }],
  ])("%s", async (algorithm, type, details) => {
    const { privateKey, publicKey } = await generateKeyPair(algorithm);
    expect(privateKey.asymmetricKeyType).toBe(type);
    expect(privateKey.asymmetricKeyDetails).toMatchObject(details);
    expect(keysMatch(privateKey, publicKey)).toBe(true);
    expect(encryptionAlgorithmOf(privateKey)).toBe(algorithm);
  });

  it("refuses an unknown algorithm with the list of valid ones", async () => {
    await expect(async () => generateKeyPair("RSA-1024" as EncryptionAlgorithm)).rejects.toThrow(
      /"RSA-1024" is not supported; use one of RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, ECDSA-P384/,
    );
  });
});

describe("PEM encodings (client-go keyutil.MarshalPrivateKeyToPEM)", () => {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });

  it("writes RSA keys as PKCS#1 and EC keys as SEC1, 64-column PEM", () => {
    const r = privateKeyToPEM(rsa.privateKey);
    const e = privateKeyToPEM(ec.privateKey);
    expect(r).toMatch(
      /^-----BEGIN RSA PRIVATE KEY-----\n([A-Za-z0-9+/=]{64}\n)+[A-Za-z0-9+/=]{1,64}\n-----END RSA PRIVATE KEY-----\n$/,
    );
    expect(e).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n[\s\S]+-----END EC PRIVATE KEY-----\n$/);
    // Same bytes as OpenSSL's own PKCS#1 / SEC1 output.
    expect(r).toBe(rsa.privateKey.export({ type: "pkcs1", format: "pem" }));
    expect(e).toBe(ec.privateKey.export({ type: "sec1", format: "pem" }));
  });

  it("writes public keys as PKIX PUBLIC KEY", () => {
    expect(publicKeyToPEM(rsa.privateKey)).toBe(
      rsa.publicKey.export({ type: "spki", format: "pem" }),
    );
    expect(publicKeyToPEM(ec.publicKey)).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
  });

  it.each([
    ["PKCS#1", () => rsa.privateKey.export({ type: "pkcs1", format: "pem" }) as string, rsa],
    ["PKCS#8 RSA", () => rsa.privateKey.export({ type: "pkcs8", format: "pem" }) as string, rsa],
    ["SEC1", () => ec.privateKey.export({ type: "sec1", format: "pem" }) as string, ec],
    ["PKCS#8 EC", () => ec.privateKey.export({ type: "pkcs8", format: "pem" }) as string, ec],
    [
      // `openssl ecparam -genkey` writes the curve parameters first; Go skips that block.
      "SEC1 after EC PARAMETERS",
      () =>
        "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" +
        (ec.privateKey.export({ type: "sec1", format: "pem" }) as string),
      ec,
    ],
  ])("parses %s", (_name, pem, pair) => {
    const key = parsePrivateKeyPEM(pem(), "/etc/kubernetes/pki/x.key");
    expect(keysMatch(key, pair.publicKey)).toBe(true);
  });

  it.each([
    ["garbage", "not a key", /\/pki\/bad.key does not contain a valid RSA or ECDSA private key/],
    [
      "an Ed25519 key",
      generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string,
      /the private key file \/pki\/bad.key is neither in RSA nor ECDSA format/,
    ],
    [
      "a legacy encrypted key",
      "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n",
      /\/pki\/bad.key is encrypted/,
    ],
    [
      "a corrupt body",
      pemEncode("RSA PRIVATE KEY", Buffer.from("not der")),
      /the private key file \/pki\/bad.key cannot be parsed/,
    ],
  ])("refuses %s, naming the file", (_name, pem, message) => {
    expect(() => parsePrivateKeyPEM(pem, "/pki/bad.key")).toThrow(message);
  });

  it("parses public keys and names the file when there is none", () => {
    const pub = parsePublicKeyPEM(publicKeyToPEM(rsa.publicKey), "/pki/sa.pub");
    expect(keysMatch(rsa.privateKey, pub)).toBe(true);
    expect(() => parsePublicKeyPEM("x", "/pki/sa.pub")).toThrow(
      /\/pki\/sa.pub does not contain a valid public key/,
    );
  });
});

describe("KeyPool", () => {
  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const pair: KeyPair = { privateKey: ec.privateKey, publicKey: ec.publicKey };

  function controlledGenerator() {
    const started: {
      alg: EncryptionAlgorithm;
      resolve: (k: KeyPair) => void;
      reject: (e: Error) => void;
    }[] = [];
    const generate = (alg: EncryptionAlgorithm) =>
      new Promise<KeyPair>((resolve, reject) => started.push({ alg, resolve, reject }));
    return { started, generate };
  }
  const tick = () => new Promise((r) => setImmediate(r));

  it("runs at most `parallelism` prefetched jobs at once and starts the next as one ends", async () => {
    const g = controlledGenerator();
    const pool = new KeyPool(g.generate, 2);
    pool.prefetch("RSA-2048", 5);
    await tick();
    expect(g.started).toHaveLength(2);
    expect(pool.pending("RSA-2048")).toBe(5);
    g.started[0]!.resolve(pair);
    await tick();
    expect(g.started).toHaveLength(3);
    const first = await pool.take("RSA-2048");
    expect(first).toBe(pair);
    expect(pool.pending("RSA-2048")).toBe(4);
  });

  it("hands out prefetched keys in order and generates directly when none is queued", async () => {
    const g = controlledGenerator();
    const pool = new KeyPool(g.generate, 4);
    pool.prefetch("ECDSA-P256", 1);
    await tick();
    const a = pool.take("ECDSA-P256");
    const b = pool.take("ECDSA-P256");
    await tick();
    expect(g.started.map((s) => s.alg)).toEqual(["ECDSA-P256", "ECDSA-P256"]);
    g.started[1]!.resolve(pair);
    await expect(b).resolves.toBe(pair);
    g.started[0]!.resolve(pair);
    await expect(a).resolves.toBe(pair);
    expect(pool.pending("RSA-2048")).toBe(0);
  });

  it("keeps algorithms apart", async () => {
    const pool = new KeyPool(
      async (alg) => (alg === "ECDSA-P256" ? pair : generateKeyPair(alg)),
      2,
    );
    pool.prefetch("ECDSA-P256", 1);
    expect(pool.pending("ECDSA-P384")).toBe(0);
    const p384 = await pool.take("ECDSA-P384");
    expect(encryptionAlgorithmOf(p384.privateKey)).toBe("ECDSA-P384");
  });

  it("does not surface failures of keys nobody takes, and reports them to who takes", async () => {
    const g = controlledGenerator();
    const pool = new KeyPool(g.generate, 2);
    pool.prefetch("RSA-2048", 2);
    await tick();
    g.started[0]!.reject(new Error("boom"));
    g.started[1]!.reject(new Error("boom"));
    await tick();
    await expect(pool.take("RSA-2048")).rejects.toThrow("boom");
  });

  it("discard() drops queued keys and never starts jobs still waiting", async () => {
    const g = controlledGenerator();
    const pool = new KeyPool(g.generate, 1);
    pool.prefetch("RSA-2048", 3);
    await tick();
    pool.discard();
    expect(pool.pending("RSA-2048")).toBe(0);
    g.started[0]!.resolve(pair);
    await tick();
    expect(g.started).toHaveLength(1);
  });

  it("generates real keys in parallel", async () => {
    const pool = new KeyPool();
    pool.prefetch("ECDSA-P256", 3);
    const keys = await Promise.all([1, 2, 3].map(() => pool.take("ECDSA-P256")));
    expect(new Set(keys.map((k) => publicKeyToPEM(k.publicKey))).size).toBe(3);
  });
});
