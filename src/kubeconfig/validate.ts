import { parseCertificatesPEM, type Certificate } from "../pki/certs.js";
import { hostPath } from "../pki/paths.js";
import { currentEntries, decodeData, parseKubeConfig } from "./parse.js";

// Whether an existing kubeconfig may be reused (kubeadm: phases/kubeconfig/kubeconfig.go
// validateKubeConfig): it must trust the same CA (else an error); a different server URL is
// only a warning, as kubeadm. kubeforge also refuses an embedded client certificate that is
// not signed by that CA or has expired: such a file can no longer authenticate.

export interface ExpectedKubeConfig {
  caCert: Certificate;
  caCertPath: string;
  server: string;
}

export interface ValidateKubeConfigOptions {
  now: Date;
  /** Reads a file a kubeconfig refers to (certificate-authority, client-certificate). */
  readFile: (path: string) => Promise<Buffer | undefined>;
  warn: (message: string) => void;
}

function resolveAgainst(file: string, path: string): string {
  if (path.startsWith("/")) return path;
  return hostPath(file.slice(0, file.lastIndexOf("/")) || "/", path);
}

export async function validateKubeConfig(
  text: string | Uint8Array,
  file: string,
  expected: ExpectedKubeConfig,
  opts: ValidateKubeConfigOptions,
): Promise<void> {
  const config = parseKubeConfig(text, file);
  const { cluster, user } = currentEntries(config, file);

  let caData = decodeData(cluster["certificate-authority-data"]);
  if ((!caData || caData.toString().trim() === "") && cluster["certificate-authority"]) {
    const caFile = resolveAgainst(file, cluster["certificate-authority"]);
    caData = await opts.readFile(caFile);
    if (!caData) opts.warn(`failed to load CA cert from "${caFile}" for kubeconfig "${file}"`);
  }
  let ca: Certificate | undefined;
  try {
    ca = caData ? parseCertificatesPEM(caData, file)[0] : undefined;
  } catch {
    ca = undefined;
  }
  if (!ca || !ca.der.equals(expected.caCert.der)) {
    throw new Error(`a kubeconfig file "${file}" exists already but has got the wrong CA cert`);
  }

  if (cluster.server !== expected.server) {
    opts.warn(
      `a kubeconfig file "${file}" exists already but has an unexpected API Server URL: expected: ${expected.server}, got: ${cluster.server}`,
    );
  }

  let certData = decodeData(user?.["client-certificate-data"]);
  if (!certData && user?.["client-certificate"]) {
    certData = await opts.readFile(resolveAgainst(file, user["client-certificate"]));
  }
  if (!certData) return; // token or exec credentials: nothing kubeforge can check offline
  const clientCert = parseCertificatesPEM(certData, `the client certificate in ${file}`)[0]!;
  if (!clientCert.isSignedBy(expected.caCert)) {
    throw new Error(`the client certificate in ${file} is not signed by ${expected.caCertPath}`);
  }
  if (opts.now.getTime() > clientCert.notAfter.getTime()) {
    throw new Error(
      `the client certificate in ${file} has expired: it was valid until ${clientCert.notAfter.toISOString()}`,
    );
  }
}
