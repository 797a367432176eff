import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

// Real tools for known answers computed outside our code: openssl for keys, certificates,
// CA pins and digests, in a temporary folder removed afterwards.

export const run = promisify(execFile);

export async function inTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-api-objects-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface OpensslCA {
  certPEM: string;
  keyPEM: string;
  /** "sha256:<hex>" of the DER SubjectPublicKeyInfo, by openssl. */
  pin: string;
}

/** A self-signed ECDSA CA made by openssl, and its public key pin computed by openssl. */
export async function opensslCA(cn = "kubernetes"): Promise<OpensslCA> {
  return inTempDir(async (dir) => {
    const key = join(dir, "ca.key");
    const crt = join(dir, "ca.crt");
    await run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
    await run("openssl", [
      "req",
      "-x509",
      "-new",
      "-key",
      key,
      "-subj",
      `/CN=${cn}`,
      "-days",
      "1",
      "-out",
      crt,
    ]);
    return {
      certPEM: await readFile(crt, "utf8"),
      keyPEM: await readFile(key, "utf8"),
      pin: await opensslPin(await readFile(crt, "utf8")),
    };
  });
}

/** openssl's SHA-256 of a certificate's DER public key, as "sha256:<hex>". */
export async function opensslPin(certPEM: string): Promise<string> {
  return inTempDir(async (dir) => {
    const crt = join(dir, "c.crt");
    const pub = join(dir, "pub.der");
    await writeFile(crt, certPEM);
    await run("sh", [
      "-c",
      `openssl x509 -in "${crt}" -noout -pubkey | openssl pkey -pubin -outform der -out "${pub}"`,
    ]);
    const { stdout } = await run("openssl", ["dgst", "-sha256", "-r", pub]);
    return `sha256:${stdout.split(" ")[0]}`;
  });
}

/** openssl's SHA-256 of bytes, hex. */
export async function opensslSha256(data: Uint8Array): Promise<string> {
  return inTempDir(async (dir) => {
    const file = join(dir, "data");
    await writeFile(file, data);
    const { stdout } = await run("openssl", ["dgst", "-sha256", "-r", file]);
    return stdout.split(" ")[0]!;
  });
}
