import type { ClusterNodeSpec, ClusterSpec } from "../../config/cluster/types.js";
import { DockerCluster, dockerNodesOf } from "./cluster.js";
import type { DockerHost } from "./host.js";

// The entry the rest of kubeforge loads lazily (cluster/connect.ts, cluster/down.ts), so a
// Cluster without docker nodes never loads the Docker client.

export { DockerCluster, dockerNodesOf } from "./cluster.js";
export { DockerHost } from "./host.js";
export { DockerEngine } from "./engine.js";
export { exportImages, missingImages } from "./load-images.js";
export { ensureNodeImage, loadImage, nodeImageRef, saveImage } from "./image.js";

const clusters = new WeakMap<ClusterSpec, Promise<DockerCluster>>();

/** One DockerCluster per Cluster spec and run: the network and image are made once. */
export function dockerCluster(
  spec: ClusterSpec,
  log?: (line: string) => void,
): Promise<DockerCluster> {
  let c = clusters.get(spec);
  if (!c) {
    c = DockerCluster.connect(spec, log ? { log } : {});
    c.catch(() => clusters.delete(spec));
    clusters.set(spec, c);
  }
  return c;
}

/**
 * The node's container as a Host: created and started when `create` (up), else the running
 * container as it is (down, diagnostics, a dry run).
 */
export async function connectDockerNode(
  spec: ClusterSpec,
  node: ClusterNodeSpec,
  opts: { create: boolean; log?: (line: string) => void },
): Promise<DockerHost> {
  const cluster = await dockerCluster(spec, opts.log);
  return opts.create ? cluster.ensureNode(node) : cluster.attach(node);
}

/** Removes the cluster's containers, volumes and network; `dryRun` only names them. */
export async function removeDockerCluster(
  spec: ClusterSpec,
  opts: { dryRun: boolean; log: (line: string) => void },
): Promise<void> {
  if (dockerNodesOf(spec).length === 0 && spec.docker === undefined) return;
  const cluster = await dockerCluster(spec, opts.log);
  if (opts.dryRun) {
    for (const what of await cluster.owned()) opts.log(`[dryrun] Would remove ${what}`);
    return;
  }
  const removed = await cluster.remove();
  opts.log(
    removed.length > 0
      ? `[docker] removed ${removed.join(", ")}`
      : `[docker] nothing of cluster "${spec.name}" was left on the engine`,
  );
}
