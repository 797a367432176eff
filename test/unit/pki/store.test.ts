import { readFile, stat, writeFile, rm, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EncryptionAlgorithm } from "../../../src/config/types.js";
import { certsPhase } from "../../../src/phases/init/certs.js";
import {
  newSelfSignedCACert,
  newSignedCert,
  parseCertificatesPEM,
} from "../../../src/pki/certs.js";
import {
  generateKeyPair,
  keysMatch,
  parsePrivateKeyPEM,
  parsePublicKeyPEM,
  privateKeyToPEM,
} from "../../../src/pki/keys.js";
import type { LocalHost } from "../../../src/remote/local.js";
import {
  recordingLogger,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
} from "../../support/init-fixtures.js";
import { CountingKeys } from "../../support/counting-keys.js";
import { testInitConfig, type InitOverrides } from "./fixtures.js";

const ALG: EncryptionAlgorithm = "ECDSA-P256";
const NOW = new Date("2026-06-01T08:00:00Z");

let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ host, root, cleanup } = await tempRootHost()));
afterEach(async () => cleanup());

const pki = (p = "") => join(root, "etc/kubernetes/pki", p);

function setup(o: InitOverrides = {}, now = NOW) {
  const keys = new CountingKeys();
  const cfg = testInitConfig({ encryptionAlgorithm: ALG, ...o });
  const data = testInitData(host, cfg, testRelease(), { now, keys });
  const log = recordingLogger();
  return { data, log, keys, run: (only?: string) => runPhase(certsPhase, data, log, only) };
}

async function cert(path: string) {
  return parseCertificatesPEM(await readFile(pki(path)), path)[0]!;
}

/** Writes a CA and a certificate it signs for `spec` into the cert dir. */
async function writeSigned(
  base: string,
  caBase: string,
  tmpl: Parameters<typeof newSignedCert>[0],
) {
  const ca = parseCertificatesPEM(await readFile(pki(`${caBase}.crt`)), "ca")[0]!;
  const caKey = parsePrivateKeyPEM(await readFile(pki(`${caBase}.key`)), "ca.key");
  const keys = await generateKeyPair(ALG);
  const c = await newSignedCert(tmpl, keys.publicKey, { cert: ca, key: caKey });
  await writeFile(pki(`${base}.key`), privateKeyToPEM(keys.privateKey));
  await writeFile(pki(`${base}.crt`), c.pem);
}

