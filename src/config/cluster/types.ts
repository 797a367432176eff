import type { ConfigDocuments, Taint } from "../types.js";

// The kubeforge Cluster document (kubeforge.dev/v1alpha1, kind Cluster): the topology `kubeforge
// up` builds. These are the defaulted, validated shapes `loadClusterSpec` returns; the written
// form is the same with every field optional (see print.ts for a commented example).

export const CLUSTER_API_VERSION = "kubeforge.dev/v1alpha1";
export const CLUSTER_API_GROUP = "kubeforge.dev";
export const CLUSTER_KIND = "Cluster";

export type NodeRole = "control-plane" | "worker";

export interface ClusterNodeSpec {
  /** The Kubernetes node name (a lower-case RFC 1123 subdomain), unique in the cluster. */
  name: string;
  /** The first control-plane node in `nodes` is the one `init` runs on. */
  role: NodeRole;
  /**
   * "local" (the machine kubeforge runs on), "ssh://[user@]host[:port]" (IPv6 bracketed), or
   * "docker" (a container kubeforge runs on the runner's Docker engine, see ClusterDockerSpec).
   */
  host: string;
  /**
   * Advertise / node IP override (canonical text); absent = detected on the node. In a
   * dual-stack cluster, also "IPv4,IPv6" (either order): the kubelet's node-ip pair; a single
   * address there gets its other-family partner detected on the node.
   */
  address?: string;
  labels?: Record<string, string>;
  /**
   * kubeadm's nodeRegistration.taints: absent = kubeadm's default for the role (the
   * control-plane taint on control planes); [] = no taints. In a cluster without workers the
   * defaulted form has [] on every control plane that did not set taints, so workloads run.
   */
  taints?: Taint[];
  /**
   * For ssh:// nodes in the defaulted form: the cluster's `ssh` settings with this node's
   * overrides merged over them (user and port resolved from the host URL). Absent for "local".
   */
  ssh?: Partial<ClusterSshSpec>;
  /** Added: a kubelet binary (a path on the runner, resolved, or an https URL) for this node. */
  kubeletBinary?: string;
}

export interface ClusterSshSpec {
  user?: string;
  port?: number;
  /** A path on the runner, `~` expanded and resolved against the Cluster file's folder. */
  privateKeyFile?: string;
  /** The key itself (PEM or OpenSSH). Secret: never printed. */
  privateKey?: string;
  passphrase?: string;
  password?: string;
  /** Use the SSH agent at SSH_AUTH_SOCK. */
  agent?: boolean;
  /** Host-key pins "SHA256:<43 base64 characters>", as `ssh-keygen -l` prints them. */
  hostKeyFingerprints?: string[];
  /** known_hosts lines, one entry per item in the defaulted form. */
  knownHosts?: string[];
  /** Accept any host key on first use, for this run only (never written to known_hosts). */
  acceptNewHostKeys?: boolean;
  /** ssh://[user@]host[:port]; its user defaults to the node's, its host key is checked too. */
  jumpHost?: string;
  sudoPassword?: string;
}

export type CniType = "bridge" | "none" | "manifest";
/** local-path: Rancher's local-path provisioner as the default StorageClass; none: no StorageClass. */
export type StorageType = "local-path" | "none";
export const STORAGE_TYPES: readonly StorageType[] = ["local-path", "none"];

/** The local registry on the runner (Cluster `registry`): where the runner pushes to. */
export interface ClusterRegistrySpec {
  /** The port on the runner: images are pushed to and named localhost:<port>/... */
  port: number;
}

export interface ClusterSpec {
  apiVersion: typeof CLUSTER_API_VERSION;
  kind: typeof CLUSTER_KIND;
  /** A DNS label that keeps this cluster's files on the runner apart from another's. */
  name: string;
  /**
   * An exact version "v1.35.2" (a "1.35.2" written is given its "v"), or a release label still
   * to resolve with config/versions resolveKubernetesVersion ("stable-1", "stable-1.35", ...).
   * "1.35" / "v1.35" are written here as "stable-1.35" (the newest 1.35 patch).
   */
  kubernetesVersion: string;
  /** The user's load balancer, VIP or DNS name, always "host:port" here (port 6443 by default). */
  controlPlaneEndpoint?: string;
  /** podSubnet "" = no pod range (allowed only when the CNI is not the built-in bridge). */
  networking: { podSubnet: string; serviceSubnet: string; dnsDomain: string };
  /** manifest: a resolved path on the runner or an https URL. */
  cni: { type: CniType; manifest?: string };
  /** The default StorageClass `up` installs after the pod network. */
  storage: StorageType;
  /** A local registry on the runner that every node's containerd pulls from; absent: none. */
  registry?: ClusterRegistrySpec;
  kubeadm: {
    /** Every extra kubeadm document (the file's own, inline, configFile's), joined by `---`. */
    documents?: string;
    /**
     * The same documents decoded once, at load, by kubeadm's strict loader (v1beta3 converted):
     * what `up` builds each node's configuration from. Absent: no kubeadm documents.
     */
    config?: ConfigDocuments;
    /** kubeadm patches folder on the runner (resolved). */
    patchesDir?: string;
    /** Added: the file `documents` was read from, resolved (its content is in `documents`). */
    configFile?: string;
    /**
     * Added: the kubeadm.k8s.io/v1beta3 documents among them ("<where>: <Kind>"), which `up`
     * refuses for a version whose kubeadm no longer reads v1beta3 once the version is resolved.
     */
    v1beta3Documents?: string[];
  };
  /** Cluster-wide SSH settings (port defaulted to 22; paths resolved). */
  ssh: ClusterSshSpec;
  nodes: ClusterNodeSpec[];
  /** Readiness timeout, a Go duration ("5m"). */
  wait: string;
  /** Workers joined in parallel, 1 to 64. */
  concurrency: number;
  /** Added: a kubelet binary for every node (a path on the runner, resolved, or an https URL). */
  kubeletBinary?: string;
  /** Added: init/join phases to skip (kubeadm phase names, e.g. "addon/kube-proxy"). */
  skipPhases?: string[];
  /** Node preparation `up` does on every host before init/join (issue 6). */
  prepare: ClusterPrepareSpec;
  /** Settings of the `docker` nodes; absent when the Cluster has none (defaults apply). */
  docker?: ClusterDockerSpec;
}

