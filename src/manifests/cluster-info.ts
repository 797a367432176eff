import { toYAML } from "../config/yaml.js";
import type { KubeObject } from "../types/kube-object.js";
import { currentEntries, decodeData, parseKubeConfig } from "../kubeconfig/parse.js";
import type { KubeConfigCluster } from "../kubeconfig/types.js";
import { caCertHash } from "../pki/pin.js";

// kube-public/cluster-info (kubeadm: phases/bootstraptoken/clusterinfo/clusterinfo.go
// CreateBootstrapConfigMapIfNotExists): a kubeconfig holding only admin.conf's cluster entry,
// stored under the cluster name "", serialized by clientcmd.Write. Joining nodes verify its
// exact bytes with the token's JWS, so they must be what kubeadm writes, byte for byte.

export const CLUSTER_INFO_NAMESPACE = "kube-public";
export const CLUSTER_INFO_NAME = "cluster-info";
/** bootstrapapi.KubeConfigKey. */
export const CLUSTER_INFO_KUBECONFIG_KEY = "kubeconfig";
/** bootstrapapi.JWSSignatureKeyPrefix: the BootstrapSigner adds "jws-kubeconfig-<token id>". */
export const JWS_SIGNATURE_KEY_PREFIX = "jws-kubeconfig-";

/**
 * Whether clientcmd.Write of this Kubernetes release prints `preferences: {}`. client-go 1.34
 * deprecated the field and tagged it `omitzero` (kubernetes/kubernetes#131741), so kubeadm
 * 1.34 and later omit it; kubeadm's own dry-run fixture (apiclient/dryrun*.go
 * getClusterInfoConfigMap) shows the file without it.
 */
export function clientcmdWritesPreferences(kubernetesVersion: string): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(kubernetesVersion);
  if (!m) throw new Error(`"${kubernetesVersion}" is not a Kubernetes version (vMAJOR.MINOR...)`);
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major < 1 || (major === 1 && minor < 34);
}

/**
 * The `kubeconfig` value: `cluster` (admin.conf's current cluster, copied whole as kubeadm
 * does) under the name "", with null contexts and users and an empty current context.
 */
export function clusterInfoKubeconfig(
  cluster: KubeConfigCluster,
  kubernetesVersion: string,
): string {
  const config: Record<string, unknown> = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "", cluster }],
    contexts: null,
    "current-context": "",
    users: null,
  };
  if (clientcmdWritesPreferences(kubernetesVersion)) config["preferences"] = {};
  return toYAML(config);
}

/** The ConfigMap for a cluster entry (create-or-update, as kubeadm's CreateOrUpdate). */
export function clusterInfoConfigMap(
  cluster: KubeConfigCluster,
  kubernetesVersion: string,
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: CLUSTER_INFO_NAME, namespace: CLUSTER_INFO_NAMESPACE },
    data: { [CLUSTER_INFO_KUBECONFIG_KEY]: clusterInfoKubeconfig(cluster, kubernetesVersion) },
  };
}

/** The ConfigMap from admin.conf's text; `file` names admin.conf in errors. */
export function clusterInfoConfigMapFromAdminConf(
  adminConf: string | Uint8Array,
  file: string,
  kubernetesVersion: string,
): KubeObject {
  const { cluster } = currentEntries(parseKubeConfig(adminConf, file), file);
  return clusterInfoConfigMap(cluster, kubernetesVersion);
}

interface ClusterView {
  server: string;
  caPEM: Buffer | undefined;
}

function clusterOf(cm: KubeObject): ClusterView | string {
  const text = (cm["data"] as Record<string, string> | undefined)?.[CLUSTER_INFO_KUBECONFIG_KEY];
  if (!text) return `it has no "${CLUSTER_INFO_KUBECONFIG_KEY}" key`;
  let clusters;
  try {
    clusters = parseKubeConfig(text, "its kubeconfig").clusters;
  } catch (e) {
    return (e as Error).message;
  }
  // kubeadm's join discovery requires exactly one cluster (token.go).
  if (clusters.length !== 1 || !clusters[0]?.cluster) {
    return `its kubeconfig holds ${clusters.length} clusters instead of one`;
  }
  const c = clusters[0].cluster;
  return { server: c.server ?? "", caPEM: decodeData(c["certificate-authority-data"]) };
}

function pinOf(pem: Buffer | undefined): string {
  if (!pem || pem.length === 0) return "no CA";
  try {
    return caCertHash(pem);
  } catch {
    return "a CA that is not a PEM certificate";
  }
}

/**
 * Compares an existing cluster-info with the one this cluster would write. Returns a sentence
 * naming the difference when it belongs to another cluster (another CA: both CA pins; or another
 * server), so init reports it instead of overwriting what joining nodes trust; undefined when
 * it describes this cluster (kubeadm itself would overwrite it silently).
 */
export function clusterInfoProblem(existing: KubeObject, desired: KubeObject): string | undefined {
  const where = `ConfigMap ${CLUSTER_INFO_NAMESPACE}/${CLUSTER_INFO_NAME}`;
  const want = clusterOf(desired);
  if (typeof want === "string") throw new Error(`the desired ${where} is invalid: ${want}`);
  const have = clusterOf(existing);
  if (typeof have === "string") {
    return `${where} already exists but is not usable for discovery: ${have}; delete it, or reset the cluster, and run init again`;
  }
  const havePin = pinOf(have.caPEM);
  const wantPin = pinOf(want.caPEM);
  if (havePin !== wantPin) {
    return `${where} already exists with another cluster CA (${havePin}) than this cluster's (${wantPin}); it belongs to another cluster: delete it, or reset the cluster, and run init again`;
  }
  if (have.server !== want.server) {
    return `${where} already exists with API server "${have.server}" instead of "${want.server}"; delete it, or reset the cluster, and run init again`;
  }
  return undefined;
}

/** True when an existing cluster-info already carries exactly the desired kubeconfig bytes. */
export function clusterInfoUpToDate(existing: KubeObject, desired: KubeObject): boolean {
  const key = CLUSTER_INFO_KUBECONFIG_KEY;
  const have = (existing["data"] as Record<string, string> | undefined)?.[key];
  const want = (desired["data"] as Record<string, string> | undefined)?.[key];
  return have !== undefined && have === want;
}
