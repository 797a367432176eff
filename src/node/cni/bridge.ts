import { parseCIDR } from "../../config/network.js";
import { readFileIfExists, type Host } from "../../remote/host.js";

// kubeforge's built-in pod network: the reference CNI plugins' `bridge` with `host-local` IPAM on
// the node's pod CIDR (the one kube-controller-manager's node IPAM gave the Node), `portmap` for
// hostPort, and routes to the other nodes' pod CIDRs through their addresses. It needs no image
// and no API access, and is what kind's kindnet does on one L2 segment.
// CNI spec: https://github.com/containernetworking/cni/blob/main/SPEC.md (conflist format);
// plugins: https://www.cni.dev/plugins/current/main/bridge/, ipam/host-local/, meta/portmap/.

export const CNI_CONFIG_DIR = "/etc/cni/net.d";
export const BRIDGE_CONFIG_PATH = `${CNI_CONFIG_DIR}/10-kubeforge-bridge.conflist`;
export const BRIDGE_NAME = "kubeforge0";

/** The conflist for a node whose pods take addresses from `podCIDRs` (one per IP family). */
export function bridgeConfList(podCIDRs: readonly string[]): string {
  if (podCIDRs.length === 0) throw new Error("the bridge CNI needs the node's pod CIDR");
  const ranges = podCIDRs.map((cidr) => {
    if (!parseCIDR(cidr)) throw new Error(`"${cidr}" is not a CIDR`);
    return [{ subnet: cidr }];
  });
  const routes = podCIDRs.map((cidr) => ({
    dst: parseCIDR(cidr)!.family === 6 ? "::/0" : "0.0.0.0/0",
  }));
  const config = {
    cniVersion: "1.0.0",
    name: "kubeforge",
    plugins: [
      {
        type: "bridge",
        bridge: BRIDGE_NAME,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: "host-local", ranges, routes },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** A node of the pod network: its address and the pod CIDRs it owns. */
export interface PodNetworkNode {
  name: string;
  address: string;
  podCIDRs: string[];
}

/** `ip route replace` argv for every other node's pod CIDRs of the address's family. */
export function podRoutes(self: string, nodes: readonly PodNetworkNode[]): string[][] {
  const routes: string[][] = [];
  for (const node of nodes) {
    if (node.name === self) continue;
    const family = node.address.includes(":") ? 6 : 4;
    for (const cidr of node.podCIDRs) {
      if (parseCIDR(cidr)?.family !== family) continue;
      routes.push(["ip", `-${family}`, "route", "replace", cidr, "via", node.address]);
    }
  }
  return routes;
}

/**
 * Writes the node's conflist (unless it is already there as it should be) and replaces its
 * routes to the other nodes' pods (`ip route replace` leaves a correct route as it is).
 */
export async function installBridge(
  host: Host,
  self: PodNetworkNode,
  nodes: readonly PodNetworkNode[],
): Promise<void> {
  const wanted = bridgeConfList(self.podCIDRs);
  const current = (await readFileIfExists(host, BRIDGE_CONFIG_PATH))?.toString("utf8");
  if (current !== wanted) await host.writeFile(BRIDGE_CONFIG_PATH, wanted, 0o644);
  for (const argv of podRoutes(self.name, nodes)) {
    const r = await host.exec(argv, { sudo: true, timeoutMs: 30_000 });
    if (r.code !== 0) {
      throw new Error(
        `${host.name}: cannot add the route to ${argv[4]} via ${argv[6]}: ${(r.stderr || r.stdout).trim()}`,
      );
    }
  }
}
