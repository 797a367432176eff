// SIMULATION (test double). X.509 pieces the simulated controllers need: parsing a PKCS#10
// request as Go's x509.ParseCertificateRequest does, and signing it with the cluster CA as
// kube-controller-manager's local signer does.
// k8s: pkg/apis/certificates/helpers.go ParseCSR ("PEM block type must be CERTIFICATE REQUEST"),
// pkg/controller/certificates/authority/authority.go (128-bit random serial, subject and SANs
// copied from the request, CSR extensions dropped), authority/policies.go (key usages, backdate,
// NotAfter capped at the CA's, BasicConstraints CA=false).
import "reflect-metadata";
import { createPrivateKey, randomBytes, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export interface ParsedCSR {
  csr: x509.Pkcs10CertificateRequest;
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
}

function pemBlocks(pem: string): { type: string; der: Buffer }[] {
  const out: { type: string; der: Buffer }[] = [];
  const re = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(pem)))
    out.push({ type: m[1]!, der: Buffer.from(m[2]!.replace(/\s+/g, ""), "base64") });
  return out;
}

export function parseCSR(pem: string): ParsedCSR {
  const block = pemBlocks(pem)[0];
  if (!block || block.type !== "CERTIFICATE REQUEST") {
    throw new Error("PEM block type must be CERTIFICATE REQUEST");
  }
  const csr = new x509.Pkcs10CertificateRequest(block.der);
  const rawSAN = csr.getExtension("2.5.29.17");
  const names = rawSAN ? new x509.SubjectAlternativeNameExtension(rawSAN.rawData).names.items : [];
  const of = (t: string) => names.filter((n) => n.type === t).map((n) => n.value);
  return {
    csr,
    commonName: csr.subjectName.getField("CN")[0] ?? "",
    organizations: csr.subjectName.getField("O"),
    dnsNames: of("dns"),
    ipAddresses: of("ip"),
    emailAddresses: of("email"),
    uris: of("url"),
  };
}

