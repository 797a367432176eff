import {
  CONTROL_PLANE_TAINT,
  DEFAULT_API_BIND_PORT,
  DEFAULT_CERTIFICATES_DIR,
  DEFAULT_TIMEOUTS,
  type DefaultingContext,
  defaultCRISocket,
  defaultInitConfig,
  isUnspecified,
  nodeNameFrom,
  normalizePreflightIgnores,
} from "./defaults.js";
import type {
  ComponentConfig,
  ClusterConfiguration,
  ConfigDocuments,
  FileDiscovery,
  InitConfig,
  JoinConfig,
  JoinConfiguration,
} from "./types.js";

// kubeadm's defaults for `join`: the static API defaults (apis/kubeadm/v1beta4/defaults.go
// SetDefaults_JoinConfiguration, SetDefaults_Discovery, SetDefaults_FileDiscovery,
// SetDefaults_JoinControlPlane, SetDefaults_NodeRegistration, SetDefaults_Timeouts) and the
// dynamic ones (util/config/joinconfiguration.go SetJoinDynamicDefaults). Machine-dependent
// inputs come in through JoinDefaultingContext, so this module stays pure.
//
// What the defaulted form holds: only the JoinConfiguration. kubeadm join reads nothing else
// from --config (documentMapToJoinConfiguration skips every other kind); the cluster's
// ClusterConfiguration and component configs are downloaded after discovery
// (cmd/join.go fetchInitConfigurationFromJoinConfiguration), which joinInitConfig mirrors.

/** v1beta4 DefaultCACertPath (defaults_unix.go). */
export const DEFAULT_CA_CERT_PATH = `${DEFAULT_CERTIFICATES_DIR}/ca.crt`;

export interface JoinDefaultingContext {
  /** The host's name, used when nodeRegistration.name is empty (lower-cased as kubeadm). */
  nodeName: string;
  /**
   * The detected advertise address (node/address.ts). Needed only for a control-plane join
   * whose configuration names none (see joinNeedsAdvertiseAddress); when missing there,
   * validation reports it.
   */
  advertiseAddress?: string;
  /** Detected CRI socket; DEFAULT_CRI_SOCKET when absent (kubeadm's CRI detection). */
  criSocket?: string;
  /** kubeadm's defaulting warnings (CRI socket without scheme, ignored documents). */
  warn?: (msg: string) => void;
}

/** Whether defaulting will need a detected advertise address (control plane, none given). */
export function joinNeedsAdvertiseAddress(docs: ConfigDocuments): boolean {
  const cp = docs.join?.controlPlane;
  return cp !== undefined && isUnspecified(cp.localAPIEndpoint?.advertiseAddress);
}

/**
 * SetDefaults_FileDiscovery: a file:// URL becomes its path (Go's url.Parse: the scheme is
 * case-insensitive, the authority, query and fragment are dropped, escapes are decoded).
 */
