import { createDecipheriv } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import { encryptBytes } from "../../../../src/pki/certificate-key.js";
import {
  certFileMode,
  certsToTransfer,
  decodeKubeadmCerts,
  kubeadmCertFiles,
  kubeadmCertsSecret,
} from "../../../../src/manifests/upload-certs.js";
import { baseInitConfig } from "../../../support/init-fixtures.js";
import { inTempDir, run } from "./tools.js";
import { expectValidObject } from "./valid.js";

const KEY = "f8902e114ef118304e561c3ecd4d0b543adc226b7a07f675f56564185ffe0c07";
const OTHER_KEY = "00".repeat(32);
const OWNER = { name: "bootstrap-token-abcdef", uid: "0b2c1c1e-4a4e-4d0b-9b0e-6b1a1f1f1f1f" };

describe("certsToTransfer (copycerts.go)", () => {
  it("with local etcd: the shared CAs, the sa keys and the etcd CA", () => {
    const cfg = baseInitConfig({}, (c) => (c.cluster.certificatesDir = "/srv/pki"));
    expect(certsToTransfer(cfg.cluster)).toEqual([
      { name: "ca.crt", secretKey: "ca.crt", path: "/srv/pki/ca.crt" },
      { name: "ca.key", secretKey: "ca.key", path: "/srv/pki/ca.key" },
      {
        name: "front-proxy-ca.crt",
        secretKey: "front-proxy-ca.crt",
        path: "/srv/pki/front-proxy-ca.crt",
      },
      {
        name: "front-proxy-ca.key",
        secretKey: "front-proxy-ca.key",
        path: "/srv/pki/front-proxy-ca.key",
      },
      { name: "sa.pub", secretKey: "sa.pub", path: "/srv/pki/sa.pub" },
      { name: "sa.key", secretKey: "sa.key", path: "/srv/pki/sa.key" },
      { name: "etcd/ca.crt", secretKey: "etcd-ca.crt", path: "/srv/pki/etcd/ca.crt" },
      { name: "etcd/ca.key", secretKey: "etcd-ca.key", path: "/srv/pki/etcd/ca.key" },
    ]);
  });

  it("with external etcd: its configured client files instead of the etcd CA", () => {
    const cfg = baseInitConfig({}, (c) => {
      c.cluster.etcd = {
        external: { endpoints: ["https://e:2379"], caFile: "/x/ca.pem", certFile: "/x/c.pem" },
      };
    });
    const list = certsToTransfer(cfg.cluster);
    expect(list.map((t) => t.secretKey)).not.toContain("etcd-ca.crt");
    expect(list.slice(6)).toEqual([
      { name: "external-etcd-ca.crt", secretKey: "external-etcd-ca.crt", path: "/x/ca.pem" },
      { name: "external-etcd.crt", secretKey: "external-etcd.crt", path: "/x/c.pem" },
      { name: "external-etcd.key", secretKey: "external-etcd.key", path: "" },
    ]);
  });
});

/** Real PKI files made by openssl: RSA CAs and keys, an EC etcd CA, the sa key pair. */
async function opensslPKI(dir: string): Promise<void> {
  const sh = (script: string) => run("sh", ["-c", script], { cwd: dir });
  await mkdir(join(dir, "etcd"));
  await sh(
    "openssl genrsa -out ca.key 2048 2>/dev/null && openssl req -x509 -new -key ca.key -subj /CN=kubernetes -days 1 -out ca.crt",
  );
  await sh(
    "openssl genrsa -traditional -out front-proxy-ca.key 2048 2>/dev/null && openssl req -x509 -new -key front-proxy-ca.key -subj /CN=front-proxy-ca -days 1 -out front-proxy-ca.crt",
  );
  await sh(
    "openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null",
  );
  await sh(
    "openssl ecparam -name prime256v1 -genkey -noout -out etcd/ca.key && openssl req -x509 -new -key etcd/ca.key -subj /CN=etcd-ca -days 1 -out etcd/ca.crt",
  );
}

async function readContents(transfers: ReturnType<typeof certsToTransfer>) {
  const contents: Record<string, Buffer | undefined> = {};
  for (const t of transfers) {
    contents[t.secretKey] = await readFile(t.path).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return undefined;
      throw e;
    });
  }
  return contents;
}

