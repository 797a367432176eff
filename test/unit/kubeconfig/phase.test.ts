import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Release } from "../../../src/config/release.js";
import { releaseFor } from "../../../src/config/versions.js";
import { createWithCerts, renderKubeConfig } from "../../../src/kubeconfig/build.js";
import { currentEntries, decodeData, parseKubeConfig } from "../../../src/kubeconfig/parse.js";
import { certsPhase } from "../../../src/phases/init/certs.js";
import { kubeconfigPhase } from "../../../src/phases/init/kubeconfig.js";
import {
  newSelfSignedCACert,
  newSignedCert,
  parseCertificatesPEM,
  type Certificate,
} from "../../../src/pki/certs.js";
import {
  generateKeyPair,
  keysMatch,
  parsePrivateKeyPEM,
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
import { testInitConfig, type InitOverrides } from "../pki/fixtures.js";

const NOW = new Date("2026-06-01T08:00:00Z");
let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ host, root, cleanup } = await tempRootHost()));
afterEach(async () => cleanup());

const k8s = (p: string) => join(root, "etc/kubernetes", p);

function setup(
  o: InitOverrides & { featureGates?: Record<string, boolean>; release?: Release } = {},
  now = NOW,
) {
  const { featureGates, release, ...overrides } = o;
  const cfg = testInitConfig({ encryptionAlgorithm: "ECDSA-P256", ...overrides });
  if (featureGates) cfg.cluster.featureGates = featureGates;
  const data = testInitData(host, cfg, release ?? testRelease(), { now });
  const log = recordingLogger();
  return {
    data,
    log,
    certs: (only?: string) => runPhase(certsPhase, data, log, only),
    run: (only?: string) => runPhase(kubeconfigPhase, data, log, only),
  };
}

async function load(file: string) {
  const text = await readFile(k8s(file), "utf8");
  const e = currentEntries(parseKubeConfig(text, file), file);
  const cert = parseCertificatesPEM(decodeData(e.user?.["client-certificate-data"])!, file)[0]!;
  const key = parsePrivateKeyPEM(decodeData(e.user?.["client-key-data"])!, file);
  return { e, cert, key, text };
}

