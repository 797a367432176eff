import { KUBERNETES_DIR } from "../config/paths.js";

// Host paths of kubeadm's PKI and kubeconfig files (kubeadm: constants/constants.go).
// Every phase that names one of these files uses the helpers here, so the file names
// and the cert-dir layout are written down once. The directories themselves are in
// config/paths.ts.

/** Base name of the service-account signing key pair (sa.key, sa.pub). */
export const SERVICE_ACCOUNT_KEY_BASE_NAME = "sa";
export const CA_BASE_NAME = "ca";
export const FRONT_PROXY_CA_BASE_NAME = "front-proxy-ca";
export const ETCD_CA_BASE_NAME = "etcd/ca";

/** Joins host path segments with "/" (host paths are POSIX even when kubeforge is not). */
export function hostPath(dir: string, name: string): string {
  return `${dir.replace(/\/+$/, "")}/${name}`;
}

/** "<certDir>/<baseName>.crt" — kubeadm's pathForCert. */
export function certFile(certDir: string, baseName: string): string {
  return hostPath(certDir, `${baseName}.crt`);
}

/** "<certDir>/<baseName>.key" — kubeadm's pathForKey. */
export function keyFile(certDir: string, baseName: string): string {
  return hostPath(certDir, `${baseName}.key`);
}

/** "<certDir>/<baseName>.pub" — kubeadm's pathForPublicKey. */
export function publicKeyFile(certDir: string, baseName: string): string {
  return hostPath(certDir, `${baseName}.pub`);
}

/** "/etc/kubernetes/<name>" for a kubeconfig file name such as "admin.conf". */
export function kubeconfigFile(name: string, dir: string = KUBERNETES_DIR): string {
  return hostPath(dir, name);
}

// File modes as client-go writes them: certutil.WriteCert (0644), keyutil.WriteKey (0600, also
// used for sa.pub), clientcmd.WriteToFile (0600); parent directories are created 0755.
export const CERT_FILE_MODE = 0o644;
export const KEY_FILE_MODE = 0o600;
export const KUBECONFIG_FILE_MODE = 0o600;
export const CERT_DIR_MODE = 0o755;