export function discoveryFilePath(kubeConfigPath: string): string {
  const m = /^file:(.*)$/is.exec(kubeConfigPath);
  if (!m) return kubeConfigPath;
  const rest = m[1]!.replace(/[?#].*$/s, "");
  // "file:x" is opaque in Go (Path empty); "file://host/p" has the path "/p".
  const path = rest.startsWith("//") ? rest.slice(2).replace(/^[^/]*/, "") : "";
  try {
    return decodeURIComponent(path);
  } catch {
    return kubeConfigPath; // url.Parse fails on a bad escape: kubeadm leaves the value alone
  }
}

/**
 * The defaulted configuration `join` phases read. Pure: everything machine-dependent comes from
 * `ctx`. Throws nothing; validation (join-validate.ts) runs on the result.
 */
export function defaultJoinConfig(docs: ConfigDocuments, ctx: JoinDefaultingContext): JoinConfig {
  const src: JoinConfiguration = structuredClone(docs.join ?? {});
  const warn = ctx.warn ?? (() => {});
  // kubeadm join decodes only the JoinConfiguration; kubeadm init warns about documents it
  // ignores ("Ignored configuration document"), join does not. kubeforge says so for both.
  // (docs.ignoredKinds, the v1beta4 kinds no command here reads, are the caller's to report.)
  const ignored = [
    docs.init ? "InitConfiguration" : undefined,
    docs.cluster ? "ClusterConfiguration" : undefined,
    docs.kubelet ? "KubeletConfiguration" : undefined,
    docs.kubeProxy ? "KubeProxyConfiguration" : undefined,
  ].filter((k): k is string => k !== undefined);
  if (ignored.length > 0) {
    warn(
      `[config] WARNING: join reads only the JoinConfiguration; ignored: ${ignored.join(", ")} (the cluster's settings are downloaded from the kubeadm-config, kubelet-config and kube-proxy ConfigMaps)`,
    );
  }

  const isControlPlane = src.controlPlane !== undefined;
  const nr = src.nodeRegistration ?? {};
  const nodeRegistration: JoinConfig["join"]["nodeRegistration"] = {
    ...nr,
    name: nodeNameFrom(nr.name, ctx.nodeName),
    criSocket: defaultCRISocket(nr.criSocket, ctx),
    // SetNodeRegistrationDynamicDefaults: nil taints get the control-plane taint only on a
    // control-plane join; an explicit [] means none. Workers register without taints.
    taints: nr.taints ?? (isControlPlane ? [{ ...CONTROL_PLANE_TAINT }] : []),
    kubeletExtraArgs: nr.kubeletExtraArgs ?? [],
    ignorePreflightErrors: normalizePreflightIgnores(nr.ignorePreflightErrors),
    imagePullPolicy: nr.imagePullPolicy || "IfNotPresent",
    imagePullSerial: nr.imagePullSerial ?? true,
  };

  const d = src.discovery ?? {};
  const discovery: JoinConfig["join"]["discovery"] = {};
  if (d.bootstrapToken) {
    discovery.bootstrapToken = {
      token: d.bootstrapToken.token ?? "",
      apiServerEndpoint: d.bootstrapToken.apiServerEndpoint ?? "",
      caCertHashes: d.bootstrapToken.caCertHashes ?? [],
      unsafeSkipCAVerification: d.bootstrapToken.unsafeSkipCAVerification ?? false,
    };
  }
  if (d.file) {
    const file: FileDiscovery = { kubeConfigPath: discoveryFilePath(d.file.kubeConfigPath ?? "") };
    discovery.file = file;
  }
  // SetDefaults_Discovery: the discovery token doubles as the TLS bootstrap token.
  const tlsBootstrapToken = d.tlsBootstrapToken || d.bootstrapToken?.token;
  if (tlsBootstrapToken) discovery.tlsBootstrapToken = tlsBootstrapToken;

  const { controlPlane: _controlPlane, ...rest } = src;
  const join: JoinConfig["join"] = {
    ...rest,
    dryRun: src.dryRun ?? false,
    nodeRegistration,
    caCertPath: src.caCertPath || DEFAULT_CA_CERT_PATH,
    discovery,
    skipPhases: src.skipPhases ?? [],
    timeouts: { ...DEFAULT_TIMEOUTS, ...src.timeouts },
  };
  if (src.controlPlane) {
    const given = src.controlPlane.localAPIEndpoint;
    // SetJoinControlPlaneDefaults → SetAPIEndpointDynamicDefaults: an absent or unspecified
    // address (0.0.0.0, ::) is replaced by the detected one; an unparsable one is kept for
    // validation to report. SetDefaults_APIEndpoint: bindPort 0 → 6443.
    const advertiseAddress = isUnspecified(given?.advertiseAddress)
      ? (ctx.advertiseAddress ?? "")
      : given!.advertiseAddress!;
    join.controlPlane = {
      ...src.controlPlane,
      localAPIEndpoint: { advertiseAddress, bindPort: given?.bindPort || DEFAULT_API_BIND_PORT },
    };
  }
  return { join };
}

/** What join downloads from the cluster after discovery (decoded ConfigMap documents). */
export interface JoinClusterConfigs {
  /** kube-system/kubeadm-config, data key "ClusterConfiguration". */
  cluster: ClusterConfiguration;
  /** kube-system/kubelet-config, data key "kubelet"; kubeadm's defaults when absent. */
  kubelet?: ComponentConfig;
  /** kube-system/kube-proxy, data key "config.conf"; kubeadm's defaults when absent. */
  kubeProxy?: ComponentConfig;
}

export type JoinInitContext = Pick<DefaultingContext, "resolved" | "kubeletResolvConf" | "warn"> & {
  /**
   * The detected address for a worker (kubeadm's FetchInitConfigurationFromCluster detects it
   * too); it only picks kube-proxy's default bind family. A control plane uses its own
   * controlPlane.localAPIEndpoint.
   */
  advertiseAddress?: string;
};

/**
 * The InitConfig view of a join, as kubeadm's fetchInitConfigurationFromJoinConfiguration: an
 * empty, defaulted InitConfiguration with the cluster's ClusterConfiguration and component
 * configs, dynamically defaulted, then this node's nodeRegistration and, for a control plane,
 * its localAPIEndpoint. Control-plane phases (certs, kubeconfig, manifests, etcd) and
 * kubelet-start read it. Its timeouts are the JoinConfiguration's: kubeadm join makes them the
 * active timeouts (util/config prepareStaticVariables → SetActiveTimeouts) and every step of a
 * joining control plane reads those — the static Pods' startup probes, the etcd and API calls,
 * the waits — never InitCfg().Timeouts. No bootstrap tokens: join creates none.
 * kubeletUserSupplied and kubeProxyUserSupplied say whether the cluster had the ConfigMap (join
 * uploads neither).
 */
export function joinInitConfig(
  cfg: JoinConfig,
  fromCluster: JoinClusterConfigs,
  ctx: JoinInitContext,
): InitConfig {
  const nr = cfg.join.nodeRegistration;
  const endpoint = cfg.join.controlPlane?.localAPIEndpoint;
  const advertiseAddress = endpoint?.advertiseAddress ?? ctx.advertiseAddress ?? "";
  const docs: ConfigDocuments = {
    ignoredKinds: [],
    init: {
      nodeRegistration: structuredClone(nr),
      localAPIEndpoint: { advertiseAddress, bindPort: endpoint?.bindPort ?? DEFAULT_API_BIND_PORT },
    },
    cluster: fromCluster.cluster,
    ...(fromCluster.kubelet ? { kubelet: fromCluster.kubelet } : {}),
    ...(fromCluster.kubeProxy ? { kubeProxy: fromCluster.kubeProxy } : {}),
  };
  const initCfg = defaultInitConfig(docs, {
    resolved: ctx.resolved,
    nodeName: nr.name,
    advertiseAddress,
    generateToken: () => "",
    criSocket: nr.criSocket,
    ...(ctx.kubeletResolvConf !== undefined ? { kubeletResolvConf: ctx.kubeletResolvConf } : {}),
    ...(ctx.warn ? { warn: ctx.warn } : {}),
  });
  initCfg.init.bootstrapTokens = [];
  initCfg.init.timeouts = { ...cfg.join.timeouts };
  return initCfg;
}
