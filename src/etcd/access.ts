import type { EtcdMember } from "../manifests/etcd.js";
import type { KubeClient } from "../kube/types.js";
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

export interface StackedEtcdAccess {
  /** kubeadm's CheckLocalEtcdClusterStatus. */
  checkClusterHealth(admin: KubeClient, tls: EtcdTLSCredentials): Promise<void>;
  /** kubeadm's CreateStackedEtcdStaticPodManifestFile: add as learner, manifest, promote, wait. */
  joinMember(
    admin: KubeClient,
    tls: EtcdTLSCredentials,
    join: StackedEtcdJoin,
  ): Promise<EtcdMember[]>;
}

export const realStackedEtcd: StackedEtcdAccess = {
  async checkClusterHealth(admin, tls) {
    const cluster = await EtcdCluster.fromPods(etcdPodLister(admin), tls);
    await cluster.checkClusterHealth();
  },
  async joinMember(admin, tls, join) {
    const cluster = await EtcdCluster.fromPods(etcdPodLister(admin), tls);
    return joinStackedEtcdMember(cluster, join);
  },
};

export function dryRunStackedEtcd(log: (line: string) => void): StackedEtcdAccess {
  return {
    checkClusterHealth() {
      log("[dryrun] Would check that the etcd cluster is healthy");
      return Promise.resolve();
    },
    async joinMember(_admin, _tls, join) {
      log(
        `[dryrun] Would add etcd member ${join.nodeName} (${join.peerURL}) as a learner, then promote it`,
      );
      const members = [{ name: join.nodeName, peerURL: join.peerURL }];
      await join.writeManifest(members);
      return members;
    },
  };
}
