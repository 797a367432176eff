import {
  DEFAULT_API_BIND_PORT,
  DEFAULT_CA_CERTIFICATE_VALIDITY,
  DEFAULT_CERTIFICATE_VALIDITY,
  DEFAULT_CLUSTER_NAME,
  DEFAULT_CRI_SOCKET,
  DEFAULT_DNS_DOMAIN,
  DEFAULT_IMAGE_REPOSITORY,
  DEFAULT_SERVICE_SUBNET,
  DEFAULT_TIMEOUTS,
  DEFAULT_TOKEN_GROUPS,
  DEFAULT_TOKEN_TTL,
  DEFAULT_TOKEN_USAGES,
} from "./defaults.js";
import { DEFAULT_CERTIFICATES_DIR, DEFAULT_ETCD_DATA_DIR } from "./paths.js";
import type { Release } from "./release.js";
import { KUBEADM_V1BETA4 } from "./types.js";
import { RELEASES } from "./versions.js";
import { toYAML, toYAMLDocuments } from "./yaml.js";

// `kubeadm config print init-defaults` / `join-defaults` (kubeadm: cmd/config.go
// getDefaultInitConfigBytes/getDefaultNodeConfigBytes over util/config
// DefaultedStaticInitConfiguration): the defaulted v1beta4 documents with placeholder values
// instead of anything detected on the machine, so the output is the same everywhere.

/** configutil.PlaceholderToken. */
export const PLACEHOLDER_TOKEN = "abcdef.0123456789abcdef";
export const PLACEHOLDER_ADVERTISE_ADDRESS = "1.2.3.4";
export const PLACEHOLDER_NODE_NAME = "node";
/** cmd/config.go: the discovery endpoint in join-defaults. */
export const PLACEHOLDER_API_SERVER_ENDPOINT = "kube-apiserver:6443";

/**
 * constants.CurrentKubernetesVersion.String() of the kubeadm being imitated: its own minor's
 * ".0", without the "v" (k8s.io/apimachinery version.Version.String()).
 */
function printedVersion(release: Release): string {
  return `1.${release.minor}.0`;
}

export interface DefaultsPrintOptions {
  /** The kubeadm release to print as; the newest kubeforge knows by default. */
  release?: Release;
}

export const newestRelease = () => RELEASES[RELEASES.length - 1]!;

/** What `kubeforge config print init-defaults` prints. */
export function initDefaultsYAML(opts: DefaultsPrintOptions = {}): string {
  const release = opts.release ?? newestRelease();
  const init = {
    apiVersion: KUBEADM_V1BETA4,
    kind: "InitConfiguration",
    bootstrapTokens: [
      {
        groups: DEFAULT_TOKEN_GROUPS,
        token: PLACEHOLDER_TOKEN,
        ttl: DEFAULT_TOKEN_TTL,
        usages: DEFAULT_TOKEN_USAGES,
      },
    ],
    localAPIEndpoint: {
      advertiseAddress: PLACEHOLDER_ADVERTISE_ADDRESS,
      bindPort: DEFAULT_API_BIND_PORT,
    },
    nodeRegistration: {
      criSocket: DEFAULT_CRI_SOCKET,
      imagePullPolicy: "IfNotPresent",
      imagePullSerial: true,
      name: PLACEHOLDER_NODE_NAME,
      // `taints` has no omitempty in kubeadm's type: nil prints as null and means "default".
      taints: null,
    },
    timeouts: DEFAULT_TIMEOUTS,
  };
  const cluster = {
    apiVersion: KUBEADM_V1BETA4,
    kind: "ClusterConfiguration",
    apiServer: {},
    caCertificateValidityPeriod: DEFAULT_CA_CERTIFICATE_VALIDITY,
    certificateValidityPeriod: DEFAULT_CERTIFICATE_VALIDITY,
    certificatesDir: DEFAULT_CERTIFICATES_DIR,
    clusterName: DEFAULT_CLUSTER_NAME,
    controllerManager: {},
    dns: {},
    encryptionAlgorithm: "RSA-2048",
    etcd: { local: { dataDir: DEFAULT_ETCD_DATA_DIR } },
    imageRepository: DEFAULT_IMAGE_REPOSITORY,
    kubernetesVersion: printedVersion(release),
    networking: { dnsDomain: DEFAULT_DNS_DOMAIN, serviceSubnet: DEFAULT_SERVICE_SUBNET },
    proxy: {},
    scheduler: {},
  };
  return toYAMLDocuments([init, cluster]);
}

/**
 * What `kubeforge config print join-defaults` prints. kubeadm fills the node name with the
 * host's name; pass it as `nodeName` to do the same (default: the placeholder "node").
 */
export function joinDefaultsYAML(opts: DefaultsPrintOptions & { nodeName?: string } = {}): string {
  const join = {
    apiVersion: KUBEADM_V1BETA4,
    kind: "JoinConfiguration",
    caCertPath: `${DEFAULT_CERTIFICATES_DIR}/ca.crt`,
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: PLACEHOLDER_API_SERVER_ENDPOINT,
        token: PLACEHOLDER_TOKEN,
        // kubeadm sets this so the printed file validates; real joins should pin the CA.
        unsafeSkipCAVerification: true,
      },
      tlsBootstrapToken: PLACEHOLDER_TOKEN,
    },
    nodeRegistration: {
      criSocket: DEFAULT_CRI_SOCKET,
      imagePullPolicy: "IfNotPresent",
      imagePullSerial: true,
      name: (opts.nodeName ?? PLACEHOLDER_NODE_NAME).trim().toLowerCase(),
      taints: null,
    },
    timeouts: DEFAULT_TIMEOUTS,
  };
  return toYAML(join);
}
