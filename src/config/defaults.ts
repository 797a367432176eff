import {
  componentConfigUnknownFields,
  defaultKubeProxyConfiguration,
  defaultKubeletConfiguration,
} from "./component-configs.js";
import { joinHostPort, parseHostPort, parseIP } from "./network.js";
import { DEFAULT_CERTIFICATES_DIR, DEFAULT_ETCD_DATA_DIR } from "./paths.js";
import type { ResolvedVersion } from "./release.js";
import { CI_VERSION_PREFIX, DEFAULT_CI_IMAGE_REPOSITORY } from "./versions.js";
import type {
  BootstrapToken,
  ConfigDocuments,
  ControlPlaneComponent,
  InitConfig,
  InitConfiguration,
  Taint,
  Timeouts,
} from "./types.js";

// kubeadm's defaults for `init`: the static API defaults (apis/kubeadm/v1beta4/defaults.go,
// bootstraptoken/v1 SetDefaults_BootstrapToken) and the dynamic ones that need the machine
// (util/config/initconfiguration.go SetInitDynamicDefaults). The machine-dependent inputs come
// in through DefaultingContext, so this module stays pure.

// The CLI (cli/certs.ts) takes the default cert dir from here; config/paths.ts is its home.
export { DEFAULT_CERTIFICATES_DIR } from "./paths.js";

export const DEFAULT_SERVICE_SUBNET = "10.96.0.0/12";
export const DEFAULT_DNS_DOMAIN = "cluster.local";
export const DEFAULT_IMAGE_REPOSITORY = "registry.k8s.io";
export const DEFAULT_CLUSTER_NAME = "kubernetes";
export const DEFAULT_API_BIND_PORT = 6443; // constants.KubeAPIServerPort
/** constants.DefaultCRISocket on Linux. */
export const DEFAULT_CRI_SOCKET = "unix:///var/run/containerd/containerd.sock";
export const DEFAULT_CERTIFICATE_VALIDITY = "8760h0m0s"; // constants.CertificateValidityPeriod
export const DEFAULT_CA_CERTIFICATE_VALIDITY = "87600h0m0s"; // constants.CACertificateValidityPeriod
export const DEFAULT_TOKEN_TTL = "24h0m0s"; // constants.DefaultTokenDuration
export const DEFAULT_TOKEN_USAGES = ["signing", "authentication"];
export const DEFAULT_TOKEN_GROUPS = ["system:bootstrappers:kubeadm:default-node-token"];
export const CONTROL_PLANE_TAINT: Taint = {
  key: "node-role.kubernetes.io/control-plane",
  effect: "NoSchedule",
};

/** constants.go timeouts, in Go's Duration.String form. */
export const DEFAULT_TIMEOUTS: Required<Timeouts> = {
  controlPlaneComponentHealthCheck: "4m0s",
  kubeletHealthCheck: "4m0s",
  kubernetesAPICall: "1m0s",
  etcdAPICall: "2m0s",
  tlsBootstrap: "5m0s",
  discovery: "5m0s",
  upgradeManifests: "5m0s",
};

export interface DefaultingContext {
  /** The Kubernetes version, already resolved (labels resolve online; see versions.ts). */
  resolved: ResolvedVersion;
  /** The host's name, used when nodeRegistration.name is empty (lower-cased as kubeadm). */
  nodeName: string;
  /** The detected advertise address (node/address.ts), used when the config gives none. */
  advertiseAddress: string;
  /** New bootstrap token for tokens the config leaves without one. */
  generateToken: () => string;
  /** kubelet resolvConf to default (kubeadm: when systemd-resolved is active). */
  kubeletResolvConf?: string;
  /** Detected CRI socket; DEFAULT_CRI_SOCKET when absent (kubeadm's CRI detection). */
  criSocket?: string;
  /** kubeadm's defaulting warnings (component-config overrides, CRI socket without scheme). */
  warn?: (msg: string) => void;
}

function component(c: ControlPlaneComponent | undefined): Required<ControlPlaneComponent> {
  return {
    ...c,
    extraArgs: c?.extraArgs ?? [],
    extraVolumes: c?.extraVolumes ?? [],
    extraEnvs: c?.extraEnvs ?? [],
  };
}

