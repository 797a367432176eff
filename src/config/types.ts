// kubeadm's configuration API in its internal form: v1beta4 field names and shapes
// (kubernetes/kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go). Files in v1beta3
// are converted into this form on load. Optional fields stay optional here; `defaults.ts`
// fills them and the defaulted form is what phases read (see `InitConfig` below).

export const KUBEADM_GROUP = "kubeadm.k8s.io";
export const KUBEADM_V1BETA4 = "kubeadm.k8s.io/v1beta4";
export const KUBEADM_V1BETA3 = "kubeadm.k8s.io/v1beta3";
export const KUBELET_CONFIG_API = "kubelet.config.k8s.io/v1beta1";
export const KUBE_PROXY_CONFIG_API = "kubeproxy.config.k8s.io/v1alpha1";

/** v1beta4 structured extra argument; the same name may repeat. */
export interface Arg {
  name: string;
  value: string;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export type HostPathType =
  | ""
  | "DirectoryOrCreate"
  | "Directory"
  | "FileOrCreate"
  | "File"
  | "Socket"
  | "CharDevice"
  | "BlockDevice";

export interface HostPathMount {
  name: string;
  hostPath: string;
  mountPath: string;
  readOnly?: boolean;
  pathType?: HostPathType;
}

export interface Taint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  timeAdded?: string;
}

export type ImagePullPolicy = "Always" | "IfNotPresent" | "Never";

export interface NodeRegistrationOptions {
  name?: string;
  criSocket?: string;
  /** undefined = kubeadm's default for the role; [] = explicitly no taints. */
  taints?: Taint[] | null;
  kubeletExtraArgs?: Arg[];
  ignorePreflightErrors?: string[];
  imagePullPolicy?: ImagePullPolicy;
  imagePullSerial?: boolean;
}

export interface APIEndpoint {
  advertiseAddress?: string;
  bindPort?: number;
}

/** bootstraptoken/v1 BootstrapToken. `token` is "<id>.<secret>". */
export interface BootstrapToken {
  token?: string;
  description?: string;
  /** Go duration ("24h0m0s"); "0" or "0s" = never expires. */
  ttl?: string;
  /** RFC 3339; wins over ttl. */
  expires?: string;
  usages?: string[];
  groups?: string[];
}

export interface Patches {
  directory?: string;
}

/** v1beta4 Timeouts; Go durations ("4m0s"). */
export interface Timeouts {
  controlPlaneComponentHealthCheck?: string;
  kubeletHealthCheck?: string;
  kubernetesAPICall?: string;
  etcdAPICall?: string;
  tlsBootstrap?: string;
  discovery?: string;
  upgradeManifests?: string;
}

export interface InitConfiguration {
  bootstrapTokens?: BootstrapToken[];
  dryRun?: boolean;
  nodeRegistration?: NodeRegistrationOptions;
  localAPIEndpoint?: APIEndpoint;
  certificateKey?: string;
  skipPhases?: string[];
  patches?: Patches;
  timeouts?: Timeouts;
}

export interface ControlPlaneComponent {
  extraArgs?: Arg[];
  extraVolumes?: HostPathMount[];
  extraEnvs?: EnvVar[];
}

export interface APIServer extends ControlPlaneComponent {
  certSANs?: string[];
}

export interface LocalEtcd {
  imageRepository?: string;
  imageTag?: string;
  dataDir?: string;
  extraArgs?: Arg[];
  extraEnvs?: EnvVar[];
  serverCertSANs?: string[];
  peerCertSANs?: string[];
}

