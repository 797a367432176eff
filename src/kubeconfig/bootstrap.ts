import { DEFAULT_CLUSTER_NAME } from "../config/defaults.js";
import { createWithToken } from "./build.js";
import { decodeData } from "./parse.js";
import type { KubeConfig, KubeConfigCluster, KubeConfigUser } from "./types.js";

// The kubeconfig a joining node's kubelet TLS-bootstraps with (/etc/kubernetes/
// bootstrap-kubelet.conf), made from what discovery validated (kubeadm: discovery/discovery.go
// For; util/kubeconfig/kubeconfig.go GetClusterFromKubeConfig, HasAuthenticationCredentials).

/** discovery.TokenUser: the user of bootstrap-kubelet.conf. */
export const TLS_BOOTSTRAP_TOKEN_USER = "tls-bootstrap-token-user";

/** A user entry as kubeconfig files may hold it, fields this project does not model included. */
type AnyUser = KubeConfigUser & {
  username?: string;
  password?: string;
  exec?: unknown;
  "auth-provider"?: unknown;
};

export interface ClusterEntry {
  name: string;
  cluster: KubeConfigCluster;
}

/**
 * kubeadm's GetClusterFromKubeConfig: the unnamed cluster if there is one (cluster-info's
 * kubeconfig stores its only cluster under ""), else the current context's cluster, else none.
 */
export function clusterOf(config: KubeConfig): ClusterEntry | undefined {
  const unnamed = config.clusters.find((c) => c?.name === "");
  if (unnamed?.cluster) return { name: "", cluster: unnamed.cluster };
  const context = config.contexts.find((c) => c?.name === config["current-context"])?.context;
  if (!context) return undefined;
  const entry = config.clusters.find((c) => c?.name === context.cluster);
  return entry?.cluster ? { name: entry.name, cluster: entry.cluster } : undefined;
}

/** The user of the current context, when the context and the user both exist (getCurrentAuthInfo). */
export function currentUser(config: KubeConfig): { name: string; user: AnyUser } | undefined {
  if (!config["current-context"]) return undefined;
  const context = config.contexts.find((c) => c?.name === config["current-context"])?.context;
  if (!context?.user) return undefined;
  const entry = config.users.find((u) => u?.name === context.user);
  return entry?.user ? { name: entry.name, user: entry.user } : undefined;
}

/**
 * kubeadm's HasAuthenticationCredentials (v1.25+, kubernetes#110553): the current user has a
 * token, a username and password, a client certificate and key, an exec plugin, a token file
 * or an auth provider.
 */
export function hasAuthenticationCredentials(config: KubeConfig): boolean {
  const user = currentUser(config)?.user;
  if (!user) return false;
  if (user.token) return true;
  if (user.username && user.password) return true;
  const cert = user["client-certificate"] || user["client-certificate-data"];
  const key = user["client-key"] || user["client-key-data"];
  if (cert && key) return true;
  return user.exec != null || Boolean(user.tokenFile) || user["auth-provider"] != null;
}

/** The PEM bundle of a cluster's certificate-authority-data (empty when there is none). */
export function clusterCAData(cluster: KubeConfigCluster): Buffer {
  return decodeData(cluster["certificate-authority-data"]) ?? Buffer.alloc(0);
}

/**
 * The TLS bootstrap kubeconfig, as kubeadm's discovery.For builds it:
 * - with a TLS bootstrap token (JoinConfiguration.discovery.tlsBootstrapToken, which defaults
 *   to the discovery token): CreateWithToken(server and CA of the discovered cluster,
 *   "kubernetes", "tls-bootstrap-token-user", token);
 * - without one, the discovered kubeconfig itself, which must then carry credentials (a
 *   discovery file with embedded credentials).
 * `source` names the discovered kubeconfig in errors ("the cluster-info ConfigMap").
 */
export function tlsBootstrapKubeConfig(
  discovered: KubeConfig,
  tlsBootstrapToken: string | undefined,
  source = "the discovered kubeconfig",
): KubeConfig {
  if (tlsBootstrapToken) {
    const entry = clusterOf(discovered);
    if (!entry) {
      throw new Error(
        `${source} is malformed: it has neither an unnamed cluster nor a current context naming a cluster`,
      );
    }
    const config = createWithToken(
      entry.cluster.server,
      DEFAULT_CLUSTER_NAME,
      TLS_BOOTSTRAP_TOKEN_USER,
      clusterCAData(entry.cluster),
      tlsBootstrapToken,
    );
    // client-go omits an empty certificate-authority-data (omitempty).
    for (const c of config.clusters) {
      if (!c.cluster["certificate-authority-data"]) delete c.cluster["certificate-authority-data"];
    }
    return config;
  }
  if (!hasAuthenticationCredentials(discovered)) {
    throw new Error(
      "could not find authentication credentials for the TLS bootstrap process: use token discovery, " +
        "a discovery file with embedded authentication credentials, or a discovery file without " +
        "them together with a TLS bootstrap token (--tls-bootstrap-token)",
    );
  }
  return discovered;
}

/**
 * The same kubeconfig with every cluster's server replaced: with ControlPlaneKubeletLocalMode a
 * joining control-plane node's kubelet talks to its own API server (kubeadm: phases/join
 * kubelet.go runKubeletStartJoinPhase).
 */
export function withServer(config: KubeConfig, server: string): KubeConfig {
  return {
    ...config,
    clusters: config.clusters.map((c) => ({ ...c, cluster: { ...c.cluster, server } })),
  };
}