function defaultToken(t: BootstrapToken, generate: () => string): BootstrapToken {
  const out: BootstrapToken = { ...t };
  // The API default is 24h; a token with an explicit expiry keeps it alone, since ttl and
  // expires are mutually exclusive (validation.go ValidateBootstrapTokens).
  if (out.ttl === undefined && out.expires === undefined) out.ttl = DEFAULT_TOKEN_TTL;
  if (!out.usages || out.usages.length === 0) out.usages = [...DEFAULT_TOKEN_USAGES];
  if (!out.groups || out.groups.length === 0) out.groups = [...DEFAULT_TOKEN_GROUPS];
  if (!out.token) out.token = generate(); // SetBootstrapTokensDynamicDefaults
  return out;
}

/** Merges and lower-cases ignored preflight checks, sorted and unique (init.go). */
export function normalizePreflightIgnores(...lists: (string[] | undefined)[]): string[] {
  return [...new Set(lists.flatMap((l) => l ?? []).map((s) => s.toLowerCase()))].sort();
}

/** nodeutil.GetHostname: trimmed and lower-cased. */
export function nodeNameFrom(given: string | undefined, hostname: string): string {
  return (given && given.trim() !== "" ? given : hostname).trim().toLowerCase();
}

/** The CRI socket kubeadm uses (SetNodeRegistrationDynamicDefaults): detected, or given with unix://. */
export function defaultCRISocket(
  given: string | undefined,
  ctx: Pick<DefaultingContext, "criSocket" | "warn">,
): string {
  if (!given) return ctx.criSocket ?? DEFAULT_CRI_SOCKET;
  if (given.includes("://")) return given;
  // kubeadm: "Usage of CRI endpoints without URL scheme is deprecated ..." then adds unix://.
  ctx.warn?.(
    `Usage of CRI endpoints without URL scheme is deprecated and can cause kubelet errors in the future. Automatically prepending scheme "unix" to the "criSocket" with value "${given}". Please update your configuration!`,
  );
  return `unix://${given}`;
}

/** An advertise address kubeadm replaces with the detected one: absent, 0.0.0.0 or ::. */
export function isUnspecified(address: string | undefined): boolean {
  if (!address) return true;
  const ip = parseIP(address);
  return ip !== undefined && ip.range() === "unspecified";
}

/**
 * kubeadm's NormalizeKubernetesVersion for a CI build: the CI registry for the control-plane
 * images when imageRepository is the default, and the version kubeadm-config records as
 * "ci/<version>" (CIImageRepository and CIKubernetesVersion, neither a field of the API).
 */
function ciBuildFields(
  resolved: ResolvedVersion,
  imageRepository: string,
): Pick<InitConfig["cluster"], "ciImageRepository" | "ciKubernetesVersion"> {
  if (!resolved.ciBuild) return {};
  const ciImageRepository = ciImageRepositoryFor(imageRepository, true);
  return {
    ciKubernetesVersion: `${CI_VERSION_PREFIX}${resolved.version}`,
    ...(ciImageRepository ? { ciImageRepository } : {}),
  };
}

/** The registry of a CI build's control-plane images: the CI one unless imageRepository was set. */
export function ciImageRepositoryFor(
  imageRepository: string,
  ciBuild: boolean,
): string | undefined {
  return ciBuild && imageRepository === DEFAULT_IMAGE_REPOSITORY
    ? DEFAULT_CI_IMAGE_REPOSITORY
    : undefined;
}

/**
 * The defaulted configuration `init` phases read. Pure: everything machine-dependent comes
 * from `ctx`. Validation (validate.ts) runs on the result.
 */
