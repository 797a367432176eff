import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import type { KubeClient } from "../../kube/types.js";

// Node labels from the Cluster file, set through the API once the nodes exist: the kubelet may
// not set labels in the kubernetes.io and k8s.io namespaces on itself (NodeRestriction), while
// an administrator may, so `up` labels the Node objects instead of passing --node-labels.

export async function applyNodeLabels(
  admin: KubeClient,
  nodes: readonly ClusterNodeSpec[],
  log: (line: string) => void,
): Promise<void> {
  for (const node of nodes) {
    const labels = node.labels ?? {};
    if (Object.keys(labels).length === 0) continue;
    const current = await admin.get({ apiVersion: "v1", kind: "Node", name: node.name });
    const missing = Object.entries(labels).filter(([k, v]) => current.metadata.labels?.[k] !== v);
    if (missing.length === 0) continue;
    await admin.patch(
      { apiVersion: "v1", kind: "Node", name: node.name },
      { metadata: { labels: Object.fromEntries(missing) } },
      "strategic",
    );
    log(`labelled node ${node.name}: ${missing.map(([k, v]) => `${k}=${v}`).join(", ")}`);
  }
}
