import type { ClusterDownloadsSpec } from "./cluster/types.js";
import { DEFAULT_CI_BASE_URL } from "./versions.js";

// Where the node binaries come from: the locations of kubeadm's "Installing kubeadm" page,
// tab "Without a package manager" (kubernetes/website content/en/docs/setup/
// production-environment/tools/kubeadm/install-kubeadm.md):
//   kubelet, kubectl  https://dl.k8s.io/release/<v>/bin/linux/<arch>/<bin>, <url>.sha256 holds the
//                     bare hex digest (the kubectl install page checks it with
//                     `echo "$(cat kubectl.sha256)  kubectl" | sha256sum --check`); a CI build's
//                     under kubeadm's CI bucket (versions.ts DEFAULT_CI_BASE_URL), same layout;
//   crictl            https://github.com/kubernetes-sigs/cri-tools/releases/download/<v>/
//                     crictl-<v>-linux-<arch>.tar.gz, .sha256 = bare hex (cri-tools
//                     hack/release.sh: `sha256sum -b | awk '{print $1}' | tee $file.sha256`);
//   CNI plugins       https://github.com/containernetworking/plugins/releases/download/<v>/
//                     cni-plugins-linux-<arch>-<v>.tgz, .sha256 = "hex  name" (plugins
//                     scripts/release.sh: `sha256sum $f > $f.sha256`).

/** The release locations: the default of the Cluster's prepare.downloads. */
export const OFFICIAL_SOURCES: ClusterDownloadsSpec = {
  kubernetes: "https://dl.k8s.io/release",
  kubernetesCI: DEFAULT_CI_BASE_URL,
  crictl: "https://github.com/kubernetes-sigs/cri-tools/releases/download",
  cniPlugins: "https://github.com/containernetworking/plugins/releases/download",
};
