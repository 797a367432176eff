import { formatGoDuration } from "../../config/duration.js";
import { DEFAULT_CLUSTER_NAME } from "../../config/defaults.js";
import { clusterCAData, clusterOf } from "../../kubeconfig/bootstrap.js";
import { createBasic } from "../../kubeconfig/build.js";
import type { KubeConfig } from "../../kubeconfig/types.js";
import { detachedTokenIsValid } from "../../pki/jws.js";
import { pemDecodeAll } from "../../pki/pem.js";
import { PinSet, certificateHash } from "../../pki/pin.js";
import { parseBootstrapToken, type BootstrapTokenString } from "../../pki/token.js";
import type { Route } from "../../remote/route.js";
import { poll, PollTimeoutError } from "../poll.js";
import type { KubeClient, KubeObject } from "../types.js";
import {
  CLUSTER_INFO_REF,
  DISCOVERY_REQUEST_TIMEOUT_MS,
  DISCOVERY_RETRY_INTERVAL_MS,
  defaultClientFactory,
  kubeconfigText,
  loadKubeConfig,
  requirePositive,
  type ClientFactory,
} from "./common.js";

// Token discovery (kubeadm: discovery/token/token.go RetrieveValidatedConfigInfo, v1beta4 era):
// read kube-public/cluster-info anonymously without checking TLS, wait for the BootstrapSigner's
// signature for our token, check it, check the CA it carries against the pinned public keys,
// then read it again over TLS verified with that CA and require the very same bytes.

/** token.BootstrapUser: the user of the discovery clients (no credentials: anonymous). */
export const TOKEN_BOOTSTRAP_USER = "token-bootstrap-client";

/** bootstrapapi.KubeConfigKey and bootstrapapi.JWSSignatureKeyPrefix. */
const KUBECONFIG_KEY = "kubeconfig";
const JWS_KEY_PREFIX = "jws-kubeconfig-";

const SOURCE = "the kubeconfig in the cluster-info ConfigMap";

export interface DiscoveryOptions {
  /** host:port of the API server to ask (JoinConfiguration.discovery.bootstrapToken.apiServerEndpoint). */
  apiServerEndpoint: string;
  /** The bootstrap token "<id>.<secret>"; the secret is never printed. */
  token: string;
  /** "sha256:<hex>" public key pins of the cluster CA. */
  caCertHashes: string[];
  /** Allows an empty caCertHashes (--discovery-token-unsafe-skip-ca-verification). */
  unsafeSkipCAVerification: boolean;
  /** JoinConfiguration.timeouts.discovery: bounds each of the two waits for cluster-info. */
  timeoutMs: number;
  /** Between attempts; kubeadm: 5 s (capped at the timeout). */
  intervalMs?: number;
  /** Progress lines (kubeadm prints them at --v=1). */
  log: (line: string) => void;
  /** Builds the discovery clients; default kube/client.ts. */
  clientFor?: ClientFactory;
  /** How the joining node reaches the endpoint from this process; default directly. */
  route?: Route;
}

/** The last thing a cluster-info attempt ran into, kept for the timeout message. */
class MissingSignature extends Error {}

/**
 * kubeadm's getClusterInfo: GET cluster-info until it carries the token's JWS key. Request
 * errors and a missing key are retried every interval until the timeout.
 */
async function getClusterInfo(
  client: KubeClient,
  tokenID: string,
  server: string,
  timing: { intervalMs: number; timeoutMs: number },
  log: (line: string) => void,
): Promise<KubeObject> {
  try {
    return await poll(
      async () => {
        log(
          `[discovery] Waiting for the cluster-info ConfigMap to receive a JWS signature for token ID "${tokenID}"`,
        );
        let cm: KubeObject;
        try {
          cm = await client.get(CLUSTER_INFO_REF);
        } catch (e) {
          log(`[discovery] Retrying due to error: ${(e as Error).message}`);
          throw e;
        }
        if (dataOf(cm)[JWS_KEY_PREFIX + tokenID] === undefined) {
          const missing = new MissingSignature(
            `could not find a JWS signature in the cluster-info ConfigMap for token ID "${tokenID}"`,
          );
          log(`[discovery] Retrying due to error: ${missing.message}`);
          throw missing;
        }
        return cm;
      },
      { ...timing, what: "the cluster-info ConfigMap" },
    );
  } catch (e) {
    if (!(e instanceof PollTimeoutError)) throw e;
    const within = formatGoDuration(timing.timeoutMs);
    if (e.lastError instanceof MissingSignature) {
      throw new Error(
        `token id "${tokenID}" is invalid for this cluster or it has expired: no JWS signature ` +
          `for it appeared in the cluster-info ConfigMap of ${server} within ${within} ` +
          `(use "kubeadm token create" on a control-plane node to create a new valid token)`,
        { cause: e },
      );
    }
    const last = e.lastError instanceof Error ? `: ${e.lastError.message}` : "";
    throw new Error(
      `could not read the cluster-info ConfigMap from ${server} within ${within}${last}`,
      {
        cause: e,
      },
    );
  }
}

