import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import type { Host } from "../remote/host.js";

// The cluster workflows' doors to the Cluster's `host: docker` nodes. The Docker client
// (remote/docker) is imported only when a Cluster has such nodes: a runner-only or SSH cluster
// never loads it.

export function isDockerNode(node: ClusterNodeSpec): boolean {
  return node.host === "docker";
}

export function hasDockerNodes(spec: ClusterSpec): boolean {
  return spec.nodes.some(isDockerNode);
}

/** The node's container as a Host; `create` makes (or starts) it, else it must be running. */
export async function connectDockerNode(
  spec: ClusterSpec,
  node: ClusterNodeSpec,
  opts: { create: boolean; log?: (line: string) => void },
): Promise<Host> {
  const docker = await import("../remote/docker/index.js");
  return docker.connectDockerNode(spec, node, opts);
}

/** Removes every container, volume and network of the cluster's (by label); dry run: names them. */
export async function removeDockerNodes(
  spec: ClusterSpec,
  opts: { dryRun: boolean; log: (line: string) => void },
): Promise<void> {
  if (!hasDockerNodes(spec)) return;
  const docker = await import("../remote/docker/index.js");
  await docker.removeDockerCluster(spec, opts);
}

/**
 * Where the runner reaches a docker control plane's API server: its port published on the
 * runner's loopback; undefined for other nodes, or when it is not published.
 */
export function publishedApiServerOf(spec: ClusterSpec) {
  return async (node: ClusterNodeSpec): Promise<{ host: string; port: number } | undefined> => {
    if (!isDockerNode(node)) return undefined;
    const docker = await import("../remote/docker/index.js");
    return (await docker.dockerCluster(spec)).publishedApiServer(node);
  };
}
