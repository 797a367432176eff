import { decodeConfigDocuments } from "./load.js";
import type { ConfigDocuments } from "./types.js";

// The configuration a cluster stores in kube-system, decoded as kubeadm's
// FetchInitConfigurationFromCluster reads it (join and upgrade alike): the ClusterConfiguration
// from kubeadm-config, the KubeletConfiguration from kubelet-config and the
// KubeProxyConfiguration from kube-proxy (componentconfigs: a missing ConfigMap means none).

/** A ConfigMap as read from the API (only its data matters here). */
export type StoredConfigMap = object;

/** The text under `key` in a ConfigMap's data. */
export function configMapText(cm: StoredConfigMap | undefined, key: string): string | undefined {
  return (cm as { data?: Record<string, string> } | undefined)?.data?.[key];
}

/** The kubelet and kube-proxy component configs of the cluster, those it has. */
export function decodeComponentConfigs(
  kubeletConfig: StoredConfigMap | undefined,
  kubeProxy: StoredConfigMap | undefined,
): Pick<ConfigDocuments, "kubelet" | "kubeProxy"> {
  const kubeletText = configMapText(kubeletConfig, "kubelet");
  const proxyText = configMapText(kubeProxy, "config.conf");
  const kubelet = kubeletText
    ? decodeConfigDocuments(kubeletText, "kube-system/kubelet-config").kubelet
    : undefined;
  const proxy = proxyText
    ? decodeConfigDocuments(proxyText, "kube-system/kube-proxy").kubeProxy
    : undefined;
  return { ...(kubelet ? { kubelet } : {}), ...(proxy ? { kubeProxy: proxy } : {}) };
}