export function defaultInitConfig(docs: ConfigDocuments, ctx: DefaultingContext): InitConfig {
  const src: InitConfiguration = structuredClone(docs.init ?? {});
  const cl = structuredClone(docs.cluster ?? {});
  const warn = ctx.warn ?? (() => {});

  const tokens = src.bootstrapTokens && src.bootstrapTokens.length > 0 ? src.bootstrapTokens : [{}];
  const nr = src.nodeRegistration ?? {};
  const advertiseAddress = isUnspecified(src.localAPIEndpoint?.advertiseAddress)
    ? ctx.advertiseAddress
    : src.localAPIEndpoint!.advertiseAddress!;
  const bindPort = src.localAPIEndpoint?.bindPort || DEFAULT_API_BIND_PORT;

  const init: InitConfig["init"] = {
    ...src,
    bootstrapTokens: tokens.map((t) => defaultToken(t, ctx.generateToken)),
    nodeRegistration: {
      ...nr,
      name: nodeNameFrom(nr.name, ctx.nodeName),
      criSocket: defaultCRISocket(nr.criSocket, ctx),
      // nil means kubeadm's control-plane taint; an explicit [] means none.
      taints: nr.taints ?? [{ ...CONTROL_PLANE_TAINT }],
      kubeletExtraArgs: nr.kubeletExtraArgs ?? [],
      ignorePreflightErrors: normalizePreflightIgnores(nr.ignorePreflightErrors),
      imagePullPolicy: nr.imagePullPolicy || "IfNotPresent",
      imagePullSerial: nr.imagePullSerial ?? true,
    },
    localAPIEndpoint: { advertiseAddress, bindPort },
    skipPhases: src.skipPhases ?? [],
    timeouts: { ...DEFAULT_TIMEOUTS, ...src.timeouts },
  };

  const networking = {
    ...cl.networking,
    serviceSubnet: cl.networking?.serviceSubnet || DEFAULT_SERVICE_SUBNET,
    dnsDomain: cl.networking?.dnsDomain || DEFAULT_DNS_DOMAIN,
  };
  const etcd =
    cl.etcd?.local === undefined && cl.etcd?.external === undefined
      ? { local: { dataDir: DEFAULT_ETCD_DATA_DIR } }
      : cl.etcd.local !== undefined
        ? {
            ...cl.etcd,
            local: { ...cl.etcd.local, dataDir: cl.etcd.local.dataDir || DEFAULT_ETCD_DATA_DIR },
          }
        : { ...cl.etcd };

  // SetClusterDynamicDefaults: an endpoint without a port gets the local bind port.
  let controlPlaneEndpoint = cl.controlPlaneEndpoint;
  if (controlPlaneEndpoint) {
    const hp = parseHostPort(controlPlaneEndpoint);
    // kubeadm fails here on an invalid endpoint ("[v6]" without a port, a bad host); kubeforge
    // leaves it as written for validation to report with the others.
    if (!("problem" in hp) && hp.port === undefined)
      controlPlaneEndpoint = joinHostPort(hp.host, bindPort);
  }
  const apiServer = component(cl.apiServer);
  const cluster: InitConfig["cluster"] = {
    ...cl,
    etcd,
    networking,
    kubernetesVersion: ctx.resolved.version,
    ...(controlPlaneEndpoint ? { controlPlaneEndpoint } : {}),
    apiServer: {
      ...apiServer,
      // LowercaseSANs: some names (like ELBs) have capitals in them.
      certSANs: (cl.apiServer?.certSANs ?? []).map((s) => s.toLowerCase()),
    },
    controllerManager: component(cl.controllerManager),
    scheduler: component(cl.scheduler),
    dns: cl.dns ?? {},
    proxy: cl.proxy ?? {},
    certificatesDir: cl.certificatesDir || DEFAULT_CERTIFICATES_DIR,
    imageRepository: cl.imageRepository || DEFAULT_IMAGE_REPOSITORY,
    featureGates: cl.featureGates ?? {},
    clusterName: cl.clusterName || DEFAULT_CLUSTER_NAME,
    encryptionAlgorithm: cl.encryptionAlgorithm || "RSA-2048",
    certificateValidityPeriod: cl.certificateValidityPeriod ?? DEFAULT_CERTIFICATE_VALIDITY,
    caCertificateValidityPeriod: cl.caCertificateValidityPeriod ?? DEFAULT_CA_CERTIFICATE_VALIDITY,
    ...ciBuildFields(ctx.resolved, cl.imageRepository || DEFAULT_IMAGE_REPOSITORY),
  };

  // kubeadm init warns about component config fields its types lack, and drops them.
  for (const w of componentConfigUnknownFields(docs, ctx.resolved.release)) {
    warn(`${w}; it is ignored`);
  }
  const kubelet = defaultKubeletConfiguration(
    docs.kubelet,
    {
      serviceSubnet: networking.serviceSubnet,
      dnsDomain: networking.dnsDomain,
      certificatesDir: cluster.certificatesDir,
      ...(ctx.kubeletResolvConf !== undefined ? { resolvConf: ctx.kubeletResolvConf } : {}),
    },
    warn,
  );
  const kubeProxy = defaultKubeProxyConfiguration(
    docs.kubeProxy,
    { ...(networking.podSubnet ? { podSubnet: networking.podSubnet } : {}), advertiseAddress },
    warn,
  );

  return {
    init,
    cluster,
    kubelet,
    kubeProxy,
    kubeletUserSupplied: docs.kubelet !== undefined,
    kubeProxyUserSupplied: docs.kubeProxy !== undefined,
    ...(docs.v1beta3Documents?.length ? { v1beta3Documents: [...docs.v1beta3Documents] } : {}),
  };
}
