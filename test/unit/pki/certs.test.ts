import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  Certificate,
  newSelfSignedCACert,
  newSignedCert,
  parseCertificatesPEM,
  randomSerialNumber,
  removeDuplicateAltNames,
} from "../../../src/pki/certs.js";
import { childrenOf, readTLV, subjectPublicKeyBits } from "../../../src/pki/der.js";
import type { KeyPair } from "../../../src/pki/key-source.js";
import { x509 } from "../../../src/pki/x509-provider.js";

const HOUR = 3_600_000;

function ecKeys(curve: "P-256" | "P-384" = "P-256"): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: curve });
  return { privateKey, publicKey };
}

/** [type OID hex, string tag, value] for each attribute, RDN by RDN. */
function rdns(name: Buffer): [string, number, string][][] {
  const seq = readTLV(name, 0);
  return childrenOf(name, seq).map((set) =>
    childrenOf(name, set).map((atv) => {
      const [oid, value] = childrenOf(name, atv) as [
        ReturnType<typeof readTLV>,
        ReturnType<typeof readTLV>,
      ];
      return [
        name.subarray(oid.contentStart, oid.end).toString("hex"),
        value.tag,
        name.subarray(value.contentStart, value.end).toString("utf8"),
      ];
    }),
  );
}

function extensions(cert: Certificate): { oid: string; critical: boolean; value: string }[] {
  return new x509.X509Certificate(cert.der).extensions.map((e) => ({
    oid: e.type,
    critical: e.critical,
    value: Buffer.from(e.value).toString("hex"),
  }));
}

/** The outer signatureAlgorithm AlgorithmIdentifier, hex. */
function signatureAlgorithm(cert: Certificate): string {
  const outer = readTLV(cert.der, 0);
  const alg = childrenOf(cert.der, outer)[1]!;
  return cert.der.subarray(alg.start, alg.end).toString("hex");
}

const OID = { CN: "550403", O: "55040a" };
const PRINTABLE = 0x13;
const UTF8 = 0x0c;
const KU = "2.5.29.15";
const EKU = "2.5.29.37";
const BC = "2.5.29.19";
const SKI = "2.5.29.14";
const AKI = "2.5.29.35";
const SAN = "2.5.29.17";

describe("newSelfSignedCACert (kubeadm NewSelfSignedCACert)", () => {
  const keys = ecKeys();
  const notBefore = new Date("2026-03-01T10:00:00.750Z");

  it("builds the CA template as Go does", async () => {
    const ca = await newSelfSignedCACert({ commonName: "kubernetes", notBefore }, keys);
    expect(rdns(ca.rawSubject)).toEqual([[[OID.CN, PRINTABLE, "kubernetes"]]]);
    expect(ca.rawIssuer).toEqual(ca.rawSubject);
    expect(ca.isCA).toBe(true);
    expect(ca.dnsNames).toEqual(["kubernetes"]);
    expect(ca.ipAddresses).toEqual([]);
    const expectedSKI = createHash("sha256")
      .update(subjectPublicKeyBits(ca.rawSubjectPublicKeyInfo))
      .digest()
      .subarray(0, 20)
      .toString("hex");
    expect(extensions(ca)).toEqual([
      // digitalSignature | keyEncipherment | keyCertSign, DER bit string with 2 unused bits
      { oid: KU, critical: true, value: "030202a4" },
      { oid: BC, critical: true, value: "30030101ff" },
      { oid: SKI, critical: false, value: `0414${expectedSKI}` },
      { oid: SAN, critical: false, value: "300c820a6b756265726e65746573" },
    ]);
    expect(ca.authorityKeyId).toBeUndefined();
    // Validity is encoded to the second, as Go truncates; default NotAfter is +87600h.
    expect(ca.notBefore.toISOString()).toBe("2026-03-01T10:00:00.000Z");
    expect(ca.notAfter.getTime()).toBe(
      new Date("2026-03-01T10:00:00.000Z").getTime() + 87_600 * HOUR,
    );
    expect(ca.isSignedBy(ca)).toBe(true);
  });

  it("uses the given NotAfter", async () => {
    const notAfter = new Date("2027-01-01T00:00:00Z");
    const ca = await newSelfSignedCACert({ commonName: "etcd-ca", notBefore, notAfter }, keys);
    expect(ca.notAfter).toEqual(notAfter);
  });

  it.each<[string, () => KeyPair, string]>([
    [
      "RSA: sha256WithRSAEncryption with NULL parameters",
      () => generateKeyPairSync("rsa", { modulusLength: 2048 }),
      "300d06092a864886f70d01010b0500",
    ],
    ["ECDSA P-256: ecdsa-with-SHA256", () => ecKeys("P-256"), "300a06082a8648ce3d040302"],
    ["ECDSA P-384: ecdsa-with-SHA384", () => ecKeys("P-384"), "300a06082a8648ce3d040303"],
  ])("signs with Go's default algorithm for the key — %s", async (_name, make, algorithm) => {
    const ca = await newSelfSignedCACert({ commonName: "kubernetes", notBefore }, make());
    expect(signatureAlgorithm(ca)).toBe(algorithm);
    expect(ca.isSignedBy(ca)).toBe(true);
  });
});

