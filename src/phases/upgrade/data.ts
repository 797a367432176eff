import type { Release } from "../../config/release.js";
import type { InitConfig } from "../../config/types.js";
import type { ClusterAccess, KubeClient } from "../../kube/types.js";
import type { KeySource } from "../../pki/key-source.js";
import type { PatchDirReader } from "../../manifests/patches.js";
import type { Host } from "../../remote/host.js";
import type { UpgradeEtcdAccess } from "./etcd-access.js";

// What the phases of `kubeforge upgrade apply` and `upgrade node` may read: kubeadm's
// cmd/phases/upgrade/apply Data and node Data in one shape (cmd/upgrade/apply.go applyData,
// node.go nodeData). The configuration is the cluster's own (kube-system/kubeadm-config and the
// component-config ConfigMaps) seen as this node's InitConfig; for `apply` its kubernetesVersion
// is already the target, for `node` it is whatever `apply` stored. Phases never see flags.

/** How long the waits of a static Pod upgrade last (kubeadm's constants, scaled by tests). */
export interface UpgradeTiming {
  /** timeouts.upgradeManifests: the hash change, then the Pods Running (default 5m). */
  upgradeManifestsMs: number;
  /**
   * Between two reads of a mirror Pod or a Pod list. kubeadm waits 500 ms
   * (constants.KubernetesAPICallRetryInterval); kubeforge reads every 50 ms, so a component
   * back after its restart is seen at once rather than up to half a second late, four times on
   * a control plane (the outcome and the bound are kubeadm's; one small GET each time).
   */
  pollIntervalMs: number;
  /**
   * performEtcdStaticPodUpgrade's WaitForClusterAvailable: kubeadm tries 10 times 15 s apart;
   * kubeforge tries every second within the same 150 s, so an etcd back after 2 s lets the
   * upgrade go on after 2 s rather than 15 (the outcome and the bound are kubeadm's).
   */
  etcdRetries: number;
  etcdRetryIntervalMs: number;
  /** The CreateJob health check's own timeout (15s in v1.35; 1 min from v1.36, k/k#136273). */
  createJobTimeoutMs: number;
}

export interface UpgradeData {
  readonly command: "apply" | "node";
  /** In a dry run a DryRunHost: node files land in the dry-run folder. */
  readonly host: Host;
  /** The cluster's configuration for this node, kubernetesVersion = the version to reach. */
  readonly cfg: InitConfig;
  readonly release: Release;
  /** apply: always; node: /etc/kubernetes/manifests/kube-apiserver.yaml exists. */
  readonly isControlPlaneNode: boolean;
  readonly dryRun: boolean;
  readonly etcdUpgrade: boolean;
  readonly renewCerts: boolean;
  readonly patchesDir: string | undefined;
  /** Files of the machine kubeforge runs on, where patch files are read (InitData.runnerFiles). */
  readonly runnerFiles: PatchDirReader;
  /** Lower-cased check names (or "all") from --ignore-preflight-errors and the config. */
  readonly ignorePreflightErrors: ReadonlySet<string>;
  /** apply only: --force (also skips the confirmation). */
  readonly force: boolean;
  readonly allowExperimentalUpgrades: boolean;
  readonly allowRCUpgrades: boolean;
  /** apply only: ask before changing anything (not with -y, -f or --dry-run). */
  readonly sessionIsInteractive: boolean;
  /** The kubeadm version kubeforge acts as (the target release's, for the skew policy). */
  readonly kubeadmVersion: string;
  /** The client of --kubeconfig (admin.conf on a control plane, kubelet.conf on a worker). */
  client(): Promise<KubeClient>;
  /** How the phases reach the cluster (the client above for every kubeconfig path). */
  readonly cluster: ClusterAccess;
  readonly etcd: UpgradeEtcdAccess;
  /** Answers the interactive confirmation; false stops the upgrade. */
  confirm(question: string): Promise<boolean>;
  /** KUBEADM_UPGRADE_DRYRUN_DIR when set, else /etc/kubernetes/tmp (kubelet config backups). */
  readonly kubeletBackupParent: string;
  readonly proxyEnv: Readonly<Record<string, string>>;
  readonly keys: KeySource;
  readonly timing: UpgradeTiming;
  /** One instant for the whole run: renewed certificates and backup folder names. */
  now(): Date;
  /** Results for the user (the closing message): stdout, or the log in a dry run. */
  readonly output: (text: string) => void;
}

/** kubeadm's values (constants.go, phases/upgrade/staticpods.go, health.go in v1.35), but for the poll interval (see UpgradeTiming). */
export const KUBEADM_UPGRADE_TIMING: UpgradeTiming = {
  upgradeManifestsMs: 5 * 60_000,
  pollIntervalMs: 50,
  etcdRetries: 150,
  etcdRetryIntervalMs: 1_000,
  createJobTimeoutMs: 15_000,
};