function dataOf(cm: KubeObject): Record<string, string | undefined> {
  const data = cm.data;
  return data && typeof data === "object" ? (data as Record<string, string>) : {};
}

/** kubeadm's validateClusterInfoToken: the kubeconfig string, once its signature is checked. */
function validateClusterInfoToken(cm: KubeObject, token: BootstrapTokenString): string {
  const data = dataOf(cm);
  const kubeconfig = data[KUBECONFIG_KEY];
  if (!kubeconfig) {
    throw new Error(
      `there is no ${KUBECONFIG_KEY} key in the cluster-info ConfigMap: this API server isn't set up for token bootstrapping`,
    );
  }
  const signature = data[JWS_KEY_PREFIX + token.id];
  if (!signature) {
    throw new Error(
      `token id "${token.id}" is invalid for this cluster or it has expired (use "kubeadm token create" on a control-plane node to create a new valid token)`,
    );
  }
  if (!detachedTokenIsValid(signature, kubeconfig, token.id, token.secret)) {
    throw new Error(
      `failed to verify the JWS signature of the cluster-info ConfigMap for token ID "${token.id}": this API server can't be trusted`,
    );
  }
  return kubeconfig;
}

/** kubeadm's validateClusterCA: the CA bundle of cluster-info, once one of its keys is pinned. */
function validateClusterCA(config: KubeConfig, pins: PinSet, hashes: string[]): Buffer {
  const bundle = clusterCAData(clusterOf(config)!.cluster);
  const ders = pemDecodeAll(bundle)
    // certutil.ParseCertsPEM: only CERTIFICATE blocks without headers; other text is ignored.
    .filter((b) => b.type === "CERTIFICATE" && Object.keys(b.headers).length === 0)
    .map((b) => b.der);
  if (ders.length === 0) {
    throw new Error(
      "failed to parse the cluster CA from the cluster-info ConfigMap: its certificate-authority-data holds no PEM certificate",
    );
  }
  let found: string[];
  try {
    found = ders.map((der) => certificateHash(der));
  } catch (e) {
    throw new Error(
      `failed to parse the cluster CA from the cluster-info ConfigMap: ${(e as Error).message}`,
      { cause: e },
    );
  }
  try {
    pins.checkAny(ders);
  } catch (e) {
    throw new Error(
      `the cluster CA found in the cluster-info ConfigMap is not pinned: its public key hashes ` +
        `are ${found.join(", ")} but the pinned ones are ${hashes.join(", ")}`,
      { cause: e },
    );
  }
  return bundle;
}

/** BuildInsecureBootstrapKubeConfig: https://<endpoint>, no CA, no TLS check, no credentials. */
export function insecureBootstrapKubeConfig(endpoint: string): KubeConfig {
  const config = createBasic(`https://${endpoint}`, DEFAULT_CLUSTER_NAME, TOKEN_BOOTSTRAP_USER, "");
  for (const c of config.clusters) {
    delete c.cluster["certificate-authority-data"];
    c.cluster["insecure-skip-tls-verify"] = true;
  }
  return config;
}

/** buildSecureBootstrapKubeConfig: the same endpoint, TLS verified with the pinned CA bundle. */
export function secureBootstrapKubeConfig(endpoint: string, caBundle: Uint8Array): KubeConfig {
  return createBasic(`https://${endpoint}`, DEFAULT_CLUSTER_NAME, TOKEN_BOOTSTRAP_USER, caBundle);
}

