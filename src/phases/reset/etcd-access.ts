import { EtcdClient, type EtcdTLSCredentials } from "../../etcd/client.js";
import {
  EtcdCluster,
  etcdEndpointsFromPods,
  etcdPodLister,
  removeStackedEtcdMember,
} from "../../etcd/cluster.js";
import type { KubeClient } from "../../kube/types.js";
import type { Host } from "../../remote/host.js";
import { routeThrough, type NodeRoute } from "../../remote/route.js";

// How reset removes this node's etcd member: kubeadm's RemoveStackedEtcdMemberFromCluster
// (phases/etcd/local.go) — the member whose peer URL is this node's is removed through the etcd
// API, unless it is the last member; a member already gone is fine.
// kubeadm finds the etcd endpoints through the API server (the etcd Pods' client-URL annotation)
// and gives up on the removal when the API does not answer. kubeforge starts from this node's
// own member (its client URL in etcd.yaml), adds the endpoints the API knows when it answers,
// then syncs with the member list (clientv3's Sync): the member is removed as long as some
// member answers, API server or not. The request goes to the other members first, so that a
// member never has to remove itself.
// Every endpoint is reached along the node's route (remote/route.ts): directly when this process
// connects itself, else through the node's SSH connection, the certificate still checked against
// the endpoint's own address; the member list's URLs are the node's view, and so routed too.

/** This node's etcd member, from its etcd.yaml. */
export interface LocalEtcdMember {
  name?: string;
  /** First of --initial-advertise-peer-urls: how the cluster knows this member. */
  peerURL: string;
  /** First of --advertise-client-urls. */
  clientURL: string;
}

/** What removing the member did; "dry-run": nothing, as asked. */
export type EtcdRemoval = "removed" | "only-member" | "not-a-member" | "dry-run";

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
  /** A route of its own for the host, closed when the removal ends; default routeThrough(host, {}). */
  routeFor?: (host: Host) => NodeRoute;
}

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

/** A dry run's etcd access: it contacts no etcd and removes nothing. */
export function dryRunResetEtcd(): ResetEtcdAccess {
  return { removeMember: () => Promise.resolve("dry-run") };
}

export function realResetEtcd(opts: RealResetEtcdOptions = {}): ResetEtcdAccess {
  return {
    async removeMember(host, member, tls, client) {
      const endpoints = [member.clientURL];
      if (client) {
        const known = await endpointsFromAPI(client, opts.podDiscoveryTimeoutMs ?? 5_000);
        for (const e of known) if (!endpoints.includes(e)) endpoints.push(e);
      }
      const own = member.clientURL;
      // A route of its own: the forwards it opens end with the removal.
      const route = (opts.routeFor ?? ((h: Host) => routeThrough(h, {})))(host);
      try {
        const cluster = new EtcdCluster(
          new EtcdClient({
            endpoints,
            tls,
            route,
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
        await cluster.sync();
        const synced = cluster.endpoints;
        const others = synced.filter((e) => e !== own);
        if (others.length > 0 && others.length < synced.length) {
          cluster.client.setEndpoints([...others, own]);
        }
        const members = await cluster.listMembers();
        if (!members.some((m) => m.peerURL === member.peerURL)) return "not-a-member";
        const removed = await removeStackedEtcdMember(cluster, {
          peerURL: member.peerURL,
          clientURL: own,
        });
        return removed ? "removed" : "only-member";
      } finally {
        await route.close();
      }
    },
  };
}
