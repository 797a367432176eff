import { createHash, createPublicKey, randomBytes, X509Certificate as NodeX509 } from "node:crypto";
import type { KeyObject, webcrypto } from "node:crypto";
import { formatIP, parseIP } from "../config/network.js";
import { certificateParts, subjectPublicKeyBits } from "./der.js";
import type { KeyPair } from "./key-source.js";
import { publicKeyDER } from "./keys.js";
import { pemDecodeAll, pemEncode } from "./pem.js";
import { x509 } from "./x509-provider.js";

// Certificates exactly as kubeadm makes them through Go's crypto/x509
// (kubeadm: util/pkiutil/pki_helpers.go NewSelfSignedCACert / NewSignedCert; Go: x509.go
// CreateCertificate): random 63-bit serial, subject O before CN, SANs DNS-then-IP,
// KeyUsage (critical), ExtKeyUsage, BasicConstraints (critical), SubjectKeyId on CAs,
// AuthorityKeyId on certificates signed by a CA with a SubjectKeyId, in that order.

export type ExtKeyUsage = "serverAuth" | "clientAuth";

export const EXT_KEY_USAGE_OIDS: Record<ExtKeyUsage, string> = {
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
};
const ANY_EXT_KEY_USAGE_OID = "2.5.29.37.0";

const HOUR_MS = 3_600_000;
/** kubeadm constants.CACertificateValidityPeriod: 10 years. */
export const CA_CERTIFICATE_VALIDITY_MS = 87_600 * HOUR_MS;
/** kubeadm constants.CertificateValidityPeriod: 1 year. */
export const CERTIFICATE_VALIDITY_MS = 8_760 * HOUR_MS;
/** kubeadm constants.CertificateBackdate: NotBefore is moved back by this much. */
export const CERTIFICATE_BACKDATE_MS = 5 * 60_000;

const OID_COMMON_NAME = "2.5.4.3";
const OID_ORGANIZATION = "2.5.4.10";

export interface AltNames {
  dnsNames: string[];
  /** Canonical text of each IP (IPv6 compressed as Go prints it). */
  ips: string[];
}

export interface CertificateTemplate {
  commonName: string;
  organization?: string[];
  altNames?: AltNames;
  extKeyUsages?: ExtKeyUsage[];
  /** CA: required. Signed certificate: defaults to the CA's NotBefore, as kubeadm. */
  notBefore?: Date;
  /** Defaults to NotBefore + 87600h for a CA, NotBefore + 8760h otherwise, as kubeadm. */
  notAfter?: Date;
  /** Random in [1, 2^63-1) unless given (tests). */
  serialNumber?: bigint;
}

/** The issuer of a new certificate: a CA certificate and its private key. */
export interface Issuer {
  cert: Certificate;
  key: KeyObject;
}

/** kubeadm's RemoveDuplicateAltNames: DNS names sorted and unique, IPs unique in first-seen order. */
export function removeDuplicateAltNames(alt: AltNames): AltNames {
  const seen = new Set<string>();
  const ips: string[] = [];
  for (const ip of alt.ips) {
    const canonical = formatIP(ip);
    if (!seen.has(canonical)) {
      seen.add(canonical);
      ips.push(canonical);
    }
  }
  // Go's sets.List sorts by byte value, as a plain JS sort of ASCII strings does.
  return { dnsNames: [...new Set(alt.dnsNames)].sort(), ips };
}

/** Uniform in [1, 2^63-1), as kubeadm's cryptorand.Int(MaxInt64-1) + 1. */
export function randomSerialNumber(): bigint {
  const limit = (1n << 63n) - 2n;
  for (;;) {
    const r = randomBytes(8).readBigUInt64BE() >> 1n;
    if (r < limit) return r + 1n;
  }
}

