import { DEFAULT_BASE_IMAGE } from "../docker/network-plan.js";
import { DEFAULT_KUBERNETES_VERSION, SUPPORTED_RANGE } from "../versions.js";
import {
  DEFAULT_CLUSTER_NAME,
  DEFAULT_CONCURRENCY,
  DEFAULT_DNS_DOMAIN,
  DEFAULT_POD_SUBNET,
  DEFAULT_SERVICE_SUBNET,
  DEFAULT_STORAGE,
  DEFAULT_WAIT,
  MAX_CONCURRENCY,
  defaultNodeName,
} from "./defaults.js";
import { OFFICIAL_SOURCES } from "../release-sources.js";
import { DEFAULT_SSH_PORT } from "./ssh.js";
import { CLUSTER_API_VERSION, CLUSTER_KIND } from "./types.js";

// `kubeforge config print cluster-defaults`: a Cluster document with every field, set to its
// default or (for fields without one) shown commented out with an example. It loads back as
// defaultClusterSpec() (tested), so it is a starting point that is valid as printed.

/** What `kubeforge config print cluster-defaults` prints. */
export function clusterDefaultsYAML(): string {
  return `# A kubeforge Cluster: \`kubeforge up -f cluster.yaml\` builds it, \`kubeforge config validate
# --config cluster.yaml\` checks it. Every field is shown with its default; lines starting with
# "#" are optional settings with an example value. Paths are on the machine kubeforge runs on:
# "~/" is its home, and a relative path is relative to this file's folder.
apiVersion: ${CLUSTER_API_VERSION}
kind: ${CLUSTER_KIND}
# Keeps this cluster's files apart from another's on the same runner (a DNS label).
name: ${DEFAULT_CLUSTER_NAME}
# An exact version (v1.35.2), a minor (1.35: its newest patch) or a release label (stable,
# stable-1.35). The default is the newest stable release; kubeforge supports ${SUPPORTED_RANGE}.
kubernetesVersion: ${DEFAULT_KUBERNETES_VERSION}
# Your load balancer, VIP or DNS name in front of the API servers ("host" or "host:port", port
# 6443 by default). Without one, kubeforge provides an endpoint for several control planes.
# controlPlaneEndpoint: api.example.com:6443
networking:
  # The built-in bridge CNI needs a pod range to give each node its own slice.
  podSubnet: ${DEFAULT_POD_SUBNET}
  serviceSubnet: ${DEFAULT_SERVICE_SUBNET}
  dnsDomain: ${DEFAULT_DNS_DOMAIN}
# bridge (built in, pulls no image), none (bring your own), or a manifest applied after init:
# a path (cni: ./calico.yaml) or an https URL. Object form: {type: manifest, manifest: ...}.
cni: bridge
# kubeadm documents to merge (InitConfiguration, ClusterConfiguration, JoinConfiguration,
# KubeletConfiguration, KubeProxyConfiguration). They can also follow this document in the
# same file, after a "---" line. kubeforge sets node names, addresses and discovery itself.
kubeadm:
  # documents: |
  #   apiVersion: kubeadm.k8s.io/v1beta4
  #   kind: ClusterConfiguration
  #   apiServer:
  #     certSANs: [api.example.com]
  # configFile: kubeadm.yaml          # a file holding such documents
  # patchesDir: patches               # kubeadm --patches folder, copied to every node
# How to reach ssh:// nodes. A node's own "ssh:" overrides these for that node.
ssh:
  port: ${DEFAULT_SSH_PORT}                            # when the host URL has none
  # user: ubuntu                      # when the host URL has none
  # Authentication: a key file, the key itself, a password, or the SSH agent.
  # privateKeyFile: ~/.ssh/id_ed25519
  # privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\\n..."
  # passphrase: ...                   # for an encrypted key
  # password: ...
  # agent: false                      # use the agent at SSH_AUTH_SOCK
  # Host keys: pins as \`ssh-keygen -l -f key.pub\` prints them, known_hosts lines, or accept
  # any key on first use for this run only (nothing is written to known_hosts).
  # hostKeyFingerprints: ["SHA256:ohD8VZEXGWo6Ez8GSEJQ9WpafgLFsOfLOtGGQCQo6Og"]
  # knownHosts: ["203.0.113.10 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG..."]
  # acceptNewHostKeys: false
  # jumpHost: ssh://bastion.example.com
  # sudoPassword: ...                 # when sudo asks for one (sent on stdin, never in argv)
# The first control plane runs init; the others join one at a time, workers in parallel.
# host: "local" (this machine, at most one node), ssh://[user@]host[:port], or "docker" (a
# container with systemd on this machine's Docker engine; see docker: below).
nodes:
- name: ${defaultNodeName(DEFAULT_CLUSTER_NAME)}
  role: control-plane                 # or worker
  host: local
  # address: 10.0.0.10                # the node IP to advertise (default: detected); dual-stack:
  #                                   # "10.0.0.10,fd00::10", the kubelet's node-ip pair
  # labels: {tier: web}
  # kubeletBinary: ./kubelet          # this node's kubelet (a path or an https URL)
  # ssh: {user: admin, port: 2222}    # this node's own ssh settings (ssh:// nodes only)
  # Default: kubeadm's control-plane taint; none when the cluster has no worker.
  taints: []
# - {name: cp-1, role: control-plane, host: "ssh://ubuntu@203.0.113.10:22"}
# - {name: w-1, role: worker, host: "ssh://ubuntu@203.0.113.11", taints: [{key: gpu, value: "true", effect: NoSchedule}]}
# - {name: w-2, role: worker, host: docker}
# The default StorageClass, installed after the pod network: local-path (Rancher's local-path
# provisioner; volumes are folders under /opt/local-path-provisioner on the pod's node) or none.
storage: ${DEFAULT_STORAGE}
# registry: true   # a local registry on the runner: push to localhost:5001, every node pulls it
# How long to wait for every node to be Ready and CoreDNS available (a Go duration).
wait: ${DEFAULT_WAIT}
# Workers joined at once (1 to ${MAX_CONCURRENCY}).
concurrency: ${DEFAULT_CONCURRENCY}
# kubeletBinary: https://example.com/kubelet   # a kubelet for every node
# skipPhases: [addon/kube-proxy]                # init/join phases to skip
# What up does on every host before kubeadm's phases: kubelet, kubectl, crictl and the CNI
# plugins downloaded (checked against their published SHA-256) and installed, containerd
# configured for the kubelet, kernel modules, sysctls, swap, the kubelet service.
prepare:
  enabled: true                       # false: the hosts are prepared already
  installPackages: true               # containerd, conntrack, socat... with apt or dnf
  prePullImages: true                 # control-plane and addon images, while the rest runs
  # Registry host (or _default) → mirrors tried in order before the registry itself (none).
  # registryMirrors: {docker.io: ["https://mirror.gcr.io"]}
  # Where the binaries come from (base URLs with the official release layouts).
  downloads:
    kubernetes: ${OFFICIAL_SOURCES.kubernetes}
    kubernetesCI: ${OFFICIAL_SOURCES.kubernetesCI}  # a CI build's, for upgrade --to ci/…
    crictl: ${OFFICIAL_SOURCES.crictl}
    cniPlugins: ${OFFICIAL_SOURCES.cniPlugins}
# The docker nodes: containers on this machine's Docker engine (DOCKER_HOST), one network per
# cluster with stable addresses, /var on a volume each; all labelled, removed by down.
# docker:
#   image: my/node:1                  # your node image (systemd, containerd); default: built
#   baseImage: ${DEFAULT_BASE_IMAGE}     # what kubeforge's node image is built from
#   subnet: 172.30.5.0/24             # the cluster network (default: a free 172.30.x.0/24)
`;
}