/** Go's pem.EncodeToMemory: 64-column base64 and a final newline. */
export function toPEM(type: string, der: ArrayBuffer | Buffer): string {
  const b64 = Buffer.from(der as ArrayBuffer).toString("base64");
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${type}-----\n${lines.join("\n")}\n-----END ${type}-----\n`;
}

export interface LoadedCA {
  cert: x509.X509Certificate;
  key: webcrypto.CryptoKey;
  signingAlgorithm: { name: string; hash: string };
}

/** Loads a CA certificate and its key (PKCS#1, SEC 1 or PKCS#8 PEM, as kubeadm may write). */
export function loadCA(certPem: string, keyPem: string): Promise<LoadedCA> {
  const certBlock = pemBlocks(certPem).find((b) => b.type === "CERTIFICATE");
  if (!certBlock)
    return Promise.reject(
      new Error("no CERTIFICATE block in the cluster signing certificate file"),
    );
  const cert = new x509.X509Certificate(certBlock.der);
  const nodeKey = createPrivateKey(keyPem);
  if (nodeKey.asymmetricKeyType === "rsa") {
    const alg = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    return Promise.resolve({
      cert,
      key: nodeKey.toCryptoKey(alg, false, ["sign"]),
      signingAlgorithm: alg,
    });
  }
  if (nodeKey.asymmetricKeyType === "ec") {
    // Go signs with the hash matching the curve (crypto/x509 signingParamsForKey).
    const curve = nodeKey.asymmetricKeyDetails?.namedCurve;
    const [namedCurve, hash] =
      curve === "secp384r1"
        ? ["P-384", "SHA-384"]
        : curve === "secp521r1"
          ? ["P-521", "SHA-512"]
          : ["P-256", "SHA-256"];
    const key = nodeKey.toCryptoKey({ name: "ECDSA", namedCurve }, false, ["sign"]);
    return Promise.resolve({ cert, key, signingAlgorithm: { name: "ECDSA", hash } });
  }
  return Promise.reject(
    new Error(`unsupported cluster signing key type ${String(nodeKey.asymmetricKeyType)}`),
  );
}

// k8s: pkg/controller/certificates/authority/policies.go keyUsageDict / extKeyUsageDict
const KEY_USAGES: Record<string, number> = {
  signing: x509.KeyUsageFlags.digitalSignature,
  "digital signature": x509.KeyUsageFlags.digitalSignature,
  "content commitment": x509.KeyUsageFlags.nonRepudiation,
  "key encipherment": x509.KeyUsageFlags.keyEncipherment,
  "key agreement": x509.KeyUsageFlags.keyAgreement,
  "data encipherment": x509.KeyUsageFlags.dataEncipherment,
  "cert sign": x509.KeyUsageFlags.keyCertSign,
  "crl sign": x509.KeyUsageFlags.cRLSign,
  "encipher only": x509.KeyUsageFlags.encipherOnly,
  "decipher only": x509.KeyUsageFlags.decipherOnly,
};
// Sorted by Go's ExtKeyUsage enum value, as sortedExtKeyUsage does.
const EXT_KEY_USAGES: [string, number, string][] = [
  ["any", 0, "2.5.29.37.0"],
  ["server auth", 1, "1.3.6.1.5.5.7.3.1"],
  ["client auth", 2, "1.3.6.1.5.5.7.3.2"],
  ["code signing", 3, "1.3.6.1.5.5.7.3.3"],
  ["email protection", 4, "1.3.6.1.5.5.7.3.4"],
  ["s/mime", 4, "1.3.6.1.5.5.7.3.4"],
  ["ipsec end system", 5, "1.3.6.1.5.5.7.3.5"],
  ["ipsec tunnel", 6, "1.3.6.1.5.5.7.3.6"],
  ["ipsec user", 7, "1.3.6.1.5.5.7.3.7"],
  ["timestamping", 8, "1.3.6.1.5.5.7.3.8"],
  ["ocsp signing", 9, "1.3.6.1.5.5.7.3.9"],
  ["microsoft sgc", 10, "1.3.6.1.4.1.311.10.3.3"],
  ["netscape sgc", 11, "2.16.840.1.113730.4.1"],
];

export interface SignOptions {
  ca: LoadedCA;
  request: ParsedCSR;
  usages: string[];
  /** Certificate lifetime in milliseconds. */
  ttlMs: number;
  now: Date;
}

/** Go's pkix.Name.ToRDNSequence order for the attributes a CSR subject carries. */
function goOrderedSubject(name: x509.Name): x509.JsonName {
  const order = ["C", "ST", "L", "street", "postalCode", "O", "OU", "CN", "serialNumber"];
  const oids: Record<string, string> = {
    C: "2.5.4.6",
    ST: "2.5.4.8",
    L: "2.5.4.7",
    street: "2.5.4.9",
    postalCode: "2.5.4.17",
    O: "2.5.4.10",
    OU: "2.5.4.11",
    CN: "2.5.4.3",
    serialNumber: "2.5.4.5",
  };
  const out: x509.JsonName = [];
  for (const short of order) {
    const values = name.getField(oids[short]!);
    if (values.length === 0) continue;
    if (short === "CN") out.push({ [oids[short]!]: [values[0]!] });
    else out.push({ [oids[short]!]: values });
  }
  return out;
}

export async function signCSR(opts: SignOptions): Promise<string> {
  const { ca, request, usages, ttlMs, now } = opts;
  if (!(await request.csr.verify())) {
    throw new Error(
      "unable to verify certificate request signature: x509: ECDSA verification failure",
    );
  }
  if (now.getTime() >= ca.cert.notAfter.getTime()) {
    throw new Error(
      `refusing to sign a certificate that expired in the past: NotAfter=${ca.cert.notAfter.toISOString()}`,
    );
  }
  let keyUsage = 0;
  const ekus = new Map<number, string>();
  const unrecognized: string[] = [];
  for (const u of usages) {
    if (u in KEY_USAGES) keyUsage |= KEY_USAGES[u]!;
    else {
      const e = EXT_KEY_USAGES.find(([n]) => n === u);
      if (e) ekus.set(e[1], e[2]);
      else unrecognized.push(u);
    }
  }
  if (unrecognized.length > 0)
    throw new Error(`unrecognized usage values: ${JSON.stringify(unrecognized)}`);
  // k8s: authority/policies.go PermissiveSigningPolicy.apply — NotBefore = now - 5m backdate;
  // NotAfter = now + TTL - backdate, or now + TTL for short (< 8h) lifetimes; never past the CA.
  const backdateMs = 5 * 60_000;
  const notBefore = new Date(now.getTime() - backdateMs);
  let notAfter = new Date(now.getTime() + ttlMs - (ttlMs < 8 * 3600_000 ? 0 : backdateMs));
  if (notAfter.getTime() >= ca.cert.notAfter.getTime()) notAfter = ca.cert.notAfter;
  if (notBefore.getTime() >= ca.cert.notAfter.getTime()) {
    throw new Error(`the signer has expired: NotAfter=${ca.cert.notAfter.toISOString()}`);
  }

  const extensions: x509.Extension[] = [];
  if (keyUsage !== 0) extensions.push(new x509.KeyUsagesExtension(keyUsage, true));
  if (ekus.size > 0) {
    const sorted = [...ekus.entries()].sort((a, b) => a[0] - b[0]).map(([, oid]) => oid);
    extensions.push(new x509.ExtendedKeyUsageExtension(sorted, false));
  }
  extensions.push(new x509.BasicConstraintsExtension(false, undefined, true));
  const caSKI = ca.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  if (caSKI) extensions.push(new x509.AuthorityKeyIdentifierExtension(caSKI.keyId));
  const sans = [
    ...request.dnsNames.map((v) => ({ type: "dns" as const, value: v })),
    ...request.emailAddresses.map((v) => ({ type: "email" as const, value: v })),
    ...request.ipAddresses.map((v) => ({ type: "ip" as const, value: v })),
    ...request.uris.map((v) => ({ type: "url" as const, value: v })),
  ];
  if (sans.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(sans));

  // 128-bit random serial, positive. k8s: authority/authority.go serialNumberLimit
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString("hex"),
    subject: goOrderedSubject(request.csr.subjectName),
    issuer: ca.cert.subjectName,
    notBefore,
    notAfter,
    publicKey: request.csr.publicKey,
    signingKey: ca.key,
    signingAlgorithm: ca.signingAlgorithm,
    extensions,
  });
  return toPEM("CERTIFICATE", cert.rawData);
}
