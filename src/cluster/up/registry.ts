import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import { applyObjects } from "../../kube/apply.js";
import type { KubeClient } from "../../kube/types.js";
import { localRegistryHostingConfigMap } from "../../manifests/addons/local-registry.js";
import { localRegistryHostsFile } from "../../node/runtime/containerd-config.js";
import { writeIfChanged } from "../../node/runtime/files.js";
import { fleet } from "../../remote/fleet.js";
import type { Host } from "../../remote/host.js";
import { registryServerFor, type StartedRegistry } from "../local-registry.js";

// The local registry made usable from the cluster: every node's containerd gets a hosts.toml
// for its name (kind's recipe writes /etc/containerd/certs.d/localhost:<port>/hosts.toml on each
// node; containerd reads hosts files per pull, so no restart), and the cluster publishes it in
// kube-public/local-registry-hosting (KEP-1755) for tools such as Tilt and Skaffold.

const API_TIMEOUT_MS = 60_000;

export interface RegistryNodes {
  nodes: readonly ClusterNodeSpec[];
  hostOf: (name: string) => Host;
  concurrency: number;
  log: (node: string, line: string) => void;
}

/** Writes each node's hosts.toml; returns the distinct addresses the nodes pull from. */
export async function pointNodesAtRegistry(
  registry: StartedRegistry,
  n: RegistryNodes,
): Promise<string[]> {
  const servers = await fleet(
    n.nodes,
    (node) => node.name,
    async (node) => {
      const host = n.hostOf(node.name);
      const server = await registryServerFor(node, host, registry);
      const file = localRegistryHostsFile(registry.host, server);
      if (await writeIfChanged(host, file.path, file.content, { mode: 0o644 })) {
        n.log(node.name, `[registry] wrote ${file.path}: ${registry.host} is ${server}`);
      }
      return server;
    },
    { concurrency: n.concurrency },
  );
  return [...new Set(servers)];
}

export async function publishRegistry(
  registry: StartedRegistry,
  admin: KubeClient,
  log: (line: string) => void,
): Promise<void> {
  await applyObjects(admin, [localRegistryHostingConfigMap({ host: registry.host })], {
    timeoutMs: API_TIMEOUT_MS,
    log: (line) => log(`registry: ${line}`),
  });
}