/**
 * Token discovery: the cluster-info kubeconfig (its server is the cluster's
 * controlPlaneEndpoint, not necessarily the endpoint asked). A signature that does not verify
 * or a CA that matches no pin fails at once; only a missing signature or an unreachable API
 * server is waited out, up to the timeout.
 */
export async function discoverWithToken(o: DiscoveryOptions): Promise<KubeConfig> {
  const token = parseBootstrapToken(o.token);
  if (!token) {
    // Never echo the value: it is a credential.
    throw new Error(`the discovery token does not have the form "[a-z0-9]{6}.[a-z0-9]{16}"`);
  }
  if (!o.apiServerEndpoint) {
    throw new Error("token discovery needs the API server endpoint (host:port) to ask");
  }
  const pins = new PinSet();
  try {
    pins.allow(...o.caCertHashes);
  } catch (e) {
    throw new Error(`invalid discovery token CA certificate hash: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (pins.isEmpty() && !o.unsafeSkipCAVerification) {
    // kubeadm's validation (ValidateDiscoveryBootstrapToken) refuses this before discovery.
    throw new Error(
      "using token-based discovery without caCertHashes can be unsafe: set unsafeSkipCAVerification " +
        "to true in the JoinConfiguration or pass --discovery-token-unsafe-skip-ca-verification to continue",
    );
  }
  const timeoutMs = requirePositive(o.timeoutMs, "the discovery timeout");
  // kubeadm: "Make sure the interval is not bigger than the duration".
  const intervalMs = Math.min(o.intervalMs ?? DISCOVERY_RETRY_INTERVAL_MS, timeoutMs);
  const timing = { intervalMs, timeoutMs };
  const requestTimeoutMs = Math.min(DISCOVERY_REQUEST_TIMEOUT_MS, timeoutMs);
  const clientFor = o.clientFor ?? defaultClientFactory;
  const endpoint = o.apiServerEndpoint;
  const server = `https://${endpoint}`;

  o.log(`[discovery] Created cluster-info discovery client, requesting info from "${endpoint}"`);
  const insecureClient = await clientFor(kubeconfigText(insecureBootstrapKubeConfig(endpoint)), {
    description: `the anonymous discovery client of ${server}`,
    requestTimeoutMs,
    ...(o.route ? { route: o.route } : {}),
  });
  const insecureInfo = await getClusterInfo(insecureClient, token.id, server, timing, o.log);
  const insecureKubeconfig = validateClusterInfoToken(insecureInfo, token);
  const insecureConfig = loadClusterInfoKubeConfig(insecureKubeconfig);

  if (pins.isEmpty()) {
    o.log(
      `[discovery] Cluster info signature and contents are valid and no TLS pinning was specified, will use API Server "${endpoint}"`,
    );
    return insecureConfig;
  }

  const caBundle = validateClusterCA(insecureConfig, pins, o.caCertHashes);
  o.log(
    `[discovery] Requesting info from "${endpoint}" again to validate TLS against the pinned public key`,
  );
  const secureClient = await clientFor(
    kubeconfigText(secureBootstrapKubeConfig(endpoint, caBundle)),
    {
      description: `the discovery client of ${server} trusting the pinned CA`,
      requestTimeoutMs,
      ...(o.route ? { route: o.route } : {}),
    },
  );
  const secureInfo = await getClusterInfo(secureClient, token.id, server, timing, o.log);
  const secureKubeconfig = dataOf(secureInfo)[KUBECONFIG_KEY] ?? "";
  if (!Buffer.from(secureKubeconfig, "utf8").equals(Buffer.from(insecureKubeconfig, "utf8"))) {
    throw new Error(
      "the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first",
    );
  }
  const secureConfig = loadClusterInfoKubeConfig(secureKubeconfig);
  o.log(
    `[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server "${endpoint}"`,
  );
  return secureConfig;
}

function loadClusterInfoKubeConfig(text: string): KubeConfig {
  const config = loadKubeConfig(text, SOURCE);
  if (!clusterOf(config)) {
    throw new Error(
      `${SOURCE} is malformed: it has neither an unnamed cluster nor a current context naming a cluster`,
    );
  }
  return config;
}