describe("newSignedCert (kubeadm NewSignedCert)", async () => {
  const caKeys = ecKeys();
  const caNotBefore = new Date("2026-03-01T09:55:00Z");
  const ca = await newSelfSignedCACert(
    { commonName: "kubernetes", notBefore: caNotBefore },
    caKeys,
  );
  const issuer = { cert: ca, key: caKeys.privateKey };
  const leafKey: KeyObject = ecKeys().publicKey;

  it("builds the leaf template as Go does", async () => {
    const cert = await newSignedCert(
      {
        commonName: "kube-apiserver-kubelet-client",
        organization: ["kubeadm:cluster-admins"],
        extKeyUsages: ["serverAuth", "clientAuth"],
        altNames: {
          dnsNames: ["kubernetes.default", "cp-1", "kubernetes", "cp-1"],
          ips: ["10.96.0.1", "fd00::0:1", "192.168.1.5", "10.96.0.1", "fd00::1"],
        },
      },
      leafKey,
      issuer,
    );
    // O before CN, one attribute per RDN, PrintableString (':' is printable).
    expect(rdns(cert.rawSubject)).toEqual([
      [[OID.O, PRINTABLE, "kubeadm:cluster-admins"]],
      [[OID.CN, PRINTABLE, "kube-apiserver-kubelet-client"]],
    ]);
    expect(cert.rawIssuer).toEqual(ca.rawSubject);
    const exts = extensions(cert);
    expect(exts.map((e) => [e.oid, e.critical])).toEqual([
      [KU, true],
      [EKU, false],
      [BC, true],
      [AKI, false],
      [SAN, false],
    ]);
    expect(exts[0]!.value).toBe("030205a0"); // digitalSignature | keyEncipherment
    expect(exts[1]!.value).toBe("301406082b0601050507030106082b06010505070302");
    expect(exts[2]!.value).toBe("3000"); // CA:FALSE, cA omitted as DER demands
    expect(exts[3]!.value).toBe(`30168014${ca.subjectKeyId}`);
    expect(cert.subjectKeyId).toBeUndefined();
    // DNS names sorted and unique; IPs unique in first-seen order.
    expect(cert.dnsNames).toEqual(["cp-1", "kubernetes", "kubernetes.default"]);
    expect(cert.ipAddresses).toEqual(["10.96.0.1", "fd00::1", "192.168.1.5"]);
    // Defaults: NotBefore = CA NotBefore, NotAfter = NotBefore + 8760h.
    expect(cert.notBefore).toEqual(caNotBefore);
    expect(cert.notAfter.getTime()).toBe(caNotBefore.getTime() + 8760 * HOUR);
    expect(cert.isSignedBy(ca)).toBe(true);
    expect(cert.isCA).toBe(false);
  });

  it("omits SAN and EKU extensions when there are none", async () => {
    const cert = await newSignedCert({ commonName: "system:kube-scheduler" }, leafKey, issuer);
    expect(extensions(cert).map((e) => e.oid)).toEqual([KU, BC, AKI]);
  });

  it("uses UTF8String when a value is not printable, as Go's asn1", async () => {
    const cert = await newSignedCert(
      { commonName: "node_1", organization: ["a&b"], extKeyUsages: ["clientAuth"] },
      leafKey,
      issuer,
    );
    expect(rdns(cert.rawSubject)).toEqual([[[OID.O, UTF8, "a&b"]], [[OID.CN, UTF8, "node_1"]]]);
  });

  it("puts several organizations in one RDN, as a DER SET OF", async () => {
    const cert = await newSignedCert(
      {
        commonName: "x",
        organization: ["system:masters", "b", "aa"],
        extKeyUsages: ["clientAuth"],
      },
      leafKey,
      issuer,
    );
    expect(rdns(cert.rawSubject)[0]!.map((a) => a[2])).toEqual(["b", "aa", "system:masters"]);
    expect(cert.organizations).toHaveLength(3);
  });

  it("uses the given dates and serial", async () => {
    const notBefore = new Date("2026-03-01T10:00:00Z");
    const notAfter = new Date("2026-03-02T10:00:00Z");
    const cert = await newSignedCert(
      { commonName: "x", notBefore, notAfter, serialNumber: 0x7fff_ffff_ffff_fffen },
      leafKey,
      issuer,
    );
    expect([cert.notBefore, cert.notAfter]).toEqual([notBefore, notAfter]);
    expect(cert.serialNumber).toBe("7ffffffffffffffe");
  });

  it("omits the AuthorityKeyId when the CA has no SubjectKeyId (Go)", async () => {
    const bare = Certificate.fromDER(
      (
        await x509.X509CertificateGenerator.createSelfSigned({
          name: "CN=old-ca",
          keys: {
            privateKey: caKeys.privateKey.toCryptoKey(
              { name: "ECDSA", namedCurve: "P-256" },
              false,
              ["sign"],
            ) as never,
            publicKey: caKeys.publicKey.toCryptoKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
              "verify",
            ]) as never,
          },
          signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
          extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
        })
      ).rawData,
    );
    const cert = await newSignedCert({ commonName: "x" }, leafKey, {
      cert: bare,
      key: caKeys.privateKey,
    });
    expect(extensions(cert).map((e) => e.oid)).not.toContain(AKI);
    expect(cert.isSignedBy(bare)).toBe(true);
  });

  it("refuses an empty CommonName", async () => {
    await expect(newSignedCert({ commonName: "" }, leafKey, issuer)).rejects.toThrow(/CommonName/);
  });

  it("is not signed by another CA with the same name", async () => {
    const other = await newSelfSignedCACert(
      { commonName: "kubernetes", notBefore: caNotBefore },
      ecKeys(),
    );
    const cert = await newSignedCert({ commonName: "x" }, leafKey, issuer);
    expect(cert.isSignedBy(other)).toBe(false);
    // A leaf is not a CA, whatever its key.
    expect(cert.isSignedBy(cert)).toBe(false);
  });
});

