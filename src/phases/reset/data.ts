import type { ClusterConfiguration } from "../../config/types.js";
import type { KubeClient } from "../../kube/types.js";
import type { Host } from "../../remote/host.js";
import type { ResetEtcdAccess } from "./etcd-access.js";
import type { ResetWording } from "./wording.js";

/**
 * What `reset` phases read (kubeadm: cmd/reset.go resetData). Built by prepareReset before any
 * phase runs; nothing here needs the API server, which may already be gone.
 * Dry run is a property of this data, not of the phases: in a dry run `host` reads the real
 * machine and reports every change instead of making it, `etcd` contacts no etcd, `wording` says
 * "Would ..." and nobody is asked to confirm. Phases run the same code either way.
 */
export interface ResetData {
  readonly host: Host;
  /** For the Runner's report; phases do not read it. */
  readonly dryRun: boolean;
  /** Whether to ask before anything changes: not with --force, not in a dry run. */
  readonly askToConfirm: boolean;
  /**
   * Asks the user a yes/no question (kubeadm's InteractivelyConfirmAction); absent when nobody
   * can answer (standard input is not a terminal).
   */
  readonly confirm: ((prompt: string) => Promise<boolean>) | undefined;
  /** Lower-cased check names; may hold "all". */
  readonly ignorePreflightErrors: ReadonlySet<string>;
  /** The folder cleaned as the PKI: --cert-dir, the cluster's certificatesDir, or the default. */
  readonly certificatesDir: string;
  /** The CRI endpoint crictl talks to ("unix:///var/run/containerd/containerd.sock"). */
  readonly criSocket: string;
  /** --cleanup-tmp-dir: also clean /etc/kubernetes/tmp. */
  readonly cleanupTmpDir: boolean;
  /** The cluster's ClusterConfiguration (kube-system/kubeadm-config), when the API answered. */
  readonly clusterConfiguration: ClusterConfiguration | undefined;
  /** A client of the cluster (admin.conf), when the API answered. */
  readonly client: KubeClient | undefined;
  /** How this node's etcd member is removed. */
  readonly etcd: ResetEtcdAccess;
  /** How the phases tell what they change. */
  readonly wording: ResetWording;
  /** false when the whole cluster goes (kubeforge down): the data directory is cleaned only. */
  readonly removeEtcdMember: boolean;
  /** What the phases found and did, for later phases. */
  readonly state: ResetState;
}

export interface ResetState {
  /**
   * The local etcd data directory remove-etcd-member cleaned. etcd may still write to it until
   * its container stops, so cleanup-node looks at it once more afterwards.
   */
  etcdDataDir?: string;
}
