import { decodeConfigDocuments } from "../../config/load.js";
import { getIfExists } from "../../kube/idempotency.js";
import type { KubeClient } from "../../kube/types.js";

// What a finished cluster's networking is, read where kubeadm keeps it: the ClusterConfiguration
// in kube-system/kubeadm-config (upload-config/kubeadm), with kubeadm's defaults filled in.

export interface RunningNetworking {
  podSubnet?: string;
  serviceSubnet?: string;
  dnsDomain?: string;
}

/** The networking in kubeadm-config; undefined when the ConfigMap holds no ClusterConfiguration. */
export async function runningNetworking(
  admin: KubeClient,
  timeoutMs: number,
): Promise<RunningNetworking | undefined> {
  const cm = await getIfExists(
    admin,
    { apiVersion: "v1", kind: "ConfigMap", namespace: "kube-system", name: "kubeadm-config" },
    { timeoutMs },
  );
  const text = (cm?.data as Record<string, string> | undefined)?.ClusterConfiguration;
  if (!text) return undefined;
  const networking = decodeConfigDocuments(text, "kube-system/kubeadm-config").cluster?.networking;
  return { ...networking };
}
