import type { EtcdTLSCredentials } from "../../etcd/client.js";
import { EtcdCluster, etcdPodLister } from "../../etcd/cluster.js";
import type { KubeClient } from "../../kube/types.js";
import { certFile, keyFile } from "../../pki/paths.js";
import type { Host } from "../../remote/host.js";
import type { Route } from "../../remote/route.js";

// How `upgrade` reaches the stacked etcd cluster (kubeadm's util/etcd NewFromCluster: endpoints
// from the etcd Pods' annotations, TLS with etcd/ca.crt and etcd/healthcheck-client), or in a
// dry run not at all.

export interface UpgradeEtcdCluster {
  /** kubeadm's CheckClusterHealth: the status of every member. */
  checkClusterHealth(): Promise<void>;
  /** kubeadm's WaitForClusterAvailable(retries, interval). */
  waitForClusterAvailable(retries: number, intervalMs: number): Promise<void>;
  /** Whether the member at `endpoint` answers a status request now (one try, no retries). */
  answers(endpoint: string): Promise<boolean>;
}

export interface UpgradeEtcdAccess {
  /** A client for the cluster as its etcd Pods describe it now (kubeadm's NewFromCluster). */
  connect(admin: KubeClient): Promise<UpgradeEtcdCluster>;
}

export interface EtcdAccessOptions {
  /** The node's host: the certificates are read from it. */
  host: Host;
  certificatesDir: string;
  /** How this process reaches the members (the node's route). */
  route?: Route;
  /** timeouts.etcdAPICall and timeouts.kubernetesAPICall. */
  etcdAPICallMs: number;
  kubernetesAPICallMs: number;
}

/** The healthcheck-client identity kubeadm's etcd client uses, read through the node's Host. */
export async function etcdClientCredentials(host: Host, dir: string): Promise<EtcdTLSCredentials> {
  const read = async (path: string) => (await host.readFile(path)).toString("utf8");
  const [ca, cert, key] = await Promise.all([
    read(certFile(dir, "etcd/ca")),
    read(certFile(dir, "etcd/healthcheck-client")),
    read(keyFile(dir, "etcd/healthcheck-client")),
  ]);
  return { ca, cert, key };
}

export function realUpgradeEtcd(opts: EtcdAccessOptions): UpgradeEtcdAccess {
  return {
    async connect(admin) {
      const cluster = await EtcdCluster.fromPods(
        etcdPodLister(admin),
        await etcdClientCredentials(opts.host, opts.certificatesDir),
        {
          ...(opts.route ? { route: opts.route } : {}),
          apiCallTimeoutMs: opts.etcdAPICallMs,
          discovery: { timeoutMs: opts.kubernetesAPICallMs },
        },
      );
      return {
        checkClusterHealth: () => cluster.checkClusterHealth(),
        waitForClusterAvailable: (retries, intervalMs) =>
          cluster.waitForClusterAvailable(retries, intervalMs),
        answers: (endpoint) =>
          cluster.client.status(endpoint).then(
            () => true,
            () => false,
          ),
      };
    },
  };
}

export function dryRunUpgradeEtcd(log: (line: string) => void): UpgradeEtcdAccess {
  return {
    connect() {
      return Promise.resolve({
        checkClusterHealth: () => {
          log("[dryrun] Would check that the etcd cluster is healthy");
          return Promise.resolve();
        },
        waitForClusterAvailable: () => Promise.resolve(),
        answers: () => Promise.resolve(true),
      });
    },
  };
}
