import type { ClusterSpec } from "../../config/cluster/types.js";
import { applyObjects } from "../../kube/apply.js";
import { poll } from "../../kube/poll.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import { installBridge } from "../../node/cni/bridge.js";
import type { PodNetworkNode } from "../../node/cni/bridge.js";
import { fleet } from "../../remote/fleet.js";
import type { Host } from "../../remote/host.js";
import { loadManifest } from "./cni-manifest.js";
import type { HostInventory } from "../inventory.js";

// The pod network `up` installs after the nodes joined: the built-in bridge (node files only),
// a manifest the user names (applied through the API), or none (the user brings their own).

const API_TIMEOUT_MS = 60_000;

/** Every node's pod CIDRs, as kube-controller-manager's node IPAM assigned them. */
async function podCIDRs(
  admin: KubeClient,
  inventory: readonly HostInventory[],
): Promise<PodNetworkNode[]> {
  const names = inventory.map((i) => i.node.name);
  const nodes = await poll(
    async () => {
      const all = await admin.list("v1", "Node");
      const missing = names.filter(
        (n) => !all.find((x) => x.metadata.name === n && cidrsOf(x).length > 0),
      );
      if (missing.length > 0)
        throw new Error(
          `no pod CIDR assigned yet to ${missing.join(", ")} (kube-controller-manager assigns them from networking.podSubnet)`,
        );
      return all;
    },
    { timeoutMs: API_TIMEOUT_MS, intervalMs: 1000, what: "every node to get a pod CIDR" },
  );
  return inventory.map((i) => ({
    name: i.node.name,
    address: i.address,
    podCIDRs: cidrsOf(nodes.find((n) => n.metadata.name === i.node.name)!),
  }));
}

function cidrsOf(node: KubeObject): string[] {
  const spec = (node.spec ?? {}) as { podCIDR?: string; podCIDRs?: string[] };
  return spec.podCIDRs?.length ? spec.podCIDRs : spec.podCIDR ? [spec.podCIDR] : [];
}

export async function installPodNetwork(
  spec: ClusterSpec,
  admin: KubeClient,
  inventory: readonly HostInventory[],
  hostOf: (name: string) => Host,
  log: (line: string) => void,
): Promise<void> {
  switch (spec.cni.type) {
    case "none":
      log(
        "cni: none; the nodes stay NotReady (and CoreDNS Pending) until you install a pod network (CNI) with the admin.conf up writes",
      );
      return;
    case "manifest": {
      const source = spec.cni.manifest!;
      // Read and checked whole first: a bad document refuses the manifest before any object is applied.
      const objects = await loadManifest(source);
      await applyObjects(admin, objects, {
        timeoutMs: API_TIMEOUT_MS,
        log: (line) => log(`cni: ${line}`),
      });
      log(`cni: applied ${objects.length} objects from ${source}`);
      return;
    }
    case "bridge": {
      const network = await podCIDRs(admin, inventory);
      await fleet(
        network,
        (n) => n.name,
        (self) => installBridge(hostOf(self.name), self, network),
        { concurrency: spec.concurrency },
      );
      log(`cni: bridge on ${network.map((n) => `${n.name} ${n.podCIDRs.join(",")}`).join("; ")}`);
    }
  }
}
