// Test PKI made with the openssl CLI, independent of kubeforge's pki/ code: a CA, serving and
// client certificates, CSRs. For tests of the simulation and for tests that need a cluster CA
// without running kubeforge's certs phase.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface KeyPair {
  cert: string;
  key: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run("openssl", args, { cwd });
}

async function ecKey(path: string, cwd: string): Promise<void> {
  await openssl(
    ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path],
    cwd,
  );
}

function subject(cn: string, orgs: string[]): string {
  return `${orgs.map((o) => `/O=${o}`).join("")}/CN=${cn}`;
}

/** A self-signed RSA CA (kubeadm's default key type), valid `days`. */
export async function makeCA(dir: string, name: string, days = 3650): Promise<KeyPair> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  await openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-subj",
      `/CN=${name}`,
      "-days",
      String(days),
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
    ],
    dir,
  );
  return { cert, key };
}

export interface LeafOptions {
  cn: string;
  orgs?: string[];
  /** extendedKeyUsage value; default clientAuth. */
  eku?: string;
  /** subjectAltName value ("IP:127.0.0.1,DNS:localhost"). */
  san?: string;
  days?: number;
}

/** An ECDSA P-256 leaf certificate signed by `ca`. */
export async function makeLeaf(
  dir: string,
  name: string,
  ca: KeyPair,
  o: LeafOptions,
): Promise<KeyPair> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const ext = join(dir, `${name}.ext`);
  await ecKey(key, dir);
  await openssl(
    ["req", "-new", "-key", key, "-out", csr, "-subj", subject(o.cn, o.orgs ?? [])],
    dir,
  );
  const lines = [
    "basicConstraints=critical,CA:FALSE",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    `extendedKeyUsage=${o.eku ?? "clientAuth"}`,
  ];
  if (o.san) lines.push(`subjectAltName=${o.san}`);
  await writeFile(ext, `${lines.join("\n")}\n`);
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      ca.cert,
      "-CAkey",
      ca.key,
      "-CAcreateserial",
      "-out",
      cert,
      "-days",
      String(o.days ?? 365),
      "-extfile",
      ext,
    ],
    dir,
  );
  return { cert, key };
}

/** A PEM CSR (ECDSA P-256 unless rsa) with the given subject and optional SANs; returns paths. */
export async function makeCSR(
  dir: string,
  name: string,
  o: { cn: string; orgs?: string[]; san?: string; rsa?: boolean },
): Promise<{ csr: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  if (o.rsa)
    await openssl(
      ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key],
      dir,
    );
  else await ecKey(key, dir);
  const args = ["req", "-new", "-key", key, "-out", csr, "-subj", subject(o.cn, o.orgs ?? [])];
  if (o.san) args.push("-addext", `subjectAltName=${o.san}`);
  await openssl(args, dir);
  return { csr, key };
}