describe("kubeadm-certs", () => {
  it("round-trips real PKI files byte for byte, with kubeadm's file modes", async () => {
    await inTempDir(async (dir) => {
      await opensslPKI(dir);
      const cfg = baseInitConfig({}, (c) => (c.cluster.certificatesDir = dir));
      const transfers = certsToTransfer(cfg.cluster);
      expect(await readFile(join(dir, "front-proxy-ca.key"), "utf8")).toMatch(
        /^-----BEGIN RSA PRIVATE KEY-----/,
      );
      expect(await readFile(join(dir, "etcd/ca.key"), "utf8")).toMatch(
        /^-----BEGIN EC PRIVATE KEY-----/,
      );
      const contents = await readContents(transfers);
      const secret = kubeadmCertsSecret(contents, KEY, OWNER);
      await expectValidObject(secret);

      const files = kubeadmCertFiles(decodeKubeadmCerts(secret, KEY), transfers);
      expect(files.map((f) => f.path)).toEqual(transfers.map((t) => t.path));
      for (const f of files) expect(f.data.equals(await readFile(f.path))).toBe(true);
      expect(
        Object.fromEntries(files.map((f) => [f.path.slice(dir.length + 1), f.mode.toString(8)])),
      ).toEqual({
        "ca.crt": "644",
        "ca.key": "600",
        "front-proxy-ca.crt": "644",
        "front-proxy-ca.key": "600", // PKCS#1 "RSA PRIVATE KEY"
        "sa.pub": "644",
        "sa.key": "600",
        "etcd/ca.crt": "644",
        "etcd/ca.key": "600", // SEC 1 "EC PRIVATE KEY"
      });
    });
  });

  it("is owned by the proxy token and holds nonce || ciphertext || tag per file", () => {
    const nonce = Buffer.from("000102030405060708090a0b", "hex");
    const secret = kubeadmCertsSecret({ "ca.crt": Buffer.from("PEM DATA") }, KEY, OWNER, (d, k) =>
      encryptBytes(d, k, nonce),
    );
    expect(secret.metadata).toEqual({
      name: "kubeadm-certs",
      namespace: "kube-system",
      ownerReferences: [
        {
          apiVersion: "v1",
          kind: "Secret",
          name: "bootstrap-token-abcdef",
          uid: OWNER.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(secret["type"]).toBeUndefined(); // Opaque by the API's default
    // Opened the way Go's gcm.Open reads kubeadm's layout.
    const sealed = Buffer.from((secret["data"] as Record<string, string>)["ca.crt"]!, "base64");
    expect(sealed.subarray(0, 12)).toEqual(nonce);
    expect(sealed.length).toBe(12 + 8 + 16);
    const d = createDecipheriv("aes-256-gcm", Buffer.from(KEY, "hex"), sealed.subarray(0, 12));
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    expect(
      Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()]).toString(),
    ).toBe("PEM DATA");
  });

  it("stores a missing file as an empty value and seals an empty file (os.IsNotExist only)", () => {
    const secret = kubeadmCertsSecret(
      { "external-etcd.key": undefined, "external-etcd.crt": Buffer.alloc(0) },
      KEY,
      OWNER,
    );
    const data = secret["data"] as Record<string, string>;
    expect(data["external-etcd.key"]).toBe("");
    expect(Buffer.from(data["external-etcd.crt"]!, "base64").length).toBe(12 + 16);
    const decoded = decodeKubeadmCerts(secret, KEY);
    expect(decoded.get("external-etcd.key")).toEqual(Buffer.alloc(0));
    expect(decoded.get("external-etcd.crt")).toEqual(Buffer.alloc(0));
    // Empty values are not written on join.
    const transfers = [
      { name: "external-etcd.key", secretKey: "external-etcd.key", path: "/x/k" },
      { name: "external-etcd.crt", secretKey: "external-etcd.crt", path: "/x/c" },
    ];
    expect(kubeadmCertFiles(decoded, transfers)).toEqual([]);
  });

  it("decrypts all or nothing, naming the entry that fails", () => {
    const secret = kubeadmCertsSecret(
      { "ca.crt": Buffer.from("a"), "ca.key": Buffer.from("b") },
      KEY,
      OWNER,
    );
    expect(() => decodeKubeadmCerts(secret, OTHER_KEY)).toThrow(
      /entry "ca.crt" of Secret kube-system\/kubeadm-certs does not decrypt/,
    );
    const tampered: KubeObject = structuredClone(secret);
    const data = tampered["data"] as Record<string, string>;
    const bytes = Buffer.from(data["ca.key"]!, "base64");
    bytes[13]! ^= 1;
    data["ca.key"] = bytes.toString("base64");
    expect(() => decodeKubeadmCerts(tampered, KEY)).toThrow(/entry "ca.key"/);
  });

  it("refuses a certificate key that is not 64 hex characters, without echoing it", () => {
    expect(() => kubeadmCertsSecret({}, "abc123", OWNER)).toThrow(/64 hexadecimal characters/);
    expect(() => decodeKubeadmCerts(kubeadmCertsSecret({}, KEY, OWNER), "zz".repeat(32))).toThrow(
      /not a hexadecimal string/,
    );
  });

  it("reports a transfer the Secret lacks, and data that is neither key nor certificate", async () => {
    const transfers = certsToTransfer(baseInitConfig().cluster);
    expect(() => kubeadmCertFiles(new Map(), transfers)).toThrow(
      "the Secret does not include the required certificate or key - name: ca.crt, path: /etc/kubernetes/pki/ca.crt",
    );
    const bad = new Map([["ca.crt", Buffer.from("not pem")]]);
    expect(() => kubeadmCertFiles(bad, transfers.slice(0, 1))).toThrow(
      /unknown data found in Secret entry "ca.crt"/,
    );
    await inTempDir(async (dir) => {
      await run("openssl", ["genpkey", "-algorithm", "ed25519", "-out", "k.pem"], { cwd: dir });
      // PKCS#8 keys of any algorithm count as private keys; a key PEM that does not parse is no key.
      expect(certFileMode(await readFile(join(dir, "k.pem")))).toBe(0o600);
      const broken = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
      expect(() => certFileMode(Buffer.from(broken))).toThrow("unknown data found in Secret entry");
    });
  });
});
