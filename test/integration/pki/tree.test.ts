import { execFileSync } from "node:child_process";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EncryptionAlgorithm } from "../../../src/config/types.js";
import { currentEntries, decodeData, parseKubeConfig } from "../../../src/kubeconfig/parse.js";
import { certsPhase } from "../../../src/phases/init/certs.js";
import { kubeconfigPhase } from "../../../src/phases/init/kubeconfig.js";
import {
  recordingLogger,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
} from "../../support/init-fixtures.js";
import { testInitConfig } from "../../unit/pki/fixtures.js";

// The whole init PKI checked by OpenSSL: chains, subjects, SANs, usages, dates, key formats
// and file modes, for the default RSA-2048 and for ECDSA-P256.

function openssl(...args: string[]): string {
  return execFileSync("openssl", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

const LEAVES: [string, string, string, string[]][] = [
  // file, CA file, subject, extended key usages
  ["apiserver", "ca", "CN = kube-apiserver", ["TLS Web Server Authentication"]],
  [
    "apiserver-kubelet-client",
    "ca",
    "O = kubeadm:cluster-admins, CN = kube-apiserver-kubelet-client",
    ["TLS Web Client Authentication"],
  ],
  [
    "front-proxy-client",
    "front-proxy-ca",
    "CN = front-proxy-client",
    ["TLS Web Client Authentication"],
  ],
  [
    "etcd/server",
    "etcd/ca",
    "CN = cp-1",
    ["TLS Web Server Authentication", "TLS Web Client Authentication"],
  ],
  [
    "etcd/peer",
    "etcd/ca",
    "CN = cp-1",
    ["TLS Web Server Authentication", "TLS Web Client Authentication"],
  ],
  [
    "etcd/healthcheck-client",
    "etcd/ca",
    "CN = kube-etcd-healthcheck-client",
    ["TLS Web Client Authentication"],
  ],
  [
    "apiserver-etcd-client",
    "etcd/ca",
    "CN = kube-apiserver-etcd-client",
    ["TLS Web Client Authentication"],
  ],
];

const CAS: [string, string][] = [
  ["ca", "kubernetes"],
  ["front-proxy-ca", "front-proxy-ca"],
  ["etcd/ca", "etcd-ca"],
];

describe.each<[EncryptionAlgorithm, string, RegExp]>([
  ["RSA-2048", "sha256WithRSAEncryption", /^-----BEGIN RSA PRIVATE KEY-----/],
  ["ECDSA-P256", "ecdsa-with-SHA256", /^-----BEGIN EC PRIVATE KEY-----/],
])("init PKI with %s, checked by openssl", (algorithm, signature, keyHeader) => {
  let root: string;
  let cleanup: () => Promise<void>;
  // Whole seconds, as certificates carry them.
  const now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const pki = (p: string) => join(root, "etc/kubernetes/pki", p);
  const k8s = (p: string) => join(root, "etc/kubernetes", p);

  beforeAll(async () => {
    const t = await tempRootHost();
    root = t.root;
    cleanup = t.cleanup;
    const cfg = testInitConfig({
      encryptionAlgorithm: algorithm,
      controlPlaneEndpoint: "api.example.com",
      certSANs: ["10.0.0.99", "extra.example.com"],
      serviceSubnet: "10.96.0.0/12,fd00:10:96::/112",
    });
    const data = testInitData(t.host, cfg, testRelease(), { now });
    const log = recordingLogger();
    await runPhase(certsPhase, data, log);
    await runPhase(kubeconfigPhase, data, log);
  });
  afterAll(async () => cleanup());

  it.each(LEAVES)("%s verifies against %s", (leaf, ca) => {
    expect(openssl("verify", "-CAfile", pki(`${ca}.crt`), pki(`${leaf}.crt`)).trim()).toBe(
      `${pki(`${leaf}.crt`)}: OK`,
    );
  });

  it.each(LEAVES)("%s is not accepted by the wrong CA", (leaf, ca) => {
    const wrong = ca === "ca" ? "etcd/ca" : "ca";
    expect(() => openssl("verify", "-CAfile", pki(`${wrong}.crt`), pki(`${leaf}.crt`))).toThrow();
  });

  it.each(LEAVES)(
    "%s has the subject, usages and dates kubeadm gives it",
    (leaf, _ca, subject, ekus) => {
      const file = pki(`${leaf}.crt`);
      expect(openssl("x509", "-in", file, "-noout", "-subject").trim()).toBe(`subject=${subject}`);
      const ext = openssl(
        "x509",
        "-in",
        file,
        "-noout",
        "-ext",
        "keyUsage,extendedKeyUsage,basicConstraints",
      );
      expect(ext).toContain(
        "X509v3 Key Usage: critical\n    Digital Signature, Key Encipherment\n",
      );
      expect(ext).toContain(`X509v3 Extended Key Usage: \n    ${ekus.join(", ")}\n`);
      expect(ext).toContain("X509v3 Basic Constraints: critical\n    CA:FALSE\n");
      const text = openssl("x509", "-in", file, "-noout", "-text");
      expect(text).toContain(`Signature Algorithm: ${signature}`);
      expect(text).toContain("X509v3 Authority Key Identifier");
      expect(text).not.toContain("X509v3 Subject Key Identifier");
      const dates = openssl(
        "x509",
        "-in",
        file,
        "-noout",
        "-startdate",
        "-enddate",
        "-dateopt",
        "iso_8601",
      );
      expect(dates).toContain(
        `notBefore=${new Date(now.getTime() - 300_000).toISOString().replace("T", " ").replace(".000", "")}`,
      );
      expect(dates).toContain(
        `notAfter=${new Date(now.getTime() + 8760 * 3_600_000).toISOString().replace("T", " ").replace(".000", "")}`,
      );
    },
  );

  it.each(CAS)("%s is a self-signed CA named %s, valid 10 years", (ca, cn) => {
    const file = pki(`${ca}.crt`);
    expect(openssl("verify", "-CAfile", file, file).trim()).toBe(`${file}: OK`);
    expect(openssl("x509", "-in", file, "-noout", "-subject", "-issuer")).toBe(
      `subject=CN = ${cn}\nissuer=CN = ${cn}\n`,
    );
    const ext = openssl(
      "x509",
      "-in",
      file,
      "-noout",
      "-ext",
      "keyUsage,basicConstraints,subjectAltName",
    );
    expect(ext).toContain(
      "X509v3 Key Usage: critical\n    Digital Signature, Key Encipherment, Certificate Sign\n",
    );
    expect(ext).toContain("X509v3 Basic Constraints: critical\n    CA:TRUE\n");
    expect(ext).toContain(`X509v3 Subject Alternative Name: \n    DNS:${cn}\n`);
    const dates = openssl("x509", "-in", file, "-noout", "-enddate", "-dateopt", "iso_8601");
    expect(dates).toContain(
      `notAfter=${new Date(now.getTime() + 87600 * 3_600_000).toISOString().replace("T", " ").replace(".000", "")}`,
    );
  });

  it("gives the apiserver and etcd serving certificates kubeadm's SANs", () => {
    const san = (f: string) =>
      openssl("x509", "-in", pki(f), "-noout", "-ext", "subjectAltName").split("\n")[1]!.trim();
    expect(san("apiserver.crt")).toBe(
      "DNS:api.example.com, DNS:cp-1, DNS:extra.example.com, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, IP Address:10.96.0.1, IP Address:192.168.10.5, IP Address:10.0.0.99",
    );
    const etcd =
      "DNS:cp-1, DNS:localhost, IP Address:192.168.10.5, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1";
    expect(san("etcd/server.crt")).toBe(etcd);
    expect(san("etcd/peer.crt")).toBe(etcd);
    // Client certificates carry no SANs.
    expect(
      openssl("x509", "-in", pki("apiserver-etcd-client.crt"), "-noout", "-text"),
    ).not.toContain("Alternative Name");
  });

  it("writes keys in kubeadm's formats, each matching its certificate, with kubeadm's modes", async () => {
    for (const base of [...LEAVES.map((l) => l[0]), ...CAS.map((c) => c[0])]) {
      const key = await readFile(pki(`${base}.key`), "utf8");
      expect(key).toMatch(keyHeader);
      const fromKey = openssl("pkey", "-in", pki(`${base}.key`), "-pubout");
      const fromCert = openssl("x509", "-in", pki(`${base}.crt`), "-noout", "-pubkey");
      expect(fromKey).toBe(fromCert);
      expect((await stat(pki(`${base}.key`))).mode & 0o777).toBe(0o600);
      expect((await stat(pki(`${base}.crt`))).mode & 0o777).toBe(0o644);
    }
    expect(openssl("pkey", "-pubin", "-in", pki("sa.pub"), "-noout", "-text_pub")).toContain(
      algorithm.startsWith("RSA") ? "2048 bit" : "256 bit",
    );
    expect(openssl("pkey", "-in", pki("sa.key"), "-pubout")).toBe(
      await readFile(pki("sa.pub"), "utf8"),
    );
    for (const f of ["sa.key", "sa.pub"]) expect((await stat(pki(f))).mode & 0o777).toBe(0o600);
    for (const d of ["", "etcd"]) expect((await stat(pki(d))).mode & 0o777).toBe(0o755);
  });

  it.each([
    ["admin.conf", "O = kubeadm:cluster-admins, CN = kubernetes-admin"],
    ["super-admin.conf", "O = system:masters, CN = kubernetes-super-admin"],
    ["kubelet.conf", "O = system:nodes, CN = system:node:cp-1"],
    ["controller-manager.conf", "CN = system:kube-controller-manager"],
    ["scheduler.conf", "CN = system:kube-scheduler"],
  ])("%s holds a client certificate for %s signed by the cluster CA", async (file, subject) => {
    expect((await stat(k8s(file))).mode & 0o777).toBe(0o600);
    const e = currentEntries(parseKubeConfig(await readFile(k8s(file)), file), file);
    const certFile = join(root, `${file}.crt`);
    await writeFile(certFile, decodeData(e.user?.["client-certificate-data"])!);
    expect(openssl("verify", "-CAfile", pki("ca.crt"), certFile).trim()).toBe(`${certFile}: OK`);
    expect(openssl("x509", "-in", certFile, "-noout", "-subject").trim()).toBe(
      `subject=${subject}`,
    );
    expect(openssl("x509", "-in", certFile, "-noout", "-ext", "extendedKeyUsage")).toContain(
      "TLS Web Client Authentication",
    );
    expect(decodeData(e.cluster["certificate-authority-data"])!.toString()).toBe(
      await readFile(pki("ca.crt"), "utf8"),
    );
  });
});

describe.each<[EncryptionAlgorithm, string, string, string]>([
  [
    "RSA-2048",
    "sha256WithRSAEncryption",
    "Public-Key: (2048 bit)",
    "Private-Key: (2048 bit, 2 primes)",
  ],
  [
    "RSA-3072",
    "sha256WithRSAEncryption",
    "Public-Key: (3072 bit)",
    "Private-Key: (3072 bit, 2 primes)",
  ],
  [
    "RSA-4096",
    "sha256WithRSAEncryption",
    "Public-Key: (4096 bit)",
    "Private-Key: (4096 bit, 2 primes)",
  ],
  ["ECDSA-P256", "ecdsa-with-SHA256", "NIST CURVE: P-256", "NIST CURVE: P-256"],
  ["ECDSA-P384", "ecdsa-with-SHA384", "NIST CURVE: P-384", "NIST CURVE: P-384"],
])("encryptionAlgorithm %s", (algorithm, signature, keyText, privateKeyText) => {
  it("makes a CA and a serving certificate openssl accepts", async () => {
    const t = await tempRootHost();
    try {
      const data = testInitData(t.host, testInitConfig({ encryptionAlgorithm: algorithm }));
      await runPhase(certsPhase, data, recordingLogger(), "ca");
      await runPhase(certsPhase, data, recordingLogger(), "apiserver");
      const pki = (p: string) => join(t.root, "etc/kubernetes/pki", p);
      expect(openssl("verify", "-CAfile", pki("ca.crt"), pki("apiserver.crt")).trim()).toBe(
        `${pki("apiserver.crt")}: OK`,
      );
      for (const f of ["ca.crt", "apiserver.crt"]) {
        const text = openssl("x509", "-in", pki(f), "-noout", "-text");
        expect(text).toContain(`Signature Algorithm: ${signature}`);
        expect(text).toContain(keyText);
      }
      expect(openssl("pkey", "-in", pki("apiserver.key"), "-noout", "-text")).toContain(
        privateKeyText,
      );
    } finally {
      await t.cleanup();
    }
  });
});