describe("certs phase: a fresh tree", () => {
  it("creates every file with kubeadm's names, modes and log lines, generating keys ahead", async () => {
    const { run, log, keys } = setup();
    await run();
    expect(keys.prefetched).toBe(11);
    expect(keys.taken).toBe(11);
    expect((await readdir(pki())).sort()).toEqual(
      [
        "apiserver-etcd-client.crt",
        "apiserver-etcd-client.key",
        "apiserver-kubelet-client.crt",
        "apiserver-kubelet-client.key",
        "apiserver.crt",
        "apiserver.key",
        "ca.crt",
        "ca.key",
        "etcd",
        "front-proxy-ca.crt",
        "front-proxy-ca.key",
        "front-proxy-client.crt",
        "front-proxy-client.key",
        "sa.key",
        "sa.pub",
      ].sort(),
    );
    expect((await readdir(pki("etcd"))).sort()).toEqual([
      "ca.crt",
      "ca.key",
      "healthcheck-client.crt",
      "healthcheck-client.key",
      "peer.crt",
      "peer.key",
      "server.crt",
      "server.key",
    ]);
    const mode = async (p: string) => (await stat(pki(p))).mode & 0o777;
    expect(await mode("")).toBe(0o755);
    expect(await mode("etcd")).toBe(0o755);
    expect(await mode("apiserver.crt")).toBe(0o644);
    expect(await mode("apiserver.key")).toBe(0o600);
    expect(await mode("etcd/ca.key")).toBe(0o600);
    expect(await mode("sa.key")).toBe(0o600);
    expect(await mode("sa.pub")).toBe(0o600);
    expect(log.lines).toEqual([
      '[certs] Using certificateDir folder "/etc/kubernetes/pki"',
      '[certs] Generating "ca" certificate and key',
      '[certs] Generating "apiserver" certificate and key',
      "[certs] apiserver serving cert is signed for DNS names [cp-1 kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local] and IPs [10.96.0.1 192.168.10.5]",
      '[certs] Generating "apiserver-kubelet-client" certificate and key',
      '[certs] Generating "front-proxy-ca" certificate and key',
      '[certs] Generating "front-proxy-client" certificate and key',
      '[certs] Generating "etcd/ca" certificate and key',
      '[certs] Generating "etcd/server" certificate and key',
      "[certs] etcd/server serving cert is signed for DNS names [cp-1 localhost] and IPs [192.168.10.5 127.0.0.1 ::1]",
      '[certs] Generating "etcd/peer" certificate and key',
      "[certs] etcd/peer serving cert is signed for DNS names [cp-1 localhost] and IPs [192.168.10.5 127.0.0.1 ::1]",
      '[certs] Generating "etcd/healthcheck-client" certificate and key',
      '[certs] Generating "apiserver-etcd-client" certificate and key',
      '[certs] Generating "sa" key and public key',
    ]);
    expect(log.warnings).toEqual([]);

    // Each leaf is signed by its own CA, dated from the injected clock.
    const ca = await cert("ca.crt");
    const etcdCA = await cert("etcd/ca.crt");
    const apiserver = await cert("apiserver.crt");
    expect(apiserver.isSignedBy(ca)).toBe(true);
    expect(apiserver.isSignedBy(etcdCA)).toBe(false);
    expect((await cert("etcd/peer.crt")).isSignedBy(etcdCA)).toBe(true);
    expect(
      (await cert("front-proxy-client.crt")).isSignedBy(await cert("front-proxy-ca.crt")),
    ).toBe(true);
    expect(ca.notBefore).toEqual(new Date("2026-06-01T07:55:00Z"));
    expect(apiserver.notBefore).toEqual(new Date("2026-06-01T07:55:00Z"));
    expect(apiserver.notAfter).toEqual(new Date("2027-06-01T08:00:00Z"));
    // sa.pub is the public half of sa.key.
    const sa = parsePrivateKeyPEM(await readFile(pki("sa.key")), "sa.key");
    expect(keysMatch(sa, parsePublicKeyPEM(await readFile(pki("sa.pub")), "sa.pub"))).toBe(true);
    expect(await readFile(pki("sa.key"), "utf8")).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
  });

  it("is idempotent: a second run reuses every file and changes nothing", async () => {
    const first = setup();
    await first.run();
    const before = await snapshot();
    const second = setup({}, new Date("2026-06-02T08:00:00Z"));
    await second.run();
    expect(await snapshot()).toEqual(before);
    expect(second.keys.prefetched).toBe(0);
    expect(second.keys.taken).toBe(0);
    expect(second.log.lines).toEqual([
      '[certs] Using certificateDir folder "/etc/kubernetes/pki"',
      "[certs] Using existing ca certificate authority",
      "[certs] Using existing apiserver certificate and key on disk",
      "[certs] Using existing apiserver-kubelet-client certificate and key on disk",
      "[certs] Using existing front-proxy-ca certificate authority",
      "[certs] Using existing front-proxy-client certificate and key on disk",
      "[certs] Using existing etcd/ca certificate authority",
      "[certs] Using existing etcd/server certificate and key on disk",
      "[certs] Using existing etcd/peer certificate and key on disk",
      "[certs] Using existing etcd/healthcheck-client certificate and key on disk",
      "[certs] Using existing apiserver-etcd-client certificate and key on disk",
      '[certs] Using the existing "sa" key',
    ]);
  });

  async function snapshot() {
    const files: Record<string, string> = {};
    for (const f of [
      "ca.crt",
      "ca.key",
      "apiserver.crt",
      "apiserver.key",
      "etcd/server.crt",
      "sa.key",
      "sa.pub",
    ]) {
      files[f] = await readFile(pki(f), "utf8");
    }
    return files;
  }

  it("creates no etcd certificates with external etcd", async () => {
    const { run, keys } = setup({ externalEtcd: true });
    const ran = await run();
    expect(ran).not.toContain("certs/etcd-ca");
    expect(ran).toContain("certs/sa");
    expect(keys.prefetched).toBe(6);
    expect(await readdir(pki())).not.toContain("etcd");
    expect(await readdir(pki())).not.toContain("apiserver-etcd-client.crt");
  });

  it("uses certificatesDir from the configuration", async () => {
    const { run } = setup({ certificatesDir: "/srv/pki" });
    await run();
    expect(await readdir(join(root, "srv/pki"))).toContain("apiserver.crt");
  });
});

describe("certs phase: one sub-phase alone", () => {
  it("certs/apiserver needs only the CA", async () => {
    await setup().run("ca");
    const { run, log, keys } = setup();
    const ran = await run("apiserver");
    expect(ran).toEqual(["certs/apiserver"]);
    expect(keys.prefetched).toBe(0);
    expect(keys.taken).toBe(1);
    expect(log.lines[0]).toBe('[certs] Generating "apiserver" certificate and key');
    expect((await cert("apiserver.crt")).isSignedBy(await cert("ca.crt"))).toBe(true);
  });

  it("certs/apiserver without a CA says which phase to run", async () => {
    await expect(setup().run("apiserver")).rejects.toThrow(
      "cannot create /etc/kubernetes/pki/apiserver.crt: the CA certificate /etc/kubernetes/pki/ca.crt does not exist (run the certs/ca phase first)",
    );
  });
});

