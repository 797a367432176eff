import type { KubeClient, KubeObject } from "../../kube/types.js";
import type { VersionsByNode } from "../../config/upgrade-plan.js";

// What kubeadm's VersionGetter and compute.go read from the cluster (phases/upgrade/
// versiongetter.go, compute.go): the API server's /version, every Node's kubelet version, and
// per node the image tags of the control-plane mirror Pods and etcd, and the CoreDNS image.

/** KubeVersionGetter.ClusterVersion: /version's gitVersion. */
export async function clusterVersion(client: KubeClient): Promise<string> {
  const res = await client.getRaw("/version");
  if (res.status !== 200) {
    throw new Error(`Couldn't fetch cluster version from the API Server: HTTP ${res.status}`);
  }
  const info = JSON.parse(res.body) as { gitVersion?: string };
  if (!info.gitVersion)
    throw new Error("Couldn't fetch cluster version from the API Server: no gitVersion");
  return info.gitVersion;
}

function add(map: VersionsByNode, version: string, node: string): void {
  (map[version] ??= []).push(node);
}

/** KubeletVersions: kubeletVersion → the Nodes that run it. */
export async function kubeletVersions(client: KubeClient): Promise<VersionsByNode> {
  const out: VersionsByNode = {};
  for (const node of await client.list("v1", "Node")) {
    const info = (node.status as { nodeInfo?: { kubeletVersion?: string } } | undefined)?.nodeInfo;
    add(out, info?.kubeletVersion ?? "", node.metadata.name);
  }
  return out;
}

/** The tag of an image reference ("registry.k8s.io/kube-apiserver:v1.35.0" → "v1.35.0"). */
export function imageTag(image: string): string {
  const name = image.split("@")[0]!;
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  return colon > slash ? name.slice(colon + 1) : "";
}

function containerImage(pod: KubeObject, container: string): string | undefined {
  const containers = (pod.spec as { containers?: { name: string; image?: string }[] } | undefined)
    ?.containers;
  return containers?.find((c) => c.name === container)?.image ?? containers?.[0]?.image;
}

/** Image tag of `component`'s kube-system Pods, per node (compute.go getComponentVersions). */
export async function componentVersions(
  client: KubeClient,
  component: string,
): Promise<VersionsByNode> {
  const pods = await client.list("v1", "Pod", {
    namespace: "kube-system",
    labelSelector: `component=${component}`,
  });
  const out: VersionsByNode = {};
  for (const pod of pods) {
    const node = (pod.spec as { nodeName?: string } | undefined)?.nodeName ?? "";
    add(out, imageTag(containerImage(pod, component) ?? ""), node);
  }
  return out;
}

/** dns.DeployedDNSAddon: the image tag of the CoreDNS Deployment ("" when there is none). */
export async function deployedDNSVersion(client: KubeClient): Promise<string> {
  const deployments = await client.list("apps/v1", "Deployment", {
    namespace: "kube-system",
    labelSelector: "k8s-app=kube-dns",
  });
  const pod = (deployments[0]?.spec as { template?: KubeObject } | undefined)?.template;
  return pod ? imageTag(containerImage(pod, "coredns") ?? "") : "";
}

/**
 * kubeadm's UnupgradedControlPlaneInstances (phases/upgrade/postupgrade.go): the nodes whose
 * kube-apiserver container runs another image than this node's. Pure over the Pod list.
 */
export function unupgradedControlPlaneInstances(
  pods: readonly KubeObject[],
  nodeName: string,
): string[] {
  if (pods.length === 0) {
    throw new Error("cannot find kube-apiserver Pod by label selector: component=kube-apiserver");
  }
  const imageByNode = new Map<string, string>();
  for (const pod of pods) {
    const containers = (pod.spec as { containers?: { name: string; image?: string }[] } | undefined)
      ?.containers;
    const c = containers?.find((x) => x.name === "kube-apiserver");
    if (!c) {
      throw new Error(
        `cannot find container by name "kube-apiserver" for Pod ${pod.metadata.namespace}/${pod.metadata.name}`,
      );
    }
    imageByNode.set((pod.spec as { nodeName?: string }).nodeName ?? "", c.image ?? "");
  }
  const upgraded = imageByNode.get(nodeName);
  if (upgraded === undefined) {
    throw new Error(
      `cannot find kube-apiserver image for current control plane instance ${nodeName}`,
    );
  }
  return [...imageByNode]
    .filter(([, image]) => image !== upgraded)
    .map(([node]) => node)
    .sort();
}

/** The same, listing the kube-apiserver Pods. */
export async function listUnupgradedControlPlanes(
  client: KubeClient,
  nodeName: string,
): Promise<string[]> {
  let pods: KubeObject[];
  try {
    pods = await client.list("v1", "Pod", {
      namespace: "kube-system",
      labelSelector: "component=kube-apiserver",
    });
  } catch (e) {
    throw new Error(`failed to list kube-apiserver Pod from cluster: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return unupgradedControlPlaneInstances(pods, nodeName);
}
