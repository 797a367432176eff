import type { Discovery } from "../../config/types.js";
import {
  clusterCAData,
  clusterOf,
  tlsBootstrapKubeConfig,
  type ClusterEntry,
} from "../../kubeconfig/bootstrap.js";
import type { KubeConfig } from "../../kubeconfig/types.js";
import type { Route } from "../../remote/route.js";
import type { ClientFactory } from "./common.js";
import { discoverFromFile, discoveryFileLocation } from "./file.js";
import { discoverWithToken } from "./token.js";

// kubeadm's discovery package (discovery/discovery.go): pick the mechanism the
// JoinConfiguration's discovery section names, and turn what it validated into the kubeconfig
// the kubelet TLS-bootstraps with.

export { DISCOVERY_RETRY_INTERVAL_MS, type ClientFactory } from "./common.js";
export {
  discoverFromFile,
  discoveryFileLocation,
  kubeConfigProblems,
  type DiscoveryFileLocation,
  type FileDiscoveryOptions,
} from "./file.js";
export { discoveryTrustStore, downloadDiscoveryFile, type HttpsDownloadOptions } from "./https.js";
export {
  TOKEN_BOOTSTRAP_USER,
  discoverWithToken,
  insecureBootstrapKubeConfig,
  secureBootstrapKubeConfig,
  type DiscoveryOptions,
} from "./token.js";

export interface DiscoverOptions {
  /** JoinConfiguration.timeouts.discovery. */
  timeoutMs: number;
  /** Between attempts; kubeadm: 5 s. */
  intervalMs?: number;
  /** Progress lines (kubeadm prints them at --v=1). */
  log: (line: string) => void;
  /** Warnings; default `log`. */
  warn?: (line: string) => void;
  /** Reads a discovery file (and the files it refers to) on the joining node. */
  readFile(path: string): Promise<Buffer>;
  /** PEM CAs trusted for an https:// discovery URL besides the host's store. */
  extraCACerts?: string | Buffer | readonly (string | Buffer)[];
  /** Builds API clients; default kube/client.ts. */
  clientFor?: ClientFactory;
  /**
   * How the joining node's connections (cluster-info, an https discovery file) leave this
   * process (remote/route.ts); default directly.
   */
  route?: Route;
}

export type DiscoveryMethod = "token" | "file" | "https";

export interface DiscoveryResult {
  method: DiscoveryMethod;
  /**
   * The validated kubeconfig: cluster-info's for token discovery, the discovery file (CA and
   * credentials embedded, CA filled in from cluster-info when it had none) otherwise.
   */
  config: KubeConfig;
  /** Its cluster as kubeadm picks it (GetClusterFromKubeConfig). */
  cluster: ClusterEntry;
  /** The cluster's API server URL. */
  server: string;
  /** The cluster's CA bundle (PEM); empty when the discovery file trusts the host's store. */
  caPEM: Buffer;
}

/**
 * kubeadm's DiscoverValidatedKubeConfig: file discovery when `discovery.file` is set (an
 * https:// URL is downloaded), else token discovery. Errors are kubeadm's, unwrapped.
 */
export async function discover(
  discovery: Discovery,
  opts: DiscoverOptions,
): Promise<DiscoveryResult> {
  let method: DiscoveryMethod;
  let config: KubeConfig;
  if (discovery.file) {
    const path = discovery.file.kubeConfigPath;
    method = discoveryFileLocation(path).kind;
    config = await discoverFromFile(path, opts);
  } else if (discovery.bootstrapToken) {
    const bt = discovery.bootstrapToken;
    method = "token";
    config = await discoverWithToken({
      apiServerEndpoint: bt.apiServerEndpoint ?? "",
      token: bt.token ?? "",
      caCertHashes: bt.caCertHashes ?? [],
      unsafeSkipCAVerification: bt.unsafeSkipCAVerification === true,
      timeoutMs: opts.timeoutMs,
      ...(opts.intervalMs === undefined ? {} : { intervalMs: opts.intervalMs }),
      log: opts.log,
      ...(opts.clientFor ? { clientFor: opts.clientFor } : {}),
      ...(opts.route ? { route: opts.route } : {}),
    });
  } else {
    throw new Error(
      "couldn't find a valid discovery configuration: set discovery.bootstrapToken or discovery.file",
    );
  }
  const cluster = clusterOf(config)!;
  return {
    method,
    config,
    cluster,
    server: cluster.cluster.server,
    caPEM: clusterCAData(cluster.cluster),
  };
}

export interface TLSBootstrapDiscovery extends DiscoveryResult {
  /** bootstrap-kubelet.conf's content (before ControlPlaneKubeletLocalMode rewrites its server). */
  tlsBootstrap: KubeConfig;
}

/**
 * kubeadm's discovery.For: discovery, then the TLS bootstrap kubeconfig made with
 * `discovery.tlsBootstrapToken` (v1beta4 defaults it to the discovery token), or the discovery
 * file's own credentials. Every failure reads "couldn't validate the identity of the API
 * Server: ..." as kubeadm's.
 */
export async function discoverTLSBootstrapConfig(
  discovery: Discovery,
  opts: DiscoverOptions,
): Promise<TLSBootstrapDiscovery> {
  let result: DiscoveryResult;
  try {
    result = await discover(discovery, opts);
  } catch (e) {
    throw new Error(`couldn't validate the identity of the API Server: ${(e as Error).message}`, {
      cause: e,
    });
  }
  // SetDefaults_Discovery: the TLS bootstrap token defaults to the discovery token.
  const token = discovery.tlsBootstrapToken || discovery.bootstrapToken?.token || undefined;
  const source = result.method === "token" ? "the cluster-info kubeconfig" : "the discovery file";
  return { ...result, tlsBootstrap: tlsBootstrapKubeConfig(result.config, token, source) };
}