describe("certs phase: existing files", () => {
  it("signs everything with a user-provided CA", async () => {
    const keys = await generateKeyPair(ALG);
    const userCA = await newSelfSignedCACert(
      { commonName: "corp-root", notBefore: new Date("2026-01-01T00:00:00Z") },
      keys,
    );
    await host.writeFile("/etc/kubernetes/pki/ca.crt", userCA.pem, 0o644);
    await host.writeFile("/etc/kubernetes/pki/ca.key", privateKeyToPEM(keys.privateKey), 0o600);
    const { run, log } = setup();
    await run();
    expect(log.lines).toContain("[certs] Using existing ca certificate authority");
    const apiserver = await cert("apiserver.crt");
    expect(apiserver.isSignedBy(userCA)).toBe(true);
    expect(apiserver.authorityKeyId).toBe(userCA.subjectKeyId);
    expect(await readFile(pki("ca.crt"), "utf8")).toBe(userCA.pem);
  });

  it("refuses a certificate signed by another CA, naming both files", async () => {
    await setup().run("ca");
    await setup().run("front-proxy-ca");
    await writeSigned("apiserver", "front-proxy-ca", {
      commonName: "kube-apiserver",
      extKeyUsages: ["serverAuth"],
    });
    await expect(setup().run("apiserver")).rejects.toThrow(
      "/etc/kubernetes/pki/apiserver.crt is not signed by /etc/kubernetes/pki/ca.crt",
    );
  });

  it("refuses an apiserver certificate that misses a SAN the configuration now needs", async () => {
    await setup().run();
    await expect(setup({ certSANs: ["10.0.0.99"] }).run("apiserver")).rejects.toThrow(
      "/etc/kubernetes/pki/apiserver.crt does not cover SAN 10.0.0.99",
    );
    await expect(
      setup({ controlPlaneEndpoint: "lb.example.com" }).run("apiserver"),
    ).rejects.toThrow("/etc/kubernetes/pki/apiserver.crt does not cover SAN lb.example.com");
    await expect(setup({ etcdPeerCertSANs: ["fd00::7"] }).run("etcd-peer")).rejects.toThrow(
      "/etc/kubernetes/pki/etcd/peer.crt does not cover SAN fd00::7",
    );
  });

  it("accepts a certificate covering more than needed (a wildcard covers a name)", async () => {
    await setup().run("ca");
    await writeSigned("apiserver", "ca", {
      commonName: "kube-apiserver",
      extKeyUsages: ["serverAuth"],
      altNames: {
        dnsNames: [
          "cp-1",
          "kubernetes",
          "kubernetes.default",
          "kubernetes.default.svc",
          "*.default.svc.cluster.local",
          "extra",
        ],
        ips: ["10.96.0.1", "192.168.10.5", "10.9.9.9"],
      },
    });
    const { run, log } = setup();
    await run("apiserver");
    expect(log.lines).toEqual(["[certs] Using existing apiserver certificate and key on disk"]);
  });

  it("refuses an expired certificate", async () => {
    await setup().run("ca");
    await writeSigned("apiserver-kubelet-client", "ca", {
      commonName: "kube-apiserver-kubelet-client",
      extKeyUsages: ["clientAuth"],
      notBefore: new Date("2026-01-01T00:00:00Z"),
      notAfter: new Date("2026-02-01T00:00:00Z"),
    });
    await expect(setup().run("apiserver-kubelet-client")).rejects.toThrow(
      "/etc/kubernetes/pki/apiserver-kubelet-client.crt has expired: it was valid until 2026-02-01T00:00:00.000Z",
    );
  });

  it("refuses a certificate without the usage it needs", async () => {
    await setup().run("ca");
    await writeSigned("apiserver-kubelet-client", "ca", {
      commonName: "kube-apiserver-kubelet-client",
      extKeyUsages: ["serverAuth"],
    });
    await expect(setup().run("apiserver-kubelet-client")).rejects.toThrow(
      "/etc/kubernetes/pki/apiserver-kubelet-client.crt does not allow the extended key usage clientAuth",
    );
  });

  it("refuses a lone key, a lone certificate and a key of another certificate", async () => {
    await setup().run();
    await rm(pki("front-proxy-client.crt"));
    await expect(setup().run("front-proxy-client")).rejects.toThrow(
      "/etc/kubernetes/pki/front-proxy-client.key exists but /etc/kubernetes/pki/front-proxy-client.crt does not",
    );
    await rm(pki("etcd/healthcheck-client.key"));
    await expect(setup().run("etcd-healthcheck-client")).rejects.toThrow(
      "/etc/kubernetes/pki/etcd/healthcheck-client.crt exists but its key /etc/kubernetes/pki/etcd/healthcheck-client.key does not",
    );
    await writeFile(pki("apiserver.key"), await readFile(pki("apiserver-etcd-client.key")));
    await expect(setup().run("apiserver")).rejects.toThrow(
      "/etc/kubernetes/pki/apiserver.key is not the private key of /etc/kubernetes/pki/apiserver.crt",
    );
  });

  it("refuses a CA file that is not a CA, an expired CA and a CA key without certificate", async () => {
    await setup().run();
    await writeFile(pki("front-proxy-ca.crt"), await readFile(pki("front-proxy-client.crt")));
    await expect(setup().run("front-proxy-ca")).rejects.toThrow(
      "/etc/kubernetes/pki/front-proxy-ca.crt is not a CA certificate",
    );
    await expect(setup({}, new Date("2040-01-01T00:00:00Z")).run("etcd-ca")).rejects.toThrow(
      /\/etc\/kubernetes\/pki\/etcd\/ca.crt has expired: it was valid until 2036-/,
    );
    await rm(pki("ca.crt"));
    await expect(setup().run("ca")).rejects.toThrow(
      "/etc/kubernetes/pki/ca.key exists but the CA certificate /etc/kubernetes/pki/ca.crt does not",
    );
  });

  it("names the file of an unreadable key", async () => {
    await setup().run("ca");
    await writeFile(pki("ca.key"), "garbage");
    await expect(setup().run("ca")).rejects.toThrow(
      "/etc/kubernetes/pki/ca.key does not contain a valid RSA or ECDSA private key",
    );
  });

  it("warns, as kubeadm, about a certificate that is not valid yet", async () => {
    await setup({}, new Date("2026-07-01T00:00:00Z")).run("ca");
    const { run, log } = setup();
    await run("ca");
    expect(log.warnings).toEqual([
      "[certs] /etc/kubernetes/pki/ca.crt is not valid yet: it is valid from 2026-06-30T23:55:00.000Z",
    ]);
  });

  it("rewrites a missing sa.pub from sa.key", async () => {
    await setup().run("sa");
    const key = await readFile(pki("sa.key"), "utf8");
    const pub = await readFile(pki("sa.pub"), "utf8");
    await rm(pki("sa.pub"));
    const { run, keys } = setup();
    await run("sa");
    expect(keys.taken).toBe(0);
    expect(await readFile(pki("sa.key"), "utf8")).toBe(key);
    expect(await readFile(pki("sa.pub"), "utf8")).toBe(pub);
  });

  it("prefetches only the keys still missing", async () => {
    await setup().run("ca");
    await setup().run("apiserver");
    const { data, log, keys } = setup();
    await certsPhase.run!(data, { path: "certs", log });
    expect(keys.prefetched).toBe(9);
  });
});

