// The fixed host paths of a kubeadm node, written down once (kubeadm: constants/constants.go,
// apis/kubeadm/v1beta4/defaults.go). Configurable ones (certificatesDir, etcd dataDir) are
// only the defaults here; phases read the configured value.

/** constants.KubernetesDir: kubeconfig files, static Pod manifests and the default cert dir. */
export const KUBERNETES_DIR = "/etc/kubernetes";
/** v1beta4 DefaultCertificatesDir. */
export const DEFAULT_CERTIFICATES_DIR = `${KUBERNETES_DIR}/pki`;
/** constants.GetStaticPodDirectory() and v1beta4 DefaultManifestsDir (the kubelet's staticPodPath). */
export const MANIFESTS_DIR = `${KUBERNETES_DIR}/manifests`;
/** v1beta4 DefaultEtcdDataDir. */
export const DEFAULT_ETCD_DATA_DIR = "/var/lib/etcd";

// kubeconfig file names under KUBERNETES_DIR (constants.AdminKubeConfigFileName and the rest).
export const ADMIN_KUBECONFIG = "admin.conf";
export const SUPER_ADMIN_KUBECONFIG = "super-admin.conf";
export const KUBELET_KUBECONFIG = "kubelet.conf";
export const CONTROLLER_MANAGER_KUBECONFIG = "controller-manager.conf";
export const SCHEDULER_KUBECONFIG = "scheduler.conf";
