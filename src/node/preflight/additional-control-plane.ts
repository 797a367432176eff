// Whether a cluster can take one more control plane, and this node has what it must share with
// the others: kubeadm's checkIfReadyForAdditionalControlPlane (cmd/phases/join/preflight.go) and
// certs.SharedCertificateExists with validateCACert, validateCACertAndKey and
// validatePrivatePublicKey (phases/certs/certs.go, kubernetes/kubernetes ≈ v1.35).
import type { InitConfig } from "../../config/types.js";
import type { Host } from "../../remote/host.js";
import { type Certificate, parseCertificatesPEM } from "../../pki/certs.js";
import { parsePrivateKeyPEM, parsePublicKeyPEM } from "../../pki/keys.js";
import {
  CA_BASE_NAME,
  ETCD_CA_BASE_NAME,
  FRONT_PROXY_CA_BASE_NAME,
  SERVICE_ACCOUNT_KEY_BASE_NAME,
  certFile,
  keyFile,
  publicKeyFile,
} from "../../pki/paths.js";

type ClusterView = Pick<InitConfig["cluster"], "controlPlaneEndpoint" | "etcd" | "certificatesDir">;

export interface SharedCertificatesInput {
  host: Host;
  cluster: ClusterView;
  now: Date;
  /** kubeadm's klog warnings: a CA without its key, a CA outside its validity period. */
  warn: (line: string) => void;
}

/** kubeadm's notReadyToJoinControlPlaneTemp, around the reason. */
export function notReadyForControlPlane(reason: string): string {
  return [
    "One or more conditions for hosting a new control plane instance is not satisfied.",
    "",
    reason,
    "",
    "Please ensure that:",
    "* The cluster has a stable controlPlaneEndpoint address.",
    "* The certificates that must be shared among control plane instances are provided.",
  ].join("\n");
}

/** Go's os.Open error text for the common cases; anything else keeps its own message. */
function openError(path: string, e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return `open ${path}: no such file or directory`;
  if (code === "EACCES") return `open ${path}: permission denied`;
  return (e as Error).message;
}

async function read(host: Host, path: string, what: string): Promise<Buffer> {
  try {
    return await host.readFile(path);
  } catch (e) {
    throw new Error(`couldn't load the ${what} file ${path}: ${openError(path, e)}`, { cause: e });
  }
}

/** pkiutil.TryLoadCertFromDisk: the first certificate of the file. */
async function loadCert(host: Host, path: string): Promise<Certificate> {
  const data = await read(host, path, "certificate");
  try {
    return parseCertificatesPEM(data, path)[0]!;
  } catch (e) {
    throw new Error(`couldn't load the certificate file ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

async function loadPrivateKey(host: Host, path: string): Promise<void> {
  const data = await read(host, path, "private key");
  try {
    parsePrivateKeyPEM(data, path);
  } catch (e) {
    throw new Error(`couldn't load the private key file ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

async function loadPublicKey(host: Host, path: string): Promise<void> {
  const data = await read(host, path, "public key");
  try {
    parsePublicKeyPEM(data, path);
  } catch (e) {
    throw new Error(`couldn't load the public key file ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/**
 * validateCACertAndKey: the certificate must load and be a CA; outside its validity period it
 * only warns (CheckCertificatePeriodValidity); a key that does not load only warns, as kubeadm
 * then assumes an external CA whose key stays elsewhere.
 */
async function validateCA(
  input: SharedCertificatesInput,
  baseName: string,
  uxName: string,
): Promise<string | undefined> {
  const { host, cluster, now, warn } = input;
  let cert: Certificate;
  try {
    cert = await loadCert(host, certFile(cluster.certificatesDir, baseName));
  } catch (e) {
    return `failure loading certificate for ${uxName}: ${(e as Error).message}`;
  }
  const period = `NotBefore: ${cert.notBefore.toISOString()}, NotAfter: ${cert.notAfter.toISOString()}`;
  if (now < cert.notBefore) {
    warn(
      `WARNING: could not validate bounds for certificate ${uxName}: the certificate is not valid yet: ${period}`,
    );
  } else if (now > cert.notAfter) {
    warn(
      `WARNING: could not validate bounds for certificate ${uxName}: the certificate has expired: ${period}`,
    );
  }
  if (!cert.isCA) return `certificate ${uxName} is not a CA`;
  try {
    await loadPrivateKey(host, keyFile(cluster.certificatesDir, baseName));
  } catch (e) {
    warn(`assuming external key for ${uxName}: ${(e as Error).message}`);
  }
  return undefined;
}

/** validatePrivatePublicKey for the service-account key pair. */
async function validateServiceAccountKeys(
  input: SharedCertificatesInput,
): Promise<string | undefined> {
  const dir = input.cluster.certificatesDir;
  try {
    await loadPrivateKey(input.host, keyFile(dir, SERVICE_ACCOUNT_KEY_BASE_NAME));
    await loadPublicKey(input.host, publicKeyFile(dir, SERVICE_ACCOUNT_KEY_BASE_NAME));
    return undefined;
  } catch (e) {
    return `failure loading key for service account: ${(e as Error).message}`;
  }
}

/** apimachinery's aggregate error text: one message as is, several as "[a, b]", duplicates once. */
function aggregate(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(", ")}]`;
}

/**
 * kubeadm's SharedCertificateExists: every problem with the certificates control planes share
 * (the cluster CA, the service-account keys, the front-proxy CA and, for stacked etcd, the etcd
 * CA), as one aggregate message; undefined when they are all usable.
 */
export async function sharedCertificateProblems(
  input: SharedCertificatesInput,
): Promise<string | undefined> {
  const problems = [
    await validateCA(input, CA_BASE_NAME, "CA"),
    await validateServiceAccountKeys(input),
    await validateCA(input, FRONT_PROXY_CA_BASE_NAME, "front-proxy CA"),
    input.cluster.etcd.external === undefined
      ? await validateCA(input, ETCD_CA_BASE_NAME, "etcd CA")
      : undefined,
  ].filter((p): p is string => p !== undefined);
  return problems.length === 0 ? undefined : aggregate(problems);
}

/**
 * checkIfReadyForAdditionalControlPlane: the cluster needs a controlPlaneEndpoint (several API
 * servers need one address), and without --certificate-key the shared certificates must already
 * be on the node. Throws kubeadm's "One or more conditions ..." message.
 */
export async function requireReadyForAdditionalControlPlane(
  input: SharedCertificatesInput,
  hasCertificateKey: boolean,
): Promise<void> {
  if (!input.cluster.controlPlaneEndpoint) {
    throw new Error(
      notReadyForControlPlane(
        "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address",
      ),
    );
  }
  if (hasCertificateKey) return;
  const problems = await sharedCertificateProblems(input);
  if (problems !== undefined) throw new Error(notReadyForControlPlane(problems));
}
