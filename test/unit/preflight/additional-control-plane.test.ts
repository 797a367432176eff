// kubeadm's checkIfReadyForAdditionalControlPlane and SharedCertificateExists, against PKI files
// made by openssl: which problems stop a control-plane join, which only warn, and the message.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  requireReadyForAdditionalControlPlane,
  sharedCertificateProblems,
} from "../../../src/node/preflight/additional-control-plane.js";
import { LocalHost } from "../../../src/remote/local.js";

const PKI = "/etc/kubernetes/pki";
let rootfs: string;
let pki: string;
let warnings: string[];

beforeEach(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-shared-certs-"));
  pki = join(rootfs, PKI);
  await mkdir(join(pki, "etcd"), { recursive: true });
  warnings = [];
});
afterEach(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { cwd: pki, stdio: "pipe" });
}

/** A self-signed certificate and its EC key, a CA unless `ca` is false. */
function selfSigned(baseName: string, ca = true): void {
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${baseName}.key`,
    "-out",
    `${baseName}.crt`,
    "-subj",
    `/CN=${baseName.replace("/", "-")}`,
    "-days",
    "365",
    "-addext",
    `basicConstraints=critical,CA:${ca ? "TRUE" : "FALSE"}`,
  );
}

function serviceAccountKeys(): void {
  openssl(
    "genpkey",
    "-algorithm",
    "EC",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-out",
    "sa.key",
  );
  openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub");
}

function allShared(): void {
  selfSigned("ca");
  selfSigned("front-proxy-ca");
  selfSigned("etcd/ca");
  serviceAccountKeys();
}

const stacked = { certificatesDir: PKI, etcd: { local: { dataDir: "/var/lib/etcd" } } };
const external = { certificatesDir: PKI, etcd: { external: { endpoints: ["https://e:2379"] } } };

function input(cluster: object, now = new Date()) {
  return {
    host: new LocalHost({ rootfs }),
    cluster: { controlPlaneEndpoint: "cp.example:6443", ...cluster } as never,
    now,
    warn: (l: string) => void warnings.push(l),
  };
}

const missing = (path: string) => `open ${path}: no such file or directory`;

describe("sharedCertificateProblems (kubeadm's SharedCertificateExists)", () => {
  it("accepts the CAs and the service-account keys when they all load", async () => {
    allShared();
    expect(await sharedCertificateProblems(input(stacked))).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it("lists every missing file at once, in kubeadm's order and aggregate form", async () => {
    expect(await sharedCertificateProblems(input(stacked))).toBe(
      "[" +
        [
          `failure loading certificate for CA: couldn't load the certificate file ${PKI}/ca.crt: ${missing(`${PKI}/ca.crt`)}`,
          `failure loading key for service account: couldn't load the private key file ${PKI}/sa.key: ${missing(`${PKI}/sa.key`)}`,
          `failure loading certificate for front-proxy CA: couldn't load the certificate file ${PKI}/front-proxy-ca.crt: ${missing(`${PKI}/front-proxy-ca.crt`)}`,
          `failure loading certificate for etcd CA: couldn't load the certificate file ${PKI}/etcd/ca.crt: ${missing(`${PKI}/etcd/ca.crt`)}`,
        ].join(", ") +
        "]",
    );
  });

  it("a single problem is the message itself, without brackets", async () => {
    allShared();
    await rm(join(pki, "sa.pub"));
    expect(await sharedCertificateProblems(input(stacked))).toBe(
      `failure loading key for service account: couldn't load the public key file ${PKI}/sa.pub: ${missing(`${PKI}/sa.pub`)}`,
    );
  });

  it("a CA key that is not there only warns: kubeadm assumes an external CA", async () => {
    allShared();
    await rm(join(pki, "ca.key"));
    await rm(join(pki, "etcd/ca.key"));
    expect(await sharedCertificateProblems(input(stacked))).toBeUndefined();
    expect(warnings).toEqual([
      `assuming external key for CA: couldn't load the private key file ${PKI}/ca.key: ${missing(`${PKI}/ca.key`)}`,
      `assuming external key for etcd CA: couldn't load the private key file ${PKI}/etcd/ca.key: ${missing(`${PKI}/etcd/ca.key`)}`,
    ]);
  });

  it("refuses a certificate that is not a CA", async () => {
    allShared();
    selfSigned("front-proxy-ca", false);
    expect(await sharedCertificateProblems(input(stacked))).toBe(
      "certificate front-proxy CA is not a CA",
    );
  });

  it("refuses a file that holds no certificate", async () => {
    allShared();
    openssl("pkey", "-in", "ca.key", "-out", "ca.crt");
    expect(await sharedCertificateProblems(input(stacked))).toMatch(
      new RegExp(
        `^failure loading certificate for CA: couldn't load the certificate file ${PKI}/ca.crt: `,
      ),
    );
  });

  it("a CA outside its validity period only warns", async () => {
    allShared();
    const later = new Date(Date.now() + 2 * 365 * 24 * 3600 * 1000);
    expect(await sharedCertificateProblems(input(stacked, later))).toBeUndefined();
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(
      /^WARNING: could not validate bounds for certificate CA: the certificate has expired: NotBefore: /,
    );
  });

  it("does not need an etcd CA with external etcd", async () => {
    selfSigned("ca");
    selfSigned("front-proxy-ca");
    serviceAccountKeys();
    expect(await sharedCertificateProblems(input(external))).toBeUndefined();
  });
});

describe("requireReadyForAdditionalControlPlane (kubeadm's checkIfReadyForAdditionalControlPlane)", () => {
  const notReady = (reason: string) =>
    [
      "One or more conditions for hosting a new control plane instance is not satisfied.",
      "",
      reason,
      "",
      "Please ensure that:",
      "* The cluster has a stable controlPlaneEndpoint address.",
      "* The certificates that must be shared among control plane instances are provided.",
    ].join("\n");

  it("refuses a cluster without a controlPlaneEndpoint, even with --certificate-key", async () => {
    allShared();
    const cluster = { ...stacked, controlPlaneEndpoint: undefined };
    for (const hasCertificateKey of [false, true]) {
      await expect(
        requireReadyForAdditionalControlPlane(input(cluster), hasCertificateKey),
      ).rejects.toThrow(
        notReady(
          "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address",
        ),
      );
    }
  });

  it("without --certificate-key, reports the shared certificates' problems in kubeadm's message", async () => {
    allShared();
    await rm(join(pki, "etcd/ca.crt"));
    await expect(requireReadyForAdditionalControlPlane(input(stacked), false)).rejects.toThrow(
      notReady(
        `failure loading certificate for etcd CA: couldn't load the certificate file ${PKI}/etcd/ca.crt: ${missing(`${PKI}/etcd/ca.crt`)}`,
      ),
    );
  });

  it("with --certificate-key, does not look for the certificates (download-certs brings them)", async () => {
    await expect(
      requireReadyForAdditionalControlPlane(input(stacked), true),
    ).resolves.toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it("passes with the shared certificates in place", async () => {
    allShared();
    await expect(
      requireReadyForAdditionalControlPlane(input(stacked), false),
    ).resolves.toBeUndefined();
  });
});
