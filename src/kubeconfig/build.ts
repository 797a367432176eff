import type { KeyObject } from "node:crypto";
import { toYAML } from "../config/yaml.js";
import { newSignedCert, type Certificate } from "../pki/certs.js";
import type { KeyPair } from "../pki/key-source.js";
import { privateKeyToPEM } from "../pki/keys.js";
import type { KubeConfigFileSpec } from "./specs.js";
import type { KubeConfig, KubeConfigUser } from "./types.js";

// kubeadm's kubeconfig builders (kubeadm: util/kubeconfig/kubeconfig.go CreateBasic,
// CreateWithCerts, CreateWithToken): one cluster, one user, one context named
// "<user>@<cluster>" that is also the current context.

function b64(data: string | Uint8Array): string {
  return Buffer.from(data).toString("base64");
}

/** CreateBasic: cluster and context, no credentials yet. */
export function createBasic(
  serverURL: string,
  clusterName: string,
  userName: string,
  caCertPEM: string | Uint8Array,
): KubeConfig {
  const contextName = `${userName}@${clusterName}`;
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: clusterName,
        cluster: { "certificate-authority-data": b64(caCertPEM), server: serverURL },
      },
    ],
    contexts: [{ name: contextName, context: { cluster: clusterName, user: userName } }],
    "current-context": contextName,
    preferences: {},
    users: [],
  };
}

function withUser(config: KubeConfig, userName: string, user: KubeConfigUser): KubeConfig {
  return { ...config, users: [{ name: userName, user }] };
}

/** CreateWithCerts: a kubeconfig authenticating with an embedded client certificate and key. */
export function createWithCerts(
  serverURL: string,
  clusterName: string,
  userName: string,
  caCertPEM: string | Uint8Array,
  clientKeyPEM: string | Uint8Array,
  clientCertPEM: string | Uint8Array,
): KubeConfig {
  return withUser(createBasic(serverURL, clusterName, userName, caCertPEM), userName, {
    "client-certificate-data": b64(clientCertPEM),
    "client-key-data": b64(clientKeyPEM),
  });
}

/** CreateWithToken: a kubeconfig authenticating with a bearer token (bootstrap-kubelet.conf). */
export function createWithToken(
  serverURL: string,
  clusterName: string,
  userName: string,
  caCertPEM: string | Uint8Array,
  token: string,
): KubeConfig {
  return withUser(createBasic(serverURL, clusterName, userName, caCertPEM), userName, { token });
}

/**
 * The file content, laid out as clientcmd.Write does (keys sorted, lists unindented), with the
 * empty `preferences: {}` only for releases whose client-go still wrote it.
 */
export function renderKubeConfig(config: KubeConfig, opts: { preferences: boolean }): string {
  const { preferences: _omitted, ...rest } = config;
  return toYAML(opts.preferences ? { ...rest, preferences: {} } : rest);
}

/**
 * The text of a kubeconfig file for `spec` (kubeadm: phases/kubeconfig buildKubeConfigFromSpec):
 * a client certificate for its user signed by the cluster CA with clientAuth, its NotBefore
 * the CA's, as kubeadm leaves it.
 */
export async function newKubeConfigFile(
  spec: KubeConfigFileSpec,
  opts: {
    server: string;
    clusterName: string;
    ca: { cert: Certificate; key: KeyObject };
    keys: KeyPair;
    /** NotAfter of the client certificate (now + certificateValidityPeriod). */
    clientCertNotAfter: Date;
    /** Whether the release's clientcmd writes `preferences: {}`. */
    preferences: boolean;
  },
): Promise<string> {
  const cert = await newSignedCert(
    {
      commonName: spec.clientName,
      organization: spec.organizations,
      extKeyUsages: ["clientAuth"],
      notAfter: opts.clientCertNotAfter,
    },
    opts.keys.publicKey,
    opts.ca,
  );
  const config = createWithCerts(
    opts.server,
    opts.clusterName,
    spec.clientName,
    opts.ca.cert.pem,
    privateKeyToPEM(opts.keys.privateKey),
    cert.pem,
  );
  return renderKubeConfig(config, opts);
}