/** A parsed certificate with the fields kubeforge inspects, plus its raw encodings. */
export class Certificate {
  readonly der: Buffer;
  readonly commonName: string;
  readonly organizations: string[];
  /** Lower-case hex, without leading zero bytes. */
  readonly serialNumber: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** BasicConstraints cA. */
  readonly isCA: boolean;
  /** KeyUsage bits (x509.KeyUsageFlags), 0 when the extension is absent. */
  readonly keyUsage: number;
  /** ExtendedKeyUsage OIDs; undefined when the extension is absent. */
  readonly extKeyUsages: string[] | undefined;
  readonly dnsNames: string[];
  readonly ipAddresses: string[];
  /** Hex, when present. */
  readonly subjectKeyId: string | undefined;
  readonly authorityKeyId: string | undefined;
  /** DER of the subject Name (Go's RawSubject). */
  readonly rawSubject: Buffer;
  readonly rawIssuer: Buffer;
  /** DER of SubjectPublicKeyInfo (Go's RawSubjectPublicKeyInfo). */
  readonly rawSubjectPublicKeyInfo: Buffer;
  private key: KeyObject | undefined;
  private native: NodeX509 | undefined;

  private constructor(cert: x509.X509Certificate) {
    this.der = Buffer.from(cert.rawData);
    const parts = certificateParts(this.der);
    this.rawSubject = parts.subject;
    this.rawIssuer = parts.issuer;
    this.rawSubjectPublicKeyInfo = parts.subjectPublicKeyInfo;
    this.commonName = cert.subjectName.getField("CN")[0] ?? "";
    this.organizations = cert.subjectName.getField("O");
    this.serialNumber = cert.serialNumber.toLowerCase().replace(/^(00)+(?=.)/, "");
    this.notBefore = cert.notBefore;
    this.notAfter = cert.notAfter;
    this.isCA = cert.getExtension(x509.BasicConstraintsExtension)?.ca ?? false;
    this.keyUsage = cert.getExtension(x509.KeyUsagesExtension)?.usages ?? 0;
    this.extKeyUsages = cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages.map(String);
    const names = cert.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [];
    this.dnsNames = names.filter((n) => n.type === "dns").map((n) => n.value);
    this.ipAddresses = names
      .filter((n) => n.type === "ip" && parseIP(n.value) !== undefined)
      .map((n) => formatIP(n.value));
    this.subjectKeyId = cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId.toLowerCase();
    this.authorityKeyId = cert
      .getExtension(x509.AuthorityKeyIdentifierExtension)
      ?.keyId?.toLowerCase();
  }

  static fromDER(der: Uint8Array | ArrayBuffer): Certificate {
    return new Certificate(new x509.X509Certificate(der));
  }

  /** From a certificate @peculiar/x509 just built (already parsed; no second parse). */
  static fromX509(cert: x509.X509Certificate): Certificate {
    return new Certificate(cert);
  }

  /** PEM "CERTIFICATE", as kubeadm's EncodeCertPEM. */
  get pem(): string {
    return pemEncode("CERTIFICATE", this.der);
  }

  publicKey(): KeyObject {
    this.key ??= createPublicKey({
      key: this.rawSubjectPublicKeyInfo,
      format: "der",
      type: "spki",
    });
    return this.key;
  }

  /**
   * Go's CheckSignatureFrom for a direct parent: `ca` is a CA, its subject is this
   * certificate's issuer, and its key verifies this certificate's signature (natively).
   */
  isSignedBy(ca: Certificate): boolean {
    if (!ca.isCA || !this.rawIssuer.equals(ca.rawSubject)) return false;
    this.native ??= new NodeX509(this.der);
    try {
      return this.native.verify(ca.publicKey());
    } catch {
      return false;
    }
  }

  /** x509.Certificate.VerifyHostname for a DNS name (SAN only, wildcards in the first label). */
  coversDNSName(name: string): boolean {
    const candidate = name.toLowerCase().replace(/\.$/, "");
    const patternInput = candidate.includes("*");
    return this.dnsNames.some((san) => {
      const pattern = san.toLowerCase().replace(/\.$/, "");
      if (patternInput) return pattern === candidate;
      const p = pattern.split(".");
      const h = candidate.split(".");
      return (
        p.length === h.length && p.every((part, i) => (i === 0 && part === "*") || part === h[i])
      );
    });
  }

  /** x509.Certificate.VerifyHostname for an IP address. */
  coversIP(ip: string): boolean {
    const canonical = formatIP(ip.replace(/^\[(.*)\]$/, "$1"));
    return this.ipAddresses.includes(canonical);
  }

