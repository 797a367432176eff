import { X509Certificate, createPrivateKey, createPublicKey } from "node:crypto";
import { posix } from "node:path";
import type { ClusterConfiguration } from "../config/types.js";
import type { KubeObject } from "../types/kube-object.js";
import { decodeCertificateKey, decryptBytes, encryptBytes } from "../pki/certificate-key.js";
import { pemDecodeAll } from "../pki/pem.js";

// upload-certs and its counterpart download-certs (kubeadm: phases/copycerts/copycerts.go):
// the shared CAs and service-account keys, each AES-256-GCM sealed with the certificate key,
// in Secret kube-system/kubeadm-certs owned by a 2-hour proxy bootstrap token, so the token
// cleaner deleting the token garbage-collects the certificates.

export const KUBEADM_CERTS_SECRET = "kubeadm-certs";

/** One uploaded file: its kubeadm name, its key in the Secret ("/" → "-"), its path on disk. */
export interface CertTransfer {
  name: string;
  secretKey: string;
  /** Absolute path; "" for an unset external etcd file, which reads as missing. */
  path: string;
}

/** certOrKeyNameToSecretName: "etcd/ca.crt" → "etcd-ca.crt". */
export function certSecretKey(name: string): string {
  return name.replaceAll("/", "-");
}

/**
 * certsToTransfer: ca, front-proxy-ca and sa always; with local etcd the etcd CA under the
 * certificates dir, with external etcd the configured client files instead (written back to
 * those same paths on join).
 */
export function certsToTransfer(
  cluster: Pick<ClusterConfiguration, "certificatesDir" | "etcd">,
): CertTransfer[] {
  const dir = cluster.certificatesDir ?? "/etc/kubernetes/pki";
  const inDir = (name: string): CertTransfer => ({
    name,
    secretKey: certSecretKey(name),
    path: posix.join(dir, name),
  });
  const list = [
    "ca.crt",
    "ca.key",
    "front-proxy-ca.crt",
    "front-proxy-ca.key",
    "sa.pub",
    "sa.key",
  ].map(inDir);
  const external = cluster.etcd?.external;
  if (!external) return [...list, inDir("etcd/ca.crt"), inDir("etcd/ca.key")];
  const file = (name: string, path: string | undefined): CertTransfer => ({
    name,
    secretKey: name,
    path: path ?? "",
  });
  return [
    ...list,
    file("external-etcd-ca.crt", external.caFile),
    file("external-etcd.crt", external.certFile),
    file("external-etcd.key", external.keyFile),
  ];
}

export interface SecretOwner {
  /** The proxy token's Secret name: "bootstrap-token-<id>". */
  name: string;
  uid: string;
}

/**
 * Secret kube-system/kubeadm-certs. `contents` maps each Secret key (CertTransfer.secretKey) to
 * the file's bytes; a file that does not exist (undefined) is stored as an empty value, as
 * kubeadm does for os.IsNotExist. An existing file, even empty, is sealed. Every value is
 * nonce || ciphertext || tag under `certificateKey`. The owner reference is
 * metav1.NewControllerRef of the proxy token's Secret. `encrypt` is kubeadm's EncryptBytes.
 */
export function kubeadmCertsSecret(
  contents: Readonly<Record<string, Uint8Array | undefined>>,
  certificateKey: string,
  owner: SecretOwner,
  encrypt: (data: Uint8Array, key: Uint8Array) => Uint8Array = encryptBytes,
): KubeObject {
  const key = decodeCertificateKey(certificateKey);
  const data: Record<string, string> = {};
  for (const [secretKey, bytes] of Object.entries(contents)) {
    data[secretKey] =
      bytes === undefined ? "" : Buffer.from(encrypt(bytes, key)).toString("base64");
  }
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: KUBEADM_CERTS_SECRET,
      namespace: "kube-system",
      ownerReferences: [
        {
          apiVersion: "v1",
          kind: "Secret",
          name: owner.name,
          uid: owner.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    data,
  };
}

/**
 * getDataFromSecret: every value of the Secret decrypted with `certificateKey`; empty values
 * stay empty. All or nothing: the first value that does not decrypt fails the whole download,
 * naming its key (a wrong key or a tampered value; nothing partial is returned).
 */
export function decodeKubeadmCerts(
  secret: KubeObject,
  certificateKey: string,
): Map<string, Buffer> {
  const key = decodeCertificateKey(certificateKey);
  const data = (secret["data"] as Record<string, string> | undefined) ?? {};
  const out = new Map<string, Buffer>();
  for (const [secretKey, value] of Object.entries(data)) {
    const sealed = Buffer.from(value, "base64");
    if (sealed.length === 0) {
      out.set(secretKey, Buffer.alloc(0));
      continue;
    }
    try {
      out.set(secretKey, decryptBytes(sealed, key));
    } catch (e) {
      throw new Error(
        `error decoding secret data with provided key: entry "${secretKey}" of Secret kube-system/${KUBEADM_CERTS_SECRET} does not decrypt (wrong certificate key, or corrupted data)`,
        { cause: e },
      );
    }
  }
  return out;
}

const PRIVATE_KEY_TYPES = new Set(["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"]);

function parses(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}

/**
 * How download-certs writes a value (writeCertOrKey, since kubernetes#103313): data holding a
 * private key is a key file (0600, keyutil.WriteKey); data holding public keys or certificates
 * is public (0644, certutil.WriteCert); anything else is refused.
 */
export function certFileMode(data: Uint8Array): 0o600 | 0o644 {
  const blocks = pemDecodeAll(data);
  const isPrivate = blocks.some(
    (b) =>
      PRIVATE_KEY_TYPES.has(b.type) &&
      parses(() =>
        createPrivateKey({
          key: b.der,
          format: "der",
          type:
            b.type === "PRIVATE KEY" ? "pkcs8" : b.type === "RSA PRIVATE KEY" ? "pkcs1" : "sec1",
        }),
      ),
  );
  if (isPrivate) return 0o600;
  const isPublic = blocks.some(
    (b) =>
      (b.type === "CERTIFICATE" && parses(() => new X509Certificate(b.der))) ||
      (b.type === "PUBLIC KEY" &&
        parses(() => createPublicKey({ key: b.der, format: "der", type: "spki" }))) ||
      (b.type === "RSA PUBLIC KEY" &&
        parses(() => createPublicKey({ key: b.der, format: "der", type: "pkcs1" }))),
  );
  if (isPublic) return 0o644;
  throw new Error("unknown data found in Secret entry");
}

export interface CertFile {
  path: string;
  data: Buffer;
  mode: 0o600 | 0o644;
}

/**
 * The files download-certs writes (DownloadCerts): one per transfer whose value is not empty.
 * A transfer missing from the Secret is an error naming it, as kubeadm's.
 */
export function kubeadmCertFiles(
  decoded: ReadonlyMap<string, Buffer>,
  transfers: readonly CertTransfer[],
): CertFile[] {
  const files: CertFile[] = [];
  for (const t of transfers) {
    const data = decoded.get(t.secretKey);
    if (data === undefined) {
      throw new Error(
        `the Secret does not include the required certificate or key - name: ${t.name}, path: ${t.path}`,
      );
    }
    if (data.length === 0) continue; // kubeadm: "Not saving ... since it is empty in the Secret"
    let mode: 0o600 | 0o644;
    try {
      mode = certFileMode(data);
    } catch (e) {
      throw new Error(`${(e as Error).message} "${t.secretKey}" (for ${t.path})`, { cause: e });
    }
    files.push({ path: t.path, data, mode });
  }
  return files;
}
