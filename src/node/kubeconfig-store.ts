import type { KeyObject } from "node:crypto";
import type { EncryptionAlgorithm } from "../config/types.js";
import { newKubeConfigFile } from "../kubeconfig/build.js";
import type { KubeConfigFileSpec } from "../kubeconfig/specs.js";
import { validateKubeConfig } from "../kubeconfig/validate.js";
import type { LoadedCA } from "../pki/issue.js";
import type { KeySource } from "../pki/key-source.js";
import { KUBECONFIG_FILE_MODE, hostPath } from "../pki/paths.js";
import { readFileIfExists, type Host } from "../remote/host.js";
import type { Logger } from "../types/logger.js";

// Kubeconfig files on a host (kubeadm: phases/kubeconfig/kubeconfig.go
// createKubeConfigFileIfNotExists): reuse a valid file, else write a new one with a fresh
// client certificate (built by kubeconfig/build.ts). All I/O goes through the Host.

export interface KubeConfigTarget {
  host: Host;
  /** Where the files live: /etc/kubernetes. */
  dir: string;
  log: Logger;
  now: Date;
}

export interface KubeConfigWriter extends KubeConfigTarget {
  clusterName: string;
  keys: KeySource;
  algorithm: EncryptionAlgorithm;
  /** NotAfter of new client certificates (now + certificateValidityPeriod). */
  clientCertNotAfter: Date;
  /** Whether the release's clientcmd writes `preferences: {}`. */
  preferences: boolean;
}

async function checkExisting(
  target: KubeConfigTarget,
  path: string,
  data: Buffer,
  server: string,
  ca: LoadedCA,
): Promise<void> {
  await validateKubeConfig(
    data,
    path,
    { caCert: ca.cert, caCertPath: ca.certPath, server },
    {
      now: target.now,
      readFile: (p) => readFileIfExists(target.host, p),
      warn: (m) => target.log.warn(m),
    },
  );
}

/**
 * Writes `spec`'s kubeconfig unless a valid one exists. The client certificate is signed by
 * the cluster CA with clientAuth; its NotBefore is the CA's NotBefore, as kubeadm leaves it.
 */
export async function ensureKubeConfigFile(
  writer: KubeConfigWriter,
  spec: KubeConfigFileSpec,
  server: string,
  ca: LoadedCA & { key: KeyObject },
): Promise<void> {
  const path = hostPath(writer.dir, spec.fileName);
  const existing = await readFileIfExists(writer.host, path);
  if (existing !== undefined) {
    await checkExisting(writer, path, existing, server, ca);
    writer.log.info(`Using existing kubeconfig file: "${path}"`);
    return;
  }
  const text = await newKubeConfigFile(spec, {
    server,
    clusterName: writer.clusterName,
    ca: { cert: ca.cert, key: ca.key },
    keys: await writer.keys.take(writer.algorithm),
    clientCertNotAfter: writer.clientCertNotAfter,
    preferences: writer.preferences,
  });
  writer.log.info(`Writing "${spec.fileName}" kubeconfig file`);
  await writer.host.writeFile(path, text, KUBECONFIG_FILE_MODE);
}

/**
 * External CA mode (kubeadm's ValidateKubeconfigsForExternalCA): kubeforge cannot sign, so
 * the user must have provided the file, trusting the cluster CA.
 */
export async function checkUserProvidedKubeConfig(
  target: KubeConfigTarget,
  spec: KubeConfigFileSpec,
  server: string,
  ca: LoadedCA,
): Promise<void> {
  const path = hostPath(target.dir, spec.fileName);
  const existing = await readFileIfExists(target.host, path);
  if (existing === undefined) {
    throw new Error(
      `external CA mode: ${ca.keyPath} is absent, so ${path} must be provided (kubeforge cannot sign its client certificate)`,
    );
  }
  await checkExisting(target, path, existing, server, ca);
}

/** How many kubeconfig files (hence client keys) are missing. */
export async function plannedKubeConfigKeys(
  host: Host,
  dir: string,
  specs: readonly KubeConfigFileSpec[],
): Promise<number> {
  const present = await Promise.all(specs.map((s) => host.exists(hostPath(dir, s.fileName))));
  return present.filter((p) => !p).length;
}