  /** True when the certificate may be used for `usage` (no EKU extension allows any usage). */
  allowsExtKeyUsage(usage: ExtKeyUsage): boolean {
    if (this.extKeyUsages === undefined) return true;
    return (
      this.extKeyUsages.includes(EXT_KEY_USAGE_OIDS[usage]) ||
      this.extKeyUsages.includes(ANY_EXT_KEY_USAGE_OID)
    );
  }
}

/** Every certificate in a PEM file, first one first; `file` names the file in errors. */
export function parseCertificatesPEM(pem: string | Uint8Array, file: string): Certificate[] {
  const blocks = pemDecodeAll(pem).filter((b) => b.type === "CERTIFICATE");
  if (blocks.length === 0) throw new Error(`${file} does not contain a PEM certificate`);
  return blocks.map((b) => {
    try {
      return Certificate.fromDER(b.der);
    } catch (e) {
      throw new Error(
        `${file} contains a certificate that cannot be parsed: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  });
}

// ---- building ----------------------------------------------------------------------------

interface Signer {
  key: webcrypto.CryptoKey;
  alg: { name: string; hash: string };
}

const signers = new WeakMap<KeyObject, Signer>();

/** Go's default signature algorithm for the key: SHA-256 with RSA; ECDSA with the curve's hash. */
function signer(key: KeyObject): Signer {
  let cached = signers.get(key);
  if (cached) return cached;
  if (key.asymmetricKeyType === "rsa") {
    const alg = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    cached = { key: key.toCryptoKey(alg, false, ["sign"]), alg };
  } else if (key.asymmetricKeyType === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const params =
      curve === "prime256v1"
        ? { namedCurve: "P-256", hash: "SHA-256" }
        : curve === "secp384r1"
          ? { namedCurve: "P-384", hash: "SHA-384" }
          : curve === "secp521r1"
            ? { namedCurve: "P-521", hash: "SHA-512" }
            : undefined;
    if (!params) throw new Error(`cannot sign with an ECDSA key on curve ${String(curve)}`);
    cached = {
      key: key.toCryptoKey({ name: "ECDSA", namedCurve: params.namedCurve }, false, ["sign"]),
      alg: { name: "ECDSA", hash: params.hash },
    };
  } else {
    throw new Error(`cannot sign with a ${String(key.asymmetricKeyType)} key; only RSA and ECDSA`);
  }
  signers.set(key, cached);
  return cached;
}

/** Go's asn1 string choice: PrintableString when every character allows it, else UTF8String. */
function nameValue(value: string): x509.JsonAttributeObject {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value)
    ? { printableString: value }
    : { utf8String: value };
}

/** pkix.Name.ToRDNSequence order for the fields kubeadm sets: O, then CN. */
function subjectName(commonName: string, organization: string[]): x509.JsonNameParams {
  const rdns: x509.JsonNameParams = [];
  if (organization.length > 0) {
    // Go puts all values of one attribute in one RDN, a DER SET OF sorted by encoding.
    const sorted = [...organization].sort((a, b) => Buffer.compare(attrDER(a), attrDER(b)));
    rdns.push({ [OID_ORGANIZATION]: sorted.map(nameValue) });
  }
  if (commonName) rdns.push({ [OID_COMMON_NAME]: [nameValue(commonName)] });
  return rdns;
}

function attrDER(value: string): Buffer {
  const v = Buffer.from(value, "utf8");
  const tag = "printableString" in nameValue(value) ? 0x13 : 0x0c;
  return Buffer.concat([Buffer.from([0x30, 7 + v.length, 6, 3, 0x55, 4, 10, tag, v.length]), v]);
}

function serialHex(serial: bigint): string {
  const hex = serial.toString(16);
  return hex.length % 2 ? `0${hex}` : hex;
}

/** Go 1.25's default SubjectKeyId: the first 160 bits of SHA-256 over the public key bits. */
function subjectKeyIdFor(spki: Buffer): string {
  return createHash("sha256")
    .update(subjectPublicKeyBits(spki))
    .digest()
    .subarray(0, 20)
    .toString("hex");
}

interface BuildParams {
  tmpl: CertificateTemplate;
  isCA: boolean;
  notBefore: Date;
  notAfter: Date;
  dnsNames: string[];
  ips: string[];
  spki: Buffer;
  issuerName: x509.JsonNameParams | Buffer;
  issuerSubjectKeyId: string | undefined;
  signingKey: KeyObject;
}

async function build(p: BuildParams): Promise<Certificate> {
  const subject = subjectName(p.tmpl.commonName, p.tmpl.organization ?? []);
  const subjectRaw = Buffer.from(new x509.Name(subject).toArrayBuffer());
  const selfIssued = Buffer.isBuffer(p.issuerName) ? subjectRaw.equals(p.issuerName) : true;

  let keyUsage = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment;
  if (p.isCA) keyUsage |= x509.KeyUsageFlags.keyCertSign;
  const extensions: x509.Extension[] = [new x509.KeyUsagesExtension(keyUsage, true)];
  const usages = p.tmpl.extKeyUsages ?? [];
  if (usages.length > 0) {
    extensions.push(
      new x509.ExtendedKeyUsageExtension(
        usages.map((u) => EXT_KEY_USAGE_OIDS[u]),
        false,
      ),
    );
  }
  extensions.push(new x509.BasicConstraintsExtension(p.isCA, undefined, true));
  if (p.isCA)
    extensions.push(new x509.SubjectKeyIdentifierExtension(subjectKeyIdFor(p.spki), false));
  if (!selfIssued && p.issuerSubjectKeyId) {
    extensions.push(new x509.AuthorityKeyIdentifierExtension(p.issuerSubjectKeyId, false));
  }
  if (p.dnsNames.length > 0 || p.ips.length > 0) {
    const names: x509.JsonGeneralNames = [
      ...p.dnsNames.map((value) => ({ type: "dns" as const, value })),
      ...p.ips.map((value) => ({ type: "ip" as const, value })),
    ];
    // RFC 5280 §4.2.1.6 (as Go): critical only when the subject is empty.
    extensions.push(new x509.SubjectAlternativeNameExtension(names, subject.length === 0));
  }

  const { key, alg } = signer(p.signingKey);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialHex(p.tmpl.serialNumber ?? randomSerialNumber()),
    subject: new x509.Name(subject),
    issuer: new x509.Name(p.issuerName),
    notBefore: p.notBefore,
    notAfter: p.notAfter,
    publicKey: p.spki,
    signingKey: key,
    signingAlgorithm: alg,
    extensions,
  });
  return Certificate.fromX509(cert);
}

/** kubeadm's NewSelfSignedCACert: a CA with DNS SAN = [CN], valid 87600h unless NotAfter is set. */
export async function newSelfSignedCACert(
  tmpl: CertificateTemplate & { notBefore: Date },
  keys: KeyPair,
): Promise<Certificate> {
  const notBefore = tmpl.notBefore;
  const notAfter = tmpl.notAfter ?? new Date(notBefore.getTime() + CA_CERTIFICATE_VALIDITY_MS);
  const subject = subjectName(tmpl.commonName, tmpl.organization ?? []);
  return build({
    tmpl,
    isCA: true,
    notBefore,
    notAfter,
    dnsNames: [tmpl.commonName],
    ips: [],
    spki: publicKeyDER(keys.publicKey),
    issuerName: subject,
    issuerSubjectKeyId: undefined,
    signingKey: keys.privateKey,
  });
}

/**
 * kubeadm's NewSignedCert: a certificate for `publicKey` signed by `issuer`. NotBefore
 * defaults to the CA's NotBefore and NotAfter to NotBefore + 8760h, as kubeadm.
 */
export async function newSignedCert(
  tmpl: CertificateTemplate,
  publicKey: KeyObject,
  issuer: Issuer,
  isCA = false,
): Promise<Certificate> {
  if (!tmpl.commonName) throw new Error("a certificate needs a CommonName");
  const alt = removeDuplicateAltNames(tmpl.altNames ?? { dnsNames: [], ips: [] });
  const notBefore = tmpl.notBefore ?? issuer.cert.notBefore;
  const notAfter = tmpl.notAfter ?? new Date(notBefore.getTime() + CERTIFICATE_VALIDITY_MS);
  return build({
    tmpl,
    isCA,
    notBefore,
    notAfter,
    dnsNames: alt.dnsNames,
    ips: alt.ips,
    spki: publicKeyDER(publicKey),
    issuerName: issuer.cert.rawSubject,
    issuerSubjectKeyId: issuer.cert.subjectKeyId,
    signingKey: issuer.key,
  });
}