export interface ExternalEtcd {
  endpoints: string[];
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

export interface Etcd {
  local?: LocalEtcd;
  external?: ExternalEtcd;
}

export interface Networking {
  /** Comma-separated; dual-stack gives two CIDRs, the first decides the Service IP family. */
  serviceSubnet?: string;
  podSubnet?: string;
  dnsDomain?: string;
}

export interface DNS {
  imageRepository?: string;
  imageTag?: string;
  disabled?: boolean;
}

export interface Proxy {
  disabled?: boolean;
}

export type EncryptionAlgorithm =
  "RSA-2048" | "RSA-3072" | "RSA-4096" | "ECDSA-P256" | "ECDSA-P384";

export interface ClusterConfiguration {
  etcd?: Etcd;
  networking?: Networking;
  kubernetesVersion?: string;
  controlPlaneEndpoint?: string;
  apiServer?: APIServer;
  controllerManager?: ControlPlaneComponent;
  scheduler?: ControlPlaneComponent;
  dns?: DNS;
  proxy?: Proxy;
  certificatesDir?: string;
  imageRepository?: string;
  featureGates?: Record<string, boolean>;
  clusterName?: string;
  encryptionAlgorithm?: EncryptionAlgorithm;
  certificateValidityPeriod?: string;
  caCertificateValidityPeriod?: string;
}

export interface BootstrapTokenDiscovery {
  token?: string;
  apiServerEndpoint?: string;
  caCertHashes?: string[];
  unsafeSkipCAVerification?: boolean;
}

export interface FileDiscovery {
  kubeConfigPath: string;
}

export interface Discovery {
  bootstrapToken?: BootstrapTokenDiscovery;
  file?: FileDiscovery;
  tlsBootstrapToken?: string;
}

export interface JoinControlPlane {
  localAPIEndpoint?: APIEndpoint;
  certificateKey?: string;
}

export interface JoinConfiguration {
  dryRun?: boolean;
  nodeRegistration?: NodeRegistrationOptions;
  caCertPath?: string;
  discovery?: Discovery;
  controlPlane?: JoinControlPlane;
  skipPhases?: string[];
  patches?: Patches;
  timeouts?: Timeouts;
}

/** kubeadm.k8s.io/v1beta4 UpgradeApplyConfiguration (apis/kubeadm/v1beta4/types.go). */
export interface UpgradeApplyConfiguration {
  kubernetesVersion?: string;
  allowExperimentalUpgrades?: boolean;
  allowRCUpgrades?: boolean;
  certificateRenewal?: boolean;
  dryRun?: boolean;
  etcdUpgrade?: boolean;
  forceUpgrade?: boolean;
  ignorePreflightErrors?: string[];
  patches?: Patches;
  printConfig?: boolean;
  skipPhases?: string[];
  imagePullPolicy?: ImagePullPolicy;
  imagePullSerial?: boolean;
}

/** v1beta4 UpgradeNodeConfiguration. */
export interface UpgradeNodeConfiguration {
  certificateRenewal?: boolean;
  dryRun?: boolean;
  etcdUpgrade?: boolean;
  ignorePreflightErrors?: string[];
  skipPhases?: string[];
  patches?: Patches;
  imagePullPolicy?: ImagePullPolicy;
  imagePullSerial?: boolean;
}

/** v1beta4 UpgradePlanConfiguration. */
export interface UpgradePlanConfiguration {
  kubernetesVersion?: string;
  allowExperimentalUpgrades?: boolean;
  allowRCUpgrades?: boolean;
  dryRun?: boolean;
  ignorePreflightErrors?: string[];
  printConfig?: boolean;
}

/** v1beta4 UpgradeDiffConfiguration (Go field DiffContextLines, JSON contextLines). */
export interface UpgradeDiffConfiguration {
  kubernetesVersion?: string;
  contextLines?: number;
}

/** v1beta4 UpgradeConfiguration: what `kubeadm upgrade --config` reads (and nothing else). */
export interface UpgradeConfiguration {
  apply?: UpgradeApplyConfiguration;
  node?: UpgradeNodeConfiguration;
  plan?: UpgradePlanConfiguration;
  diff?: UpgradeDiffConfiguration;
  timeouts?: Timeouts;
}

/** A component config document (KubeletConfiguration, KubeProxyConfiguration) kept as an object:
 *  kubeadm does not own its schema, it only defaults a few fields. */
export type ComponentConfig = Record<string, unknown> & { apiVersion: string; kind: string };

/** Every document a `--config` file may hold, after decoding and v1beta3 conversion. */
export interface ConfigDocuments {
  init?: InitConfiguration;
  cluster?: ClusterConfiguration;
  join?: JoinConfiguration;
  /** The UpgradeConfiguration, as written (`kubeforge upgrade --config`; init and join ignore it). */
  upgrade?: UpgradeConfiguration;
  kubelet?: ComponentConfig;
  kubeProxy?: ComponentConfig;
  /** Kinds kubeadm knows but that do not apply to the running command (warned about, ignored). */
  ignoredKinds: string[];
  /** Warnings kubeadm would print while loading (deprecated API versions...). */
  warnings?: string[];
  /**
   * The kubeadm.k8s.io/v1beta3 documents read ("<file>: <Kind>"), converted to v1beta4: valid
   * only for Kubernetes versions whose kubeadm still reads v1beta3 (validation decides).
   */
  v1beta3Documents?: string[];
  /** The file the documents were read from, to name it in messages. */
  source?: string;
}

type Required2<T> = { [K in keyof T]-?: NonNullable<T[K]> };

/**
 * The defaulted configuration `init` phases read. Everything kubeadm defaults is present;
 * what kubeadm leaves unset stays optional (controlPlaneEndpoint, podSubnet, external etcd...).
 */
export interface InitConfig {
  init: InitConfiguration & {
    bootstrapTokens: BootstrapToken[];
    nodeRegistration: NodeRegistrationOptions & {
      name: string;
      criSocket: string;
      taints: Taint[];
      kubeletExtraArgs: Arg[];
      ignorePreflightErrors: string[];
      imagePullPolicy: ImagePullPolicy;
      imagePullSerial: boolean;
    };
    localAPIEndpoint: Required2<APIEndpoint>;
    skipPhases: string[];
    timeouts: Required2<Timeouts>;
  };
  cluster: ClusterConfiguration & {
    etcd: Etcd;
    networking: Networking & { serviceSubnet: string; dnsDomain: string };
    /** Always an exact version ("v1.35.0") after defaulting: labels are resolved first. */
    kubernetesVersion: string;
    apiServer: APIServer & {
      extraArgs: Arg[];
      extraVolumes: HostPathMount[];
      extraEnvs: EnvVar[];
      certSANs: string[];
    };
    controllerManager: Required2<ControlPlaneComponent>;
    scheduler: Required2<ControlPlaneComponent>;
    dns: DNS;
    proxy: Proxy;
    certificatesDir: string;
    imageRepository: string;
    /** A CI build's registry for the control-plane and kube-proxy images (kubeadm's CIImageRepository). */
    ciImageRepository?: string;
    /** "ci/<version>" for a CI build: what kubeadm-config records (kubeadm's CIKubernetesVersion). */
    ciKubernetesVersion?: string;
    featureGates: Record<string, boolean>;
    clusterName: string;
    encryptionAlgorithm: EncryptionAlgorithm;
    certificateValidityPeriod: string;
    caCertificateValidityPeriod: string;
  };
  /** The KubeletConfiguration document with kubeadm's defaults applied (§5). */
  kubelet: ComponentConfig;
  /** The KubeProxyConfiguration document with kubeadm's defaults applied (§12.3). */
  kubeProxy: ComponentConfig;
  /** True when the user supplied the component config (no component-config hash annotation). */
  kubeletUserSupplied: boolean;
  kubeProxyUserSupplied: boolean;
  /** ConfigDocuments.v1beta3Documents, for validation against the resolved version. */
  v1beta3Documents?: string[];
}

/**
 * The defaulted configuration `join` phases read: the JoinConfiguration after kubeadm's v1beta4
 * defaults and SetJoinDynamicDefaults (config/join-defaults.ts). It is all `kubeadm join` takes
 * from `--config`: the ClusterConfiguration and the component configs come from the cluster
 * (kubeadm-config, kubelet-config, kube-proxy ConfigMaps) once discovery has succeeded
 * (join-defaults.ts joinInitConfig).
 */
export interface JoinConfig {
  join: JoinConfiguration & {
    dryRun: boolean;
    nodeRegistration: InitConfig["init"]["nodeRegistration"];
    /** Where the cluster CA is written (default /etc/kubernetes/pki/ca.crt). */
    caCertPath: string;
    discovery: Discovery & {
      /** Present for token discovery; the token is also the TLS bootstrap token by default. */
      bootstrapToken?: Required2<BootstrapTokenDiscovery>;
      /** file:// URLs are already paths here; an https URL stays a URL. */
      file?: FileDiscovery;
    };
    /** Present only for a control-plane join (--control-plane). */
    controlPlane?: JoinControlPlane & { localAPIEndpoint: Required2<APIEndpoint> };
    skipPhases: string[];
    timeouts: Required2<Timeouts>;
  };
}
