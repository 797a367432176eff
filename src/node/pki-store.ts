import type { KeyObject } from "node:crypto";
import type { EncryptionAlgorithm } from "../config/types.js";
import {
  certDefinition,
  type CertDefinition,
  type CertSpec,
  type Validity,
} from "../pki/certlist.js";
import { parseCertificatesPEM, type Certificate } from "../pki/certs.js";
import {
  checkCA,
  checkSignedCertificate,
  issueCA,
  issueSignedCertificate,
  serviceAccountKeyPEMs,
  type IssuedCertificate,
  type LoadedCA,
} from "../pki/issue.js";
import type { KeySource } from "../pki/key-source.js";
import { keysMatch, parsePrivateKeyPEM, publicKeyToPEM } from "../pki/keys.js";
import {
  CERT_FILE_MODE,
  KEY_FILE_MODE,
  SERVICE_ACCOUNT_KEY_BASE_NAME,
  certFile,
  keyFile,
  publicKeyFile,
} from "../pki/paths.js";
import { readFileIfExists, type Host } from "../remote/host.js";
import type { Logger } from "../types/logger.js";

// Certificates and keys on a host: create what is missing, reuse what is valid, refuse what
// does not match (kubeadm: phases/certs/certs.go, cmd/phases/init/certs.go). The certificates
// themselves are built and checked in pki/issue.ts; every file operation goes through the
// Host, so --rootfs and dry-run need nothing here.

export type { LoadedCA } from "../pki/issue.js";

export interface PkiTarget {
  host: Host;
  /** ClusterConfiguration.certificatesDir, as a host path. */
  certDir: string;
  log: Logger;
}

export interface PkiWriter extends PkiTarget {
  keys: KeySource;
  algorithm: EncryptionAlgorithm;
  now: Date;
}

/** The first certificate of a PEM file on the host, or undefined when the file is absent. */
export async function readCertificate(host: Host, path: string): Promise<Certificate | undefined> {
  const data = await readFileIfExists(host, path);
  return data === undefined ? undefined : parseCertificatesPEM(data, path)[0];
}

/** The private key of a PEM file on the host, or undefined when the file is absent. */
export async function readPrivateKey(host: Host, path: string): Promise<KeyObject | undefined> {
  const data = await readFileIfExists(host, path);
  return data === undefined ? undefined : parsePrivateKeyPEM(data, path);
}

function goList(items: readonly string[]): string {
  return `[${items.join(" ")}]`;
}

/**
 * Reads a CA and checks it as kubeadm does before using it: it is a CA, and its key (if any)
 * belongs to it. Unlike kubeadm, which only warns, an expired CA is an error: nothing it
 * signs would verify. Returns undefined when neither file exists.
 */
export async function loadCA(
  target: PkiTarget,
  def: CertDefinition,
  now: Date,
): Promise<LoadedCA | undefined> {
  const certPath = certFile(target.certDir, def.baseName);
  const keyPath = keyFile(target.certDir, def.baseName);
  const [cert, key] = await Promise.all([
    readCertificate(target.host, certPath),
    readPrivateKey(target.host, keyPath),
  ]);
  if (!cert) {
    if (key) throw new Error(`${keyPath} exists but the CA certificate ${certPath} does not`);
    return undefined;
  }
  const ca = { cert, key, certPath, keyPath };
  checkCA(ca, now, target.log);
  return ca;
}

/** True when `<ca>.crt` exists without `<ca>.key`: kubeadm's external CA mode for that CA. */
export async function isExternalCA(
  host: Host,
  certDir: string,
  baseName: string,
): Promise<boolean> {
  const [crt, key] = await Promise.all([
    host.exists(certFile(certDir, baseName)),
    host.exists(keyFile(certDir, baseName)),
  ]);
  return crt && !key;
}

async function writeKeyAndCert(
  host: Host,
  keyPath: string,
  certPath: string,
  issued: IssuedCertificate,
): Promise<void> {
  // Key first, as kubeadm's WriteCertAndKey: a certificate on disk always has its key.
  await host.writeFile(keyPath, issued.keyPEM, KEY_FILE_MODE);
  await host.writeFile(certPath, issued.cert.pem, CERT_FILE_MODE);
}

/** certs/<ca>: reuses an existing CA (with or without key), else creates and writes one. */
export async function ensureCA(
  writer: PkiWriter,
  spec: CertSpec,
  validity: Validity,
): Promise<void> {
  const existing = await loadCA(writer, spec, writer.now);
  if (existing) {
    writer.log.info(
      existing.key
        ? `Using existing ${spec.baseName} certificate authority`
        : `Using existing ${spec.baseName} keyless certificate authority`,
    );
    return;
  }
  const issued = await issueCA(spec, validity, await writer.keys.take(writer.algorithm));
  writer.log.info(`Generating "${spec.baseName}" certificate and key`);
  await writeKeyAndCert(
    writer.host,
    keyFile(writer.certDir, spec.baseName),
    certFile(writer.certDir, spec.baseName),
    issued,
  );
}

/**
 * certs/<leaf>: reuses an existing certificate when it is valid for `spec` (else an error
 * naming the file and the problem), otherwise signs a new one with its CA.
 */