describe("kubeconfig phase", () => {
  it("writes the five files with kubeadm's identities, servers and mode 0600", async () => {
    const s = setup({ controlPlaneEndpoint: "api.example.com", clusterName: "prod" });
    await s.certs("ca");
    await s.run();
    const ca = parseCertificatesPEM(await readFile(k8s("pki/ca.crt")), "ca.crt")[0]!;
    const expected: [string, string, string[], string][] = [
      [
        "admin.conf",
        "kubernetes-admin",
        ["kubeadm:cluster-admins"],
        "https://api.example.com:6443",
      ],
      [
        "super-admin.conf",
        "kubernetes-super-admin",
        ["system:masters"],
        "https://api.example.com:6443",
      ],
      // ControlPlaneKubeletLocalMode (on by default): the node's own API server.
      ["kubelet.conf", "system:node:cp-1", ["system:nodes"], "https://192.168.10.5:6443"],
      [
        "controller-manager.conf",
        "system:kube-controller-manager",
        [],
        "https://192.168.10.5:6443",
      ],
      ["scheduler.conf", "system:kube-scheduler", [], "https://192.168.10.5:6443"],
    ];
    for (const [file, cn, o, server] of expected) {
      const { e, cert, key } = await load(file);
      expect((await stat(k8s(file))).mode & 0o777).toBe(0o600);
      expect([e.clusterName, e.userName, e.contextName, e.cluster.server]).toEqual([
        "prod",
        cn,
        `${cn}@prod`,
        server,
      ]);
      expect(decodeData(e.cluster["certificate-authority-data"])!.toString()).toBe(ca.pem);
      expect([cert.commonName, cert.organizations]).toEqual([cn, o]);
      expect(cert.allowsExtKeyUsage("clientAuth")).toBe(true);
      expect(cert.allowsExtKeyUsage("serverAuth")).toBe(false);
      expect(cert.isSignedBy(ca)).toBe(true);
      expect(keysMatch(key, cert.rawSubjectPublicKeyInfo)).toBe(true);
      // kubeadm leaves NotBefore to the CA's; NotAfter is now + certificateValidityPeriod.
      expect(cert.notBefore).toEqual(ca.notBefore);
      expect(cert.notAfter).toEqual(new Date("2027-06-01T08:00:00Z"));
    }
    expect(s.log.lines.slice(-6)).toEqual([
      '[kubeconfig] Using kubeconfig folder "/etc/kubernetes"',
      '[kubeconfig] Writing "admin.conf" kubeconfig file',
      '[kubeconfig] Writing "super-admin.conf" kubeconfig file',
      '[kubeconfig] Writing "kubelet.conf" kubeconfig file',
      '[kubeconfig] Writing "controller-manager.conf" kubeconfig file',
      '[kubeconfig] Writing "scheduler.conf" kubeconfig file',
    ]);
  });

  it("reuses valid files on a second run and warns, as kubeadm, about a changed server", async () => {
    const first = setup();
    await first.certs("ca");
    await first.run();
    const before = await readFile(k8s("admin.conf"), "utf8");
    const second = setup({ controlPlaneEndpoint: "lb.example.com:443" });
    await second.run();
    expect(await readFile(k8s("admin.conf"), "utf8")).toBe(before);
    expect(second.log.lines).toContain(
      '[kubeconfig] Using existing kubeconfig file: "/etc/kubernetes/admin.conf"',
    );
    expect(second.log.warnings).toEqual(
      ["admin.conf", "super-admin.conf"].map(
        (f) =>
          `[kubeconfig] a kubeconfig file "/etc/kubernetes/${f}" exists already but has an unexpected API Server URL: expected: https://lb.example.com:443, got: https://192.168.10.5:6443`,
      ),
    );
  });

  describe("kubelet.conf and ControlPlaneKubeletLocalMode (kubernetes/kubernetes#125780)", () => {
    const server = async () => (await load("kubelet.conf")).e.cluster.server;

    // v1.34 still lets the beta gate be turned off; v1.35 locks it on (#134106).
    it("points at controlPlaneEndpoint with the gate off (v1.34)", async () => {
      const s = setup({
        controlPlaneEndpoint: "api.example.com",
        featureGates: { ControlPlaneKubeletLocalMode: false },
        release: releaseFor("v1.34.4"),
      });
      await s.certs("ca");
      await s.run("kubelet");
      expect(await server()).toBe("https://api.example.com:6443");
    });

    it("points at the local API server with the gate on, whatever controlPlaneEndpoint says", async () => {
      const s = setup({
        controlPlaneEndpoint: "api.example.com",
        featureGates: { ControlPlaneKubeletLocalMode: true },
      });
      await s.certs("ca");
      await s.run("kubelet");
      expect(await server()).toBe("https://192.168.10.5:6443");
    });

    it("v1.35: the gate is locked on, so a stray false still gives the local API server", async () => {
      const s = setup({
        controlPlaneEndpoint: "api.example.com",
        featureGates: { ControlPlaneKubeletLocalMode: false },
        release: releaseFor("v1.35.0"),
      });
      await s.certs("ca");
      await s.run("kubelet");
      expect(await server()).toBe("https://192.168.10.5:6443");
    });

    it("checks an existing kubelet.conf against the endpoint the gate chooses", async () => {
      const off = setup({
        controlPlaneEndpoint: "api.example.com",
        featureGates: { ControlPlaneKubeletLocalMode: false },
        release: releaseFor("v1.34.4"),
      });
      await off.certs("ca");
      await off.run("kubelet");
      const on = setup({ controlPlaneEndpoint: "api.example.com" });
      await on.run("kubelet");
      expect(on.log.warnings).toEqual([
        '[kubeconfig] a kubeconfig file "/etc/kubernetes/kubelet.conf" exists already but has an unexpected API Server URL: expected: https://192.168.10.5:6443, got: https://api.example.com:6443',
      ]);
      const offAgain = setup({
        controlPlaneEndpoint: "api.example.com",
        featureGates: { ControlPlaneKubeletLocalMode: false },
        release: releaseFor("v1.34.4"),
      });
      await offAgain.run("kubelet");
      expect(offAgain.log.warnings).toEqual([]);
    });
  });

  it("refuses a file trusting another CA", async () => {
    const s = setup();
    await s.certs("ca");
    await s.run("scheduler");
    await rm(k8s("pki/ca.crt"));
    await rm(k8s("pki/ca.key"));
    await s.certs("ca");
    await expect(setup().run("scheduler")).rejects.toThrow(
      'a kubeconfig file "/etc/kubernetes/scheduler.conf" exists already but has got the wrong CA cert',
    );
  });

  it("refuses a file whose client certificate was not signed by the CA, or expired", async () => {
    const s = setup();
    await s.certs("ca");
    const ca = parseCertificatesPEM(await readFile(k8s("pki/ca.crt")), "ca")[0]!;
    const caKey = parsePrivateKeyPEM(await readFile(k8s("pki/ca.key")), "ca.key");
    const otherKeys = await generateKeyPair("ECDSA-P256");
    const other = await newSelfSignedCACert(
      { commonName: "kubernetes", notBefore: NOW },
      otherKeys,
    );
    const write = async (issuer: { cert: Certificate; key: typeof caKey }, notAfter?: Date) => {
      const keys = await generateKeyPair("ECDSA-P256");
      const cert = await newSignedCert(
        {
          commonName: "kubernetes-admin",
          extKeyUsages: ["clientAuth"],
          ...(notAfter ? { notBefore: new Date(0), notAfter } : {}),
        },
        keys.publicKey,
        issuer,
      );
      await writeFile(
        k8s("admin.conf"),
        renderKubeConfig(
          createWithCerts(
            "https://192.168.10.5:6443",
            "kubernetes",
            "kubernetes-admin",
            ca.pem,
            privateKeyToPEM(keys.privateKey),
            cert.pem,
          ),
          { preferences: false },
        ),
      );
    };
    await write({ cert: other, key: otherKeys.privateKey });
    await expect(setup().run("admin")).rejects.toThrow(
      "the client certificate in /etc/kubernetes/admin.conf is not signed by /etc/kubernetes/pki/ca.crt",
    );
    await write({ cert: ca, key: caKey }, new Date("2026-01-01T00:00:00Z"));
    await expect(setup().run("admin")).rejects.toThrow(
      "the client certificate in /etc/kubernetes/admin.conf has expired: it was valid until 2026-01-01T00:00:00.000Z",
    );
  });

  it("accepts a CA given by file path instead of embedded data", async () => {
    const s = setup();
    await s.certs("ca");
    await s.run("admin");
    const text = (await readFile(k8s("admin.conf"), "utf8")).replace(
      /certificate-authority-data: .*/,
      "certificate-authority: pki/ca.crt",
    );
    await writeFile(k8s("admin.conf"), text);
    const again = setup();
    await again.run("admin");
    expect(again.log.lines).toEqual([
      '[kubeconfig] Using existing kubeconfig file: "/etc/kubernetes/admin.conf"',
    ]);
  });

  it("prefetches one key per missing file", async () => {
    const s = setup();
    await s.certs("ca");
    await s.run("admin");
    let prefetched = 0;
    const data = {
      ...s.data,
      keys: {
        prefetch: (_a: string, n: number) => (prefetched += n),
        take: s.data.keys.take.bind(s.data.keys),
        discard: () => undefined,
      },
    };
    await kubeconfigPhase.run!(data, { path: "kubeconfig", log: s.log });
    expect(prefetched).toBe(4);
  });

  it("needs the CA", async () => {
    await expect(setup().run("admin")).rejects.toThrow(
      'the CA files do not exist in /etc/kubernetes/pki; run "kubeforge init phase certs ca" to generate them',
    );
  });

  describe("external CA mode", () => {
    it("validates user-provided files and writes nothing", async () => {
      const s = setup();
      await s.certs("ca");
      await s.run();
      await rm(k8s("pki/ca.key"));
      const again = setup();
      await again.run();
      expect(again.log.lines).toEqual([
        '[kubeconfig] Using kubeconfig folder "/etc/kubernetes"',
        "[kubeconfig] External CA mode: Using user provided admin.conf",
        "[kubeconfig] External CA mode: Using user provided super-admin.conf",
        "[kubeconfig] External CA mode: Using user provided kubelet.conf",
        "[kubeconfig] External CA mode: Using user provided controller-manager.conf",
        "[kubeconfig] External CA mode: Using user provided scheduler.conf",
      ]);
    });

    it("refuses to go on without a file it cannot create", async () => {
      const s = setup();
      await s.certs("ca");
      await rm(k8s("pki/ca.key"));
      await expect(setup().run("kubelet")).rejects.toThrow(
        "external CA mode: /etc/kubernetes/pki/ca.key is absent, so /etc/kubernetes/kubelet.conf must be provided (kubeforge cannot sign its client certificate)",
      );
    });
  });
});
