import type { ClusterNodeSpec } from "../config/cluster/types.js";
import { joinHostPort } from "../config/network.js";
import { withServer } from "../kubeconfig/bootstrap.js";
import type { KubeConfig } from "../kubeconfig/types.js";
import type { Host } from "../remote/host.js";
import { observedHostKey, type TunnelTargetSpec } from "./tunnel.js";
import { serverOf, tcpReachable } from "./admin-kubeconfig.js";
import type { HostInventory } from "./inventory.js";

// Which API server address admin.conf on the runner names. Directly the cluster's endpoint (or
// an address of a control plane the runner uses) when the runner reaches it; otherwise — and
// always for a cluster whose only stable endpoint is kubeforge's node-local proxies — a
// runner-side tunnel (cluster/tunnel.ts) with failover across the control planes. Through the
// tunnel the server is 127.0.0.1:<port> and the certificate is verified as "kubernetes", a name
// every kubeadm API server certificate carries (kubeadm: certs/certlist.go, GetAPIServerAltNames).

/** The DNS name the tunnel's clients verify the API server certificate against. */
export const TUNNEL_TLS_SERVER_NAME = "kubernetes";

export interface RunnerServerInput {
  adminConf: KubeConfig;
  controlPlanes: readonly HostInventory[];
  bindPort: number;
  /** The cluster's endpoint is kubeforge's node-local proxies (no user endpoint, several CPs). */
  localEndpoint: boolean;
  /** controlPlaneEndpoint came from the user. */
  userEndpoint: boolean;
  runnerAddresses: (node: ClusterNodeSpec) => string[];
  hostOf: (name: string) => Host;
  tunnel?: (targets: TunnelTargetSpec[]) => Promise<{ port: number }>;
  /** A control plane's API server port published on the runner's loopback (docker nodes). */
  publishedApiServer?: (
    node: ClusterNodeSpec,
  ) => Promise<{ host: string; port: number } | undefined>;
}

export interface RunnerServer {
  server: string;
  kubeconfig: KubeConfig;
  /** How the server is reached when not directly ("SSH tunnel to cp-1, cp-2"). */
  via?: string;
}

const unbracket = (host: string) => host.replace(/^\[|\]$/g, "");

async function firstReachable(hosts: readonly string[], port: number) {
  for (const host of new Set(hosts)) if (await tcpReachable(host, port)) return host;
  return undefined;
}

/** admin.conf pointed at `host:port`, the certificate verified as "kubernetes". */
function throughLoopback(adminConf: KubeConfig, host: string, port: number): KubeConfig {
  const kubeconfig = withServer(adminConf, `https://${joinHostPort(host, port)}`);
  return {
    ...kubeconfig,
    clusters: kubeconfig.clusters.map((c) => ({
      ...c,
      cluster: { ...c.cluster, "tls-server-name": TUNNEL_TLS_SERVER_NAME },
    })),
  };
}

/** The first control plane whose API server port is published on the runner and answers. */
async function publishedServer(i: RunnerServerInput): Promise<RunnerServer | undefined> {
  if (!i.publishedApiServer || i.localEndpoint || i.userEndpoint) return undefined;
  for (const cp of i.controlPlanes) {
    const p = await i.publishedApiServer(cp.node);
    if (!p || !(await tcpReachable(p.host, p.port))) continue;
    return {
      server: `https://${joinHostPort(p.host, p.port)}`,
      kubeconfig: throughLoopback(i.adminConf, p.host, p.port),
      via: `${cp.node.name}'s API server port published on the runner`,
    };
  }
  return undefined;
}

export async function runnerServer(i: RunnerServerInput): Promise<RunnerServer> {
  const published = await publishedServer(i);
  if (published) return published;
  const endpoint = serverOf(i.adminConf);
  const endpointHost = unbracket(endpoint.hostname);
  const endpointPort = Number(endpoint.port || 443);
  const addressesOf = (cp: HostInventory) => [...i.runnerAddresses(cp.node), cp.address];

  if (!i.localEndpoint) {
    const direct = await firstReachable(
      [endpointHost, ...i.controlPlanes.flatMap(addressesOf)],
      endpointPort,
    );
    if (direct) {
      const server = `https://${joinHostPort(direct, endpointPort)}`;
      return { server, kubeconfig: withServer(i.adminConf, server) };
    }
    if (!i.tunnel) {
      const tried = [endpointHost, ...i.controlPlanes.flatMap(addressesOf)];
      throw new Error(
        `the runner cannot reach the API server at any of ${[...new Set(tried)].map((c) => joinHostPort(c, endpointPort)).join(", ")}; open port ${endpointPort} to the runner or set controlPlaneEndpoint to an address it can reach`,
      );
    }
  }

  // Through the tunnel: each control plane directly when the runner reaches it, else over its
  // SSH connection; a user's endpoint is reached from the control planes.
  const targets: TunnelTargetSpec[] = [];
  for (const cp of i.controlPlanes) {
    const host = i.userEndpoint ? endpointHost : cp.address;
    const port = i.userEndpoint ? endpointPort : i.bindPort;
    const direct = i.userEndpoint ? undefined : await firstReachable(addressesOf(cp), port);
    if (direct) {
      targets.push({ host: direct, port });
      continue;
    }
    const fingerprint = observedHostKey(i.hostOf(cp.node.name));
    targets.push({
      node: cp.node.name,
      host,
      port,
      ...(fingerprint ? { hostKeyFingerprint: fingerprint } : {}),
    });
  }
  if (!i.tunnel) {
    // A local-endpoint cluster without a tunnel (a library caller): the first control plane the
    // runner reaches, without failover.
    const direct = targets.find((t) => t.node === undefined);
    if (!direct) throw new Error("the runner reaches no control plane's API server directly");
    const server = `https://${joinHostPort(direct.host, direct.port)}`;
    return { server, kubeconfig: withServer(i.adminConf, server) };
  }
  const { port } = await i.tunnel(targets);
  return {
    server: `https://127.0.0.1:${port}`,
    kubeconfig: throughLoopback(i.adminConf, "127.0.0.1", port),
    via: `tunnel to ${targets.map((t) => (t.node ? `${t.node} (SSH)` : joinHostPort(t.host, t.port))).join(", ")}`,
  };
}