describe("Certificate checks", async () => {
  const keys = ecKeys();
  const ca = await newSelfSignedCACert({ commonName: "ca", notBefore: new Date() }, keys);
  const cert = await newSignedCert(
    {
      commonName: "x",
      extKeyUsages: ["serverAuth"],
      altNames: {
        dnsNames: ["*.apps.example.com", "api.example.com"],
        ips: ["10.0.0.1", "fd00::10"],
      },
    },
    ecKeys().publicKey,
    { cert: ca, key: keys.privateKey },
  );

  it.each([
    ["api.example.com", true],
    ["API.Example.com.", true],
    ["foo.apps.example.com", true],
    ["a.b.apps.example.com", false],
    ["apps.example.com", false],
    ["*.apps.example.com", true],
    ["*.example.com", false],
    ["other.example.com", false],
  ])("covers DNS name %s: %s (Go VerifyHostname)", (name, covered) => {
    expect(cert.coversDNSName(name)).toBe(covered);
  });

  it.each([
    ["10.0.0.1", true],
    ["fd00:0:0::10", true],
    ["[fd00::10]", true],
    ["10.0.0.2", false],
  ])("covers IP %s: %s", (ip, covered) => {
    expect(cert.coversIP(ip)).toBe(covered);
  });

  it("reports extended key usages", () => {
    expect(cert.allowsExtKeyUsage("serverAuth")).toBe(true);
    expect(cert.allowsExtKeyUsage("clientAuth")).toBe(false);
    // No EKU extension at all allows any usage, as Go.
    expect(ca.allowsExtKeyUsage("clientAuth")).toBe(true);
  });

  it("parses PEM bundles in order and names the file on errors", () => {
    const certs = parseCertificatesPEM(cert.pem + ca.pem, "/pki/bundle.crt");
    expect(certs.map((c) => c.commonName)).toEqual(["x", "ca"]);
    expect(certs[0]!.der).toEqual(cert.der);
    expect(() => parseCertificatesPEM("junk", "/pki/a.crt")).toThrow(
      /\/pki\/a.crt does not contain a PEM certificate/,
    );
    expect(() =>
      parseCertificatesPEM(
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        "/pki/b.crt",
      ),
    ).toThrow(/\/pki\/b.crt contains a certificate that cannot be parsed/);
  });
});

describe("randomSerialNumber", () => {
  it("stays in [1, 2^63-1) and varies", () => {
    const seen = new Set<bigint>();
    for (let i = 0; i < 2000; i++) {
      const s = randomSerialNumber();
      expect(s >= 1n && s < (1n << 63n) - 1n).toBe(true);
      seen.add(s);
    }
    expect(seen.size).toBe(2000);
  });
});

describe("removeDuplicateAltNames (kubeadm RemoveDuplicateAltNames)", () => {
  it.each([
    [
      { dnsNames: ["b", "a", "b"], ips: [] },
      { dnsNames: ["a", "b"], ips: [] },
    ],
    [
      { dnsNames: [], ips: ["10.0.0.2", "10.0.0.1", "10.0.0.2"] },
      { dnsNames: [], ips: ["10.0.0.2", "10.0.0.1"] },
    ],
    [
      { dnsNames: [], ips: ["FD00::1", "fd00:0:0:0:0:0:0:1", "::ffff:10.0.0.1", "10.0.0.1"] },
      { dnsNames: [], ips: ["fd00::1", "10.0.0.1"] },
    ],
    // Byte order: upper case before lower case, digits before letters.
    [
      { dnsNames: ["b", "B", "1"], ips: [] },
      { dnsNames: ["1", "B", "b"], ips: [] },
    ],
  ])("%j", (input, expected) => {
    expect(removeDuplicateAltNames(input)).toEqual(expected);
  });
});