export async function ensureSignedCertificate(
  writer: PkiWriter,
  spec: CertSpec,
  validity: Validity,
): Promise<void> {
  if (!spec.caName) throw new Error(`${spec.name} is a CA, not a signed certificate`);
  const caDef = certDefinition(spec.caName);
  const certPath = certFile(writer.certDir, spec.baseName);
  const keyPath = keyFile(writer.certDir, spec.baseName);
  const [certData, keyData, ca] = await Promise.all([
    readFileIfExists(writer.host, certPath),
    readFileIfExists(writer.host, keyPath),
    loadCA(writer, caDef, writer.now),
  ]);
  const caCertPath = certFile(writer.certDir, caDef.baseName);

  if (certData !== undefined || keyData !== undefined) {
    if (certData === undefined) throw new Error(`${keyPath} exists but ${certPath} does not`);
    if (keyData === undefined)
      throw new Error(`${certPath} exists but its key ${keyPath} does not`);
    const key = parsePrivateKeyPEM(keyData, keyPath);
    const cert = parseCertificatesPEM(certData, certPath)[0]!;
    if (!ca) {
      throw new Error(`cannot check ${certPath}: its CA certificate ${caCertPath} does not exist`);
    }
    checkSignedCertificate(cert, certPath, spec, ca, writer.now, writer.log);
    if (!keysMatch(key, cert.rawSubjectPublicKeyInfo)) {
      throw new Error(`${keyPath} is not the private key of ${certPath}`);
    }
    writer.log.info(`Using existing ${spec.baseName} certificate and key on disk`);
    return;
  }

  if (!ca) {
    throw new Error(
      `cannot create ${certPath}: the CA certificate ${caCertPath} does not exist (run the certs/${caDef.name} phase first)`,
    );
  }
  if (!ca.key) {
    throw new Error(
      `cannot create ${certPath}: ${ca.keyPath} is absent (external CA mode), so the certificate must be provided`,
    );
  }
  const issued = await issueSignedCertificate(
    spec,
    validity,
    await writer.keys.take(writer.algorithm),
    { cert: ca.cert, key: ca.key },
  );
  const cert = issued.cert;
  writer.log.info(`Generating "${spec.baseName}" certificate and key`);
  await writeKeyAndCert(writer.host, keyPath, certPath, issued);
  if (spec.usages.includes("serverAuth")) {
    writer.log.info(
      `${spec.baseName} serving cert is signed for DNS names ${goList(cert.dnsNames)} and IPs ${goList(cert.ipAddresses)}`,
    );
  }
}

/**
 * certs/sa: the service-account signing key pair (kubeadm's
 * CreateServiceAccountKeyAndPublicKeyFiles). An existing sa.key is reused as is; both files
 * are written 0600 (keyutil.WriteKey).
 */
export async function ensureServiceAccountKey(
  writer: PkiWriter,
  externalCA: boolean,
): Promise<void> {
  const keyPath = keyFile(writer.certDir, SERVICE_ACCOUNT_KEY_BASE_NAME);
  const pubPath = publicKeyFile(writer.certDir, SERVICE_ACCOUNT_KEY_BASE_NAME);
  const keyData = await readFileIfExists(writer.host, keyPath);
  if (keyData !== undefined) {
    let key: KeyObject;
    try {
      key = parsePrivateKeyPEM(keyData, keyPath);
    } catch (e) {
      throw new Error(`${keyPath} exists but it could not be loaded: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (!(await writer.host.exists(pubPath))) {
      // The API server cannot start without sa.pub; it follows from sa.key.
      await writer.host.writeFile(pubPath, publicKeyToPEM(key), KEY_FILE_MODE);
    }
    writer.log.info(
      externalCA
        ? "Using existing sa keys"
        : `Using the existing "${SERVICE_ACCOUNT_KEY_BASE_NAME}" key`,
    );
    return;
  }
  const pems = serviceAccountKeyPEMs(await writer.keys.take(writer.algorithm));
  writer.log.info(`Generating "${SERVICE_ACCOUNT_KEY_BASE_NAME}" key and public key`);
  await writer.host.writeFile(keyPath, pems.keyPEM, KEY_FILE_MODE);
  await writer.host.writeFile(pubPath, pems.publicKeyPEM, KEY_FILE_MODE);
}

/**
 * kubeadm's UsingExternalCA / UsingExternalFrontProxyCA / UsingExternalEtcdCA at the start of
 * init: a CA given without its key cannot sign anything, so every certificate it signs must
 * already be there. Returns the names of the keyless CAs.
 */
export async function checkKeylessCAs(
  target: PkiTarget,
  certs: readonly CertDefinition[],
): Promise<string[]> {
  const keyless: string[] = [];
  for (const ca of certs.filter((c) => c.caName === undefined)) {
    if (!(await isExternalCA(target.host, target.certDir, ca.baseName))) continue;
    keyless.push(ca.name);
    for (const leaf of certs.filter((c) => c.caName === ca.name)) {
      const path = certFile(target.certDir, leaf.baseName);
      if (!(await target.host.exists(path))) {
        throw new Error(
          `invalid or incomplete external CA: ${keyFile(target.certDir, ca.baseName)} is absent, so ${path} must be provided`,
        );
      }
    }
  }
  return keyless;
}

/**
 * How many new keys the certs phase will generate: one per certificate that does not exist
 * yet and whose CA can sign (or will be created), plus sa.key when absent.
 */
export async function plannedCertificateKeys(
  target: PkiTarget,
  certs: readonly CertDefinition[],
): Promise<number> {
  const host = target.host;
  const present = await Promise.all(
    certs.map(async (c) => {
      const [crt, key] = await Promise.all([
        host.exists(certFile(target.certDir, c.baseName)),
        host.exists(keyFile(target.certDir, c.baseName)),
      ]);
      return { def: c, crt, key };
    }),
  );
  const byName = new Map(present.map((p) => [p.def.name, p]));
  let count = 0;
  for (const p of present) {
    if (p.crt || p.key) continue;
    const ca = p.def.caName ? byName.get(p.def.caName) : undefined;
    if (ca && ca.crt && !ca.key) continue; // a keyless CA signs nothing new
    count++;
  }
  if (!(await host.exists(keyFile(target.certDir, SERVICE_ACCOUNT_KEY_BASE_NAME)))) count++;
  return count;
}
