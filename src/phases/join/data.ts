import type { Release } from "../../config/release.js";
import type { InitConfig, JoinConfig } from "../../config/types.js";
import type { TLSBootstrapDiscovery } from "../../kube/discovery/index.js";
import type { ClusterAccess, KubeClient } from "../../kube/types.js";
import type { StackedEtcdAccess } from "../../etcd/access.js";
import type { KeySource } from "../../pki/key-source.js";
import type { PatchDirReader } from "../../manifests/patches.js";
import type { Host } from "../../remote/host.js";

/**
 * What `join` phases may read (kubeadm's cmd/phases/join JoinData). The cluster's own
 * configuration is known only after discovery, so it is a lazy value, computed once per run:
 * the first phase that needs it (preflight) performs discovery, also in a dry run.
 */
export interface JoinData {
  readonly cfg: JoinConfig;
  readonly host: Host;
  /** API writes; in a dry run, the recorder printing them. Reads during discovery are real. */
  readonly api: ClusterAccess;
  /** The stacked etcd cluster a control plane joins; in a dry run, a reporter. */
  readonly etcd: StackedEtcdAccess;
  readonly dryRun: boolean;
  readonly patchesDir: string | undefined;
  /** Files of the machine kubeforge runs on, where patch files are read (InitData.runnerFiles). */
  readonly runnerFiles: PatchDirReader;
  /** Lower-cased check names from --ignore-preflight-errors and nodeRegistration; may hold "all". */
  readonly ignorePreflightErrors: ReadonlySet<string>;
  /** Hex AES-256 key for download-certs (control-plane joins). */
  readonly certificateKey: string | undefined;
  /** Proxy variables of kubeforge's environment, copied into static pods as kubeadm does. */
  readonly proxyEnv: Readonly<Record<string, string>>;
  readonly keys: KeySource;
  /** Results for the user (the closing message): stdout, or the log in a dry run. */
  readonly output: (text: string) => void;
  now(): Date;
  /** Discovery and the TLS bootstrap kubeconfig (kubeadm: JoinData.TLSBootstrapCfg). */
  tlsBootstrap(): Promise<TLSBootstrapDiscovery>;
  /** A client authenticated by the bootstrap token (reads only: config, certs, the Node). */
  bootstrapClient(): Promise<KubeClient>;
  /**
   * The cluster's configuration as this node's InitConfig, read from kubeadm-config,
   * kubelet-config and kube-proxy with the bootstrap token (kubeadm: JoinData.InitCfg), and
   * the release of its Kubernetes version.
   */
  clusterConfig(): Promise<{ cfg: InitConfig; release: Release }>;
}
