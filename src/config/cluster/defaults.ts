import { DEFAULT_DNS_DOMAIN, DEFAULT_SERVICE_SUBNET } from "../defaults.js";
import { DEFAULT_KUBERNETES_VERSION } from "../versions.js";
import { OFFICIAL_SOURCES } from "../release-sources.js";
import { DEFAULT_SSH_PORT } from "./ssh.js";
import {
  CLUSTER_API_VERSION,
  CLUSTER_KIND,
  type ClusterPrepareSpec,
  type ClusterSpec,
  type StorageType,
} from "./types.js";

// The Cluster file's defaults. The kubeadm ones (service subnet, DNS domain, version label)
// come from config/defaults.ts and config/versions.ts; these are kubeforge's own.

export const DEFAULT_CLUSTER_NAME = "kubeforge";
/**
 * kubeadm leaves podSubnet empty, but kubeforge's built-in bridge CNI needs a pod range to give
 * each node its own slice (the controller manager's --allocate-node-cidrs). 10.244.0.0/16 is
 * the range flannel and kind use, so manifests written for them work unchanged.
 */
export const DEFAULT_POD_SUBNET = "10.244.0.0/16";
export { DEFAULT_DNS_DOMAIN, DEFAULT_SERVICE_SUBNET };
export const DEFAULT_WAIT = "5m";
/** PersistentVolumeClaims bind out of the box, as in kind, k3s and minikube. */
export const DEFAULT_STORAGE: StorageType = "local-path";
/**
 * The local registry's port on the runner: kind's recipe's (5000 is taken by macOS's AirPlay
 * receiver, kind docs "Local Registry").
 */
export const DEFAULT_REGISTRY_PORT = 5001;
export const DEFAULT_CONCURRENCY = 8;
export const MAX_CONCURRENCY = 64;
/** kubeadm's API server port (constants.KubeAPIServerPort), for an endpoint given without one. */
export const DEFAULT_ENDPOINT_PORT = 6443;

/**
 * Node preparation is on by default: a stock runner or a fresh VM has no kubelet, and hosted
 * runners ship containerd with its CRI plugin disabled. Binaries come from their official
 * release locations (node/artifacts/catalog.ts, kubeadm's "without a package manager" install).
 */
export function defaultPrepare(): ClusterPrepareSpec {
  return {
    enabled: true,
    installPackages: true,
    prePullImages: true,
    registryMirrors: {},
    downloads: { ...OFFICIAL_SOURCES },
  };
}

/** The node of a Cluster file that lists none: the runner itself, named as kind names it. */
export function defaultNodeName(clusterName: string): string {
  return `${clusterName}-control-plane`;
}

/**
 * The Cluster a file without any setting describes: one control plane on the runner itself,
 * untainted (there is no worker to run workloads on), the bridge CNI, the newest stable version.
 */
export function defaultClusterSpec(): ClusterSpec {
  return {
    apiVersion: CLUSTER_API_VERSION,
    kind: CLUSTER_KIND,
    name: DEFAULT_CLUSTER_NAME,
    kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
    networking: {
      podSubnet: DEFAULT_POD_SUBNET,
      serviceSubnet: DEFAULT_SERVICE_SUBNET,
      dnsDomain: DEFAULT_DNS_DOMAIN,
    },
    cni: { type: "bridge" },
    storage: DEFAULT_STORAGE,
    kubeadm: {},
    ssh: { port: DEFAULT_SSH_PORT },
    nodes: [
      {
        name: defaultNodeName(DEFAULT_CLUSTER_NAME),
        role: "control-plane",
        host: "local",
        taints: [],
      },
    ],
    wait: DEFAULT_WAIT,
    concurrency: DEFAULT_CONCURRENCY,
    prepare: defaultPrepare(),
  };
}
