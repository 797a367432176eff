import type { KeyObject } from "node:crypto";
import type { Logger } from "../types/logger.js";
import type { CertSpec, Validity } from "./certlist.js";
import { newSelfSignedCACert, newSignedCert, type Certificate } from "./certs.js";
import type { KeyPair } from "./key-source.js";
import { keysMatch, privateKeyToPEM, publicKeyToPEM } from "./keys.js";

// Certificates and keys as kubeadm issues and checks them (kubeadm: phases/certs/certs.go,
// pkiutil), without touching any file: new ones come back as PEM text for the node store
// (node/pki-store.ts) to write, existing ones are checked as the store read them.

/** A CA as read from disk; `key` is undefined for a user-provided ("external", keyless) CA. */
export interface LoadedCA {
  cert: Certificate;
  key: KeyObject | undefined;
  certPath: string;
  keyPath: string;
}

/** A new key and its certificate: the PEM texts to write, and the certificate for messages. */
export interface IssuedCertificate {
  keyPEM: string;
  cert: Certificate;
}

function checkNotExpired(cert: Certificate, path: string, now: Date, log: Logger): void {
  if (now.getTime() > cert.notAfter.getTime()) {
    throw new Error(`${path} has expired: it was valid until ${cert.notAfter.toISOString()}`);
  }
  if (now.getTime() < cert.notBefore.getTime()) {
    // kubeadm (CheckCertificatePeriodValidity) only warns: the clock may be what is wrong.
    log.warn(`${path} is not valid yet: it is valid from ${cert.notBefore.toISOString()}`);
  }
}

/**
 * Checks a CA as kubeadm does before using it: it is a CA, and its key (if any) belongs to it.
 * Unlike kubeadm, which only warns, an expired CA is an error: nothing it signs would verify.
 */
export function checkCA(ca: LoadedCA, now: Date, log: Logger): void {
  if (!ca.cert.isCA) throw new Error(`${ca.certPath} is not a CA certificate`);
  checkNotExpired(ca.cert, ca.certPath, now, log);
  if (ca.key && !keysMatch(ca.key, ca.cert.rawSubjectPublicKeyInfo)) {
    throw new Error(`${ca.keyPath} is not the private key of ${ca.certPath}`);
  }
}

/**
 * The problems that keep an existing certificate from being reused for `spec`: not signed by
 * the CA, expired, missing a SAN or a usage. kubeadm checks the signature and the SANs
 * (validateCertificateWithConfig); usages and expiry are checked here too, because a
 * certificate without them cannot do its job.
 */
export function checkSignedCertificate(
  cert: Certificate,
  certPath: string,
  spec: Pick<CertSpec, "usages" | "altNames">,
  ca: LoadedCA,
  now: Date,
  log: Logger,
): void {
  if (!cert.isSignedBy(ca.cert)) throw new Error(`${certPath} is not signed by ${ca.certPath}`);
  checkNotExpired(cert, certPath, now, log);
  for (const name of spec.altNames.dnsNames) {
    if (!cert.coversDNSName(name)) throw new Error(`${certPath} does not cover SAN ${name}`);
  }
  for (const ip of spec.altNames.ips) {
    if (!cert.coversIP(ip)) throw new Error(`${certPath} does not cover SAN ${ip}`);
  }
  for (const usage of spec.usages) {
    if (!cert.allowsExtKeyUsage(usage)) {
      throw new Error(`${certPath} does not allow the extended key usage ${usage}`);
    }
  }
}

/** A self-signed CA for `spec` (kubeadm: pkiutil.NewCertificateAuthority). */
export async function issueCA(
  spec: CertSpec,
  validity: Validity,
  keys: KeyPair,
): Promise<IssuedCertificate> {
  const cert = await newSelfSignedCACert(
    {
      commonName: spec.commonName,
      organization: spec.organization,
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
    },
    keys,
  );
  return { keyPEM: privateKeyToPEM(keys.privateKey), cert };
}

/** A certificate for `spec` signed by its CA (kubeadm: pkiutil.NewCertAndKey). */
export async function issueSignedCertificate(
  spec: CertSpec,
  validity: Validity,
  keys: KeyPair,
  ca: { cert: Certificate; key: KeyObject },
): Promise<IssuedCertificate> {
  const cert = await newSignedCert(
    {
      commonName: spec.commonName,
      organization: spec.organization,
      altNames: spec.altNames,
      extKeyUsages: spec.usages,
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
    },
    keys.publicKey,
    ca,
  );
  return { keyPEM: privateKeyToPEM(keys.privateKey), cert };
}

/** The service-account signing key pair as PEM texts (kubeadm: keyutil.WriteKey). */
export function serviceAccountKeyPEMs(keys: KeyPair): { keyPEM: string; publicKeyPEM: string } {
  return { keyPEM: privateKeyToPEM(keys.privateKey), publicKeyPEM: publicKeyToPEM(keys.publicKey) };
}
