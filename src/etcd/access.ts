import type { EtcdMember } from "../manifests/etcd.js";
import type { KubeClient } from "../kube/types.js";
import type { Route } from "../remote/route.js";
import type { EtcdTLSCredentials } from "./client.js";
import { EtcdCluster, etcdPodLister, joinStackedEtcdMember } from "./cluster.js";

// How a control-plane join reaches the stacked etcd cluster: for real (kubeadm's util/etcd), or,
// in a dry run, not at all — the member this node would add is only reported, and its etcd.yaml
// names itself alone.

export interface StackedEtcdJoin {
  nodeName: string;
  peerURL: string;
  writeManifest: (members: EtcdMember[]) => Promise<void>;
  log: (line: string) => void;
}

/**
 * How long kubeadm's etcd client retries (util/etcd reads kubeadm's active timeouts, which a join
 * takes from its JoinConfiguration): finding the etcd endpoints in the etcd Pods' annotations
 * (timeouts.kubernetesAPICall) and each etcd call (timeouts.etcdAPICall).
 */
export interface StackedEtcdTimeouts {
  kubernetesAPICallMs: number;
  etcdAPICallMs: number;
}

export interface StackedEtcdAccess {
  /** kubeadm's CheckLocalEtcdClusterStatus. */
  checkClusterHealth(
    admin: KubeClient,
    tls: EtcdTLSCredentials,
    timeouts: StackedEtcdTimeouts,
  ): Promise<void>;
  /** kubeadm's CreateStackedEtcdStaticPodManifestFile: add as learner, manifest, promote, wait. */
  joinMember(
    admin: KubeClient,
    tls: EtcdTLSCredentials,
    timeouts: StackedEtcdTimeouts,
    join: StackedEtcdJoin,
  ): Promise<EtcdMember[]>;
}

/**
 * The real etcd cluster, its members reached along `route` (the joining node's: the etcd Pods'
 * client URLs are the cluster network's addresses). No route: directly.
 */
export function stackedEtcdThrough(route?: Route): StackedEtcdAccess {
  const options = (t: StackedEtcdTimeouts) => ({
    ...(route ? { route } : {}),
    apiCallTimeoutMs: t.etcdAPICallMs,
    discovery: { timeoutMs: t.kubernetesAPICallMs },
  });
  return {
    async checkClusterHealth(admin, tls, timeouts) {
      const cluster = await EtcdCluster.fromPods(etcdPodLister(admin), tls, options(timeouts));
      await cluster.checkClusterHealth();
    },
    async joinMember(admin, tls, timeouts, join) {
      const cluster = await EtcdCluster.fromPods(etcdPodLister(admin), tls, options(timeouts));
      return joinStackedEtcdMember(cluster, join);
    },
  };
}

/** The real etcd cluster, reached directly (the joining node is this machine). */
export const realStackedEtcd: StackedEtcdAccess = stackedEtcdThrough();

export function dryRunStackedEtcd(log: (line: string) => void): StackedEtcdAccess {
  return {
    checkClusterHealth() {
      log("[dryrun] Would check that the etcd cluster is healthy");
      return Promise.resolve();
    },
    async joinMember(_admin, _tls, _timeouts, join) {
      log(
        `[dryrun] Would add etcd member ${join.nodeName} (${join.peerURL}) as a learner, then promote it`,
      );
      const members = [{ name: join.nodeName, peerURL: join.peerURL }];
      await join.writeManifest(members);
      return members;
    },
  };
}
