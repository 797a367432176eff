import { kubeClientFromKubeConfig } from "../kube/client.js";
import type { KubeObject } from "../kube/types.js";

// What each node's kubelet says it is (Node status.nodeInfo.kubeletVersion, which the kubelet
// fills from its own build: k8s.io/kubernetes pkg/kubelet/nodestatus/setters.go VersionInfo).
// The cluster's version is what kubeforge asked for; a custom kubelet (kubelet-binary, a node's
// kubeletBinary) reports its own, and a conformance run wants to see that one.

interface NodeObject extends KubeObject {
  status?: { nodeInfo?: { kubeletVersion?: string } };
}

/** Node name → the kubelet version it reports, read through the runner's admin.conf. */
export async function kubeletVersions(
  adminConf: string,
  description: string,
): Promise<Map<string, string>> {
  const client = await kubeClientFromKubeConfig(adminConf, { description });
  const nodes = await client.list<NodeObject>("v1", "Node");
  const out = new Map<string, string>();
  for (const n of nodes) {
    const v = n.status?.nodeInfo?.kubeletVersion;
    if (v) out.set(n.metadata.name, v);
  }
  return out;
}
