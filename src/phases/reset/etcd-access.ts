import { EtcdClient, type EtcdTLSCredentials } from "../../etcd/client.js";
import {
  EtcdCluster,
  etcdEndpointsFromPods,
  etcdPodLister,
  removeStackedEtcdMember,
} from "../../etcd/cluster.js";
import type { KubeClient } from "../../kube/types.js";
import type { Host } from "../../remote/host.js";

// How reset removes this node's etcd member: kubeadm's RemoveStackedEtcdMemberFromCluster
// (phases/etcd/local.go) — the member whose peer URL is this node's is removed through the etcd
// API, unless it is the last member; a member already gone is fine.
// kubeadm finds the etcd endpoints through the API server (the etcd Pods' client-URL annotation)
// and gives up on the removal when the API does not answer. kubeforge starts from this node's
// own member (its client URL in etcd.yaml), adds the endpoints the API knows when it answers,
// then syncs with the member list (clientv3's Sync): the member is removed as long as some
// member answers, API server or not. The request goes to the other members first, so that a
// member never has to remove itself.
// Over a Host that forwards ports (SSH), every endpoint is reached through the node: etcd's
// serving certificates name 127.0.0.1 (kubeadm's etcd server certificate SANs), so TLS still
// verifies. Endpoints are then not synced: the member list's URLs are the node's view.

/** This node's etcd member, from its etcd.yaml. */
export interface LocalEtcdMember {
  name?: string;
  /** First of --initial-advertise-peer-urls: how the cluster knows this member. */
  peerURL: string;
  /** First of --advertise-client-urls. */
  clientURL: string;
}

/** What removing the member did. */
export type EtcdRemoval = "removed" | "only-member" | "not-a-member";

export interface ResetEtcdAccess {
  removeMember(
    host: Host,
    member: LocalEtcdMember,
    tls: EtcdTLSCredentials,
    client: KubeClient | undefined,
  ): Promise<EtcdRemoval>;
}

export interface RealResetEtcdOptions {
  /** How long each etcd call retries (kubeadm: timeouts.etcdAPICall, 2 min). */
  apiCallTimeoutMs?: number;
  retryIntervalMs?: number;
  /** Deadline of one etcd request (kubeadm: 2 s). */
  requestTimeoutMs?: number;
  /** How long to wait for the etcd Pods' annotations when the API answers. Default 5 s. */
  podDiscoveryTimeoutMs?: number;
}

/** A TCP port on this machine reaching a port as seen from the host (SshHost.forward). */
interface Forwarding {
  forward?(
    targetHost: string,
    targetPort: number,
  ): Promise<{ port: number; close(): Promise<void> }>;
}

const ETCD_CLIENT_PORT = 2379;

/** The etcd Pods' client URLs the API knows, or none when it does not answer in time. */
async function endpointsFromAPI(client: KubeClient, timeoutMs: number): Promise<string[]> {
  try {
    return await etcdEndpointsFromPods(etcdPodLister(client), {
      timeoutMs,
      intervalMs: Math.min(500, timeoutMs),
    });
  } catch {
    return [];
  }
}

export function realResetEtcd(opts: RealResetEtcdOptions = {}): ResetEtcdAccess {
  return {
    async removeMember(host, member, tls, client) {
      const endpoints = [member.clientURL];
      if (client) {
        const known = await endpointsFromAPI(client, opts.podDiscoveryTimeoutMs ?? 5_000);
        for (const e of known) if (!endpoints.includes(e)) endpoints.push(e);
      }
      const forward = (host as Host & Forwarding).forward?.bind(host);
      const opened: { close(): Promise<void> }[] = [];
      try {
        let reach = endpoints;
        let own = member.clientURL;
        if (forward) {
          reach = [];
          for (const endpoint of endpoints) {
            const url = new URL(endpoint);
            const f = await forward(
              url.hostname.replace(/^\[|\]$/g, ""),
              Number(url.port || ETCD_CLIENT_PORT),
            );
            opened.push(f);
            const local = `https://127.0.0.1:${f.port}`;
            reach.push(local);
            if (endpoint === member.clientURL) own = local;
          }
        }
        const cluster = new EtcdCluster(
          new EtcdClient({
            endpoints: reach,
            tls,
            ...(opts.requestTimeoutMs !== undefined
              ? { requestTimeoutMs: opts.requestTimeoutMs }
              : {}),
          }),
          {
            ...(opts.apiCallTimeoutMs !== undefined
              ? { apiCallTimeoutMs: opts.apiCallTimeoutMs }
              : {}),
            ...(opts.retryIntervalMs !== undefined
              ? { retryIntervalMs: opts.retryIntervalMs }
              : {}),
          },
        );
        if (!forward) {
          await cluster.sync();
          const synced = cluster.endpoints;
          const others = synced.filter((e) => e !== own);
          if (others.length > 0 && others.length < synced.length) {
            cluster.client.setEndpoints([...others, own]);
          }
        }
        const members = await cluster.listMembers();
        if (!members.some((m) => m.peerURL === member.peerURL)) return "not-a-member";
        const removed = await removeStackedEtcdMember(cluster, {
          peerURL: member.peerURL,
          clientURL: own,
        });
        return removed ? "removed" : "only-member";
      } finally {
        await Promise.allSettled(opened.map((f) => f.close()));
      }
    },
  };
}
