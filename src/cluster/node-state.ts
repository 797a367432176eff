import { readFileIfExists, type Host } from "../remote/host.js";

// What a host already holds, so `up` can resume (engineering notes: "Recognise finished hosts by
// their state files, reset half-done ones"). kubeforge writes a marker before it changes a host
// and completes it when init or join has finished there; files of a cluster without the marker
// belong to someone else and are never reset behind the user's back.

export const MARKER_PATH = "/var/lib/kubeforge/node.json";

export type NodeRole = "control-plane" | "worker";

export interface NodeMarker {
  cluster: string;
  node: string;
  role: NodeRole;
  status: "started" | "done";
  kubernetesVersion: string;
  /**
   * The last cluster-level upgrade that touched the node (cluster/upgrade): `step` "started"
   * until the node runs `to`, so a run stopped half-way is resumed, never taken for finished.
   */
  upgrade?: { from: string; to: string; step: "started" | "done" };
}

export type NodeCondition =
  | { kind: "fresh" }
  | { kind: "done"; marker: NodeMarker }
  | { kind: "partial"; marker: NodeMarker }
  | { kind: "foreign"; reason: string };

// What kubeadm or kubeforge leave on a node that has been part of a cluster.
const CLUSTER_EVIDENCE = [
  "/etc/kubernetes/kubelet.conf",
  "/etc/kubernetes/bootstrap-kubelet.conf",
  "/etc/kubernetes/admin.conf",
  "/etc/kubernetes/pki/ca.crt",
  "/etc/kubernetes/manifests/kube-apiserver.yaml",
  "/etc/kubernetes/manifests/etcd.yaml",
];

function parseMarker(text: string): NodeMarker | undefined {
  try {
    const m = JSON.parse(text) as Partial<NodeMarker>;
    if (typeof m.cluster !== "string" || typeof m.node !== "string") return undefined;
    if (m.role !== "control-plane" && m.role !== "worker") return undefined;
    if (m.status !== "started" && m.status !== "done") return undefined;
    return { ...(m as NodeMarker), kubernetesVersion: m.kubernetesVersion ?? "" };
  } catch {
    return undefined;
  }
}

export async function readMarker(host: Host): Promise<NodeMarker | undefined> {
  const text = await readFileIfExists(host, MARKER_PATH);
  return text === undefined ? undefined : parseMarker(text.toString("utf8"));
}

export async function writeMarker(host: Host, marker: NodeMarker): Promise<void> {
  await host.writeFile(MARKER_PATH, `${JSON.stringify(marker, null, 2)}\n`, 0o644);
}

/** Classifies a host for a node of the named cluster. */
export async function nodeCondition(
  host: Host,
  expected: { cluster: string; node: string; role: NodeRole },
): Promise<NodeCondition> {
  // The marker and every file that betrays a cluster, asked at once (in the evidence's order).
  const [marker, present] = await Promise.all([
    readMarker(host),
    Promise.all(CLUSTER_EVIDENCE.map((path) => host.exists(path))),
  ]);
  const evidence = CLUSTER_EVIDENCE.filter((_, i) => present[i]);
  if (!marker) {
    if (evidence.length === 0) return { kind: "fresh" };
    return {
      kind: "foreign",
      reason: `${evidence[0]} exists but kubeforge did not create it (no ${MARKER_PATH}); run "kubeforge reset --force" or "kubeadm reset" on it first`,
    };
  }
  if (marker.cluster !== expected.cluster) {
    return {
      kind: "foreign",
      reason: `it belongs to the kubeforge cluster "${marker.cluster}"; run "kubeforge down" for that cluster first`,
    };
  }
  if (marker.node !== expected.node || marker.role !== expected.role) {
    return {
      kind: "foreign",
      reason: `it was set up as ${marker.role} "${marker.node}", not ${expected.role} "${expected.node}"; run "kubeforge reset --force" on it first`,
    };
  }
  if (marker.status === "done" && (await host.exists("/etc/kubernetes/kubelet.conf"))) {
    return { kind: "done", marker };
  }
  return { kind: "partial", marker };
}