describe("certs phase: external CA mode (ca.crt without ca.key)", () => {
  async function externalTree() {
    await setup().run();
    await rm(pki("ca.key"));
  }

  it("validates the provided certificates and generates nothing", async () => {
    await externalTree();
    const { run, log, keys } = setup();
    await run();
    expect(keys.taken).toBe(0);
    expect(keys.prefetched).toBe(0);
    expect(log.lines).toContain("[certs] Using existing ca keyless certificate authority");
    expect(log.lines).toContain("[certs] Using existing apiserver certificate and key on disk");
    expect(log.lines).toContain("[certs] Using existing sa keys");
    expect(await readdir(pki())).not.toContain("ca.key");
  });

  it("refuses to start when a certificate the keyless CA must have signed is missing", async () => {
    await externalTree();
    await rm(pki("apiserver-kubelet-client.crt"));
    await rm(pki("apiserver-kubelet-client.key"));
    await expect(setup().run()).rejects.toThrow(
      "invalid or incomplete external CA: /etc/kubernetes/pki/ca.key is absent, so /etc/kubernetes/pki/apiserver-kubelet-client.crt must be provided",
    );
    await expect(setup().run("apiserver-kubelet-client")).rejects.toThrow(
      "cannot create /etc/kubernetes/pki/apiserver-kubelet-client.crt: /etc/kubernetes/pki/ca.key is absent (external CA mode), so the certificate must be provided",
    );
  });

  it("still validates what the keyless CA signed", async () => {
    await externalTree();
    await expect(setup({ certSANs: ["new.example.com"] }).run()).rejects.toThrow(
      "/etc/kubernetes/pki/apiserver.crt does not cover SAN new.example.com",
    );
  });
});
