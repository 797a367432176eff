import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { createPrivateKey, createPublicKey, webcrypto, type KeyObject } from "node:crypto";

type CryptoKeyPair = webcrypto.CryptoKeyPair;

// SIMULATION (test double). Keys, CSRs and certificates as the kubelet's Go libraries make them,
// through @peculiar/x509 over Node's native WebCrypto.

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const subtle = webcrypto.subtle;
const ECDSA_P256 = { name: "ECDSA", namedCurve: "P-256" } as const;

export interface GeneratedKey {
  /** "EC PRIVATE KEY" (SEC1) PEM, as keyutil.MarshalPrivateKeyToPEM writes an ECDSA key. */
  pem: string;
  key: KeyObject;
}

/**
 * A new ECDSA P-256 key: what the certificate manager generates for every rotation
 * (certificate_manager.go generateCSR) and keyutil.LoadOrGenerateKeyFile for bootstrap.
 */
export function generateEcKey(): Promise<GeneratedKey> {
  return subtle.generateKey(ECDSA_P256, true, ["sign", "verify"]).then(async (pair) => {
    const pkcs8 = Buffer.from(await subtle.exportKey("pkcs8", pair.privateKey));
    const key = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
    return { key, pem: key.export({ type: "sec1", format: "pem" }).toString() };
  });
}

async function cryptoPair(key: KeyObject): Promise<CryptoKeyPair> {
  const pkcs8 = key.export({ type: "pkcs8", format: "der" });
  const spki = createPublicKey(key).export({ type: "spki", format: "der" });
  const privateKey = await subtle.importKey("pkcs8", pkcs8, ECDSA_P256, false, ["sign"]);
  const publicKey = await subtle.importKey("spki", spki, ECDSA_P256, true, ["verify"]);
  return { privateKey, publicKey };
}

/**
 * A PKCS#10 request for the node's client certificate: subject O=system:nodes,
 * CN=system:node:<name> (Go's pkix.Name puts O before CN), no extensions
 * (certutil.MakeCSR / MakeCSRFromTemplate with only a subject).
 */
export async function nodeClientCSR(key: KeyObject, nodeName: string): Promise<string> {
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ O: ["system:nodes"] }, { CN: [`system:node:${nodeName}`] }],
    keys: await cryptoPair(key),
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  return csr.toString("pem");
}

export interface CertInfo {
  commonName: string;
  organizations: string[];
  notBefore: Date;
  notAfter: Date;
  pem: string;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----\n?/g;

/** The PEM blocks of `text`, by type, in order. */
export function pemBlocks(text: string): { type: string; pem: string }[] {
  return [...text.matchAll(PEM_BLOCK)].map((m) => ({
    type: m[1]!,
    pem: m[0].endsWith("\n") ? m[0] : `${m[0]}\n`,
  }));
}

export function certInfo(pem: string): CertInfo {
  const cert = new x509.X509Certificate(pem);
  const field = (oid: string) => cert.subjectName.getField(oid);
  return {
    commonName: field("CN")[0] ?? "",
    organizations: field("O"),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    pem,
  };
}

/**
 * A certificate/key pair file as client-go's file store reads it (tls.LoadX509KeyPair on the
 * same file twice): the CERTIFICATE blocks, then the key. Undefined when it holds no pair.
 */
export function parsePair(
  text: string,
): { certPem: string; keyPem: string; leaf: CertInfo } | undefined {
  const blocks = pemBlocks(text);
  const certs = blocks.filter((b) => b.type === "CERTIFICATE");
  const key = blocks.find((b) => b.type.endsWith("PRIVATE KEY"));
  if (certs.length === 0 || !key) return undefined;
  try {
    return {
      certPem: certs.map((c) => c.pem).join(""),
      keyPem: key.pem,
      leaf: certInfo(certs[0]!.pem),
    };
  } catch {
    return undefined;
  }
}

/**
 * A self-signed serving certificate for a component's secure port when no --tls-cert-file is
 * given: k8s.io/client-go/util/cert GenerateSelfSignedCertKey makes a CA "<host>-ca@<unix>" and
 * a leaf "<host>@<unix>" for the host, its IPs and names, valid 1 year. (RSA 2048 there; ECDSA
 * P-256 here, which no health check can tell apart since they skip verification.)
 */
export async function selfSignedServingCert(
  host: string,
  ips: string[],
  dnsNames: string[],
): Promise<{ cert: string; key: string }> {
  const now = new Date();
  const stamp = Math.floor(now.getTime() / 1000);
  const notAfter = new Date(now.getTime() + 365 * 24 * 3600 * 1000);
  const caKeys = await subtle.generateKey(ECDSA_P256, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${host}-ca@${stamp}`,
    keys: caKeys,
    notBefore: now,
    notAfter,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign |
          x509.KeyUsageFlags.digitalSignature |
          x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
    ],
  });
  const leafKeys = await subtle.generateKey(ECDSA_P256, true, ["sign", "verify"]);
  const leaf = await x509.X509CertificateGenerator.create({
    subject: `CN=${host}@${stamp}`,
    issuer: ca.subject,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    notBefore: now,
    notAfter,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions: [
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.SubjectAlternativeNameExtension([
        ...dnsNames.map((value) => ({ type: "dns" as const, value })),
        ...ips.map((value) => ({ type: "ip" as const, value })),
      ]),
    ],
  });
  const pkcs8 = Buffer.from(await subtle.exportKey("pkcs8", leafKeys.privateKey));
  const key = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" })
    .export({ type: "sec1", format: "pem" })
    .toString();
  // The serving chain: leaf then its CA, as certutil writes it.
  return { cert: leaf.toString("pem") + "\n" + ca.toString("pem") + "\n", key };
}