/** How `up` runs the Cluster's `host: docker` nodes on the runner's Docker engine. */
export interface ClusterDockerSpec {
  /**
   * The node image, used as it is (it must boot systemd and hold containerd); absent: kubeforge
   * builds its own from baseImage and tags it by its recipe's digest.
   */
  image?: string;
  /** The stock distribution image kubeforge's node image is built from. */
  baseImage: string;
  /** The IPv4 subnet of the cluster's Docker network; absent: a free /24 is chosen. */
  subnet?: string;
}

/** Where the node binaries are downloaded from: base URLs of the three release locations. */
export interface ClusterDownloadsSpec {
  /** kubelet and kubectl (dl.k8s.io/release layout). */
  kubernetes: string;
  /** A CI build's kubelet and kubectl, for an upgrade to one (the CI bucket's layout). */
  kubernetesCI: string;
  /** crictl (cri-tools GitHub releases layout). */
  crictl: string;
  /** CNI plugins (containernetworking/plugins GitHub releases layout). */
  cniPlugins: string;
}

/** What `up` does to a host before kubeadm's phases (src/cluster/up/prepare.ts). */
export interface ClusterPrepareSpec {
  /** false: the hosts are prepared already (binaries, runtime, kubelet unit); nothing is done. */
  enabled: boolean;
  /** Install containerd and host tools (conntrack, socat...) with apt or dnf when missing. */
  installPackages: boolean;
  /** Pull the control-plane and addon images while the rest of the preparation runs. */
  prePullImages: boolean;
  /** registry host (or "_default") → mirror URLs tried in order before the registry. */
  registryMirrors: Record<string, string[]>;
  downloads: ClusterDownloadsSpec;
}

/** A node's `host`, parsed. */
export type HostURL =
  | { type: "local" }
  | { type: "docker" }
  | { type: "ssh"; host: string; port?: number; user?: string };

/** What the edge needs to open an SSH connection to a node (reading files is the edge's job). */
export interface NodeSshTarget {
  endpoint: { host: string; port: number; user: string };
  auth: {
    privateKeyFile?: string;
    privateKey?: string;
    passphrase?: string;
    password?: string;
    agent: boolean;
  };
  hostKeys: { fingerprints?: string[]; knownHosts?: string[]; acceptNew?: boolean };
  /** Same credentials and host-key policy as the node. */
  jump?: { host: string; port: number; user: string };
  sudoPassword?: string;
}

/**
 * Values from outside the file (the action's inputs, command-line flags) that win over the
 * file's, applied before validation; `from` names where each came from in problems.
 */
export interface ClusterOverrides {
  name?: string;
  kubernetesVersion?: string;
  podSubnet?: string;
  serviceSubnet?: string;
  /** String form: "bridge", "none", a manifest path or an https URL. */
  cni?: string;
  /** "local-path" or "none" (checked like the file's). */
  storage?: string;
  /** "true", "false" or a port (checked like the file's). */
  registry?: string;
  wait?: string;
  kubeletBinary?: string;
  skipPhases?: string[];
  /** Replaces the file's privateKey and privateKeyFile. */
  privateKey?: string;
  /** ssh.passphrase, ssh.password and ssh.sudoPassword (secrets, like privateKey). */
  passphrase?: string;
  password?: string;
  sudoPassword?: string;
  hostKeyFingerprints?: string[];
  /** Extra kubeadm documents, added after the file's. */
  kubeadmDocuments?: string;
  /**
   * Feature gates for kubeadm (its own) and the components (every other), merged into the
   * kubeadm documents (config/cluster/shortcuts.ts).
   */
  featureGates?: Record<string, boolean>;
  /** The pod and service ranges' family when neither the file nor an override sets them. */
  ipFamily?: "ipv4" | "ipv6" | "dual";
  /** prepare.enabled: false when the hosts are prepared already. */
  prepare?: boolean;
  /** prepare.installPackages. */
  installPackages?: boolean;
  /** prepare.prePullImages. */
  prePullImages?: boolean;
  /**
   * Replaces a Cluster that lists no nodes of its own (a file that lists some is refused: its
   * nodes' own settings would be lost).
   */
  nodes?: Pick<ClusterNodeSpec, "name" | "role" | "host">[];
  /** Where each value came from, e.g. { podSubnet: "input pod-network-cidr" }. */
  from?: Partial<Record<Exclude<keyof ClusterOverrides, "from">, string>>;
}
