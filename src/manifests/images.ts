import type { Release } from "../config/release.js";
import type { InitConfig } from "../config/types.js";
import { coreDNSImage } from "./addons/coredns.js";
import { kubeProxyImage } from "./addons/kube-proxy.js";
import { etcdImageTag } from "./etcd.js";
import { pauseImage } from "./kubelet.js";
import { imageName, kubernetesImage } from "./static-pod.js";

/** The ClusterConfiguration fields that decide the control plane's images. */
export type ImageCluster = Pick<
  InitConfig["cluster"],
  "imageRepository" | "ciImageRepository" | "kubernetesVersion" | "dns" | "proxy" | "etcd"
>;

/**
 * kubeadm's images.GetControlPlaneImages, in its order: what `kubeadm config images list`
 * prints and what preflight pulls on init and on a control-plane join. kube-apiserver,
 * kube-controller-manager, kube-scheduler; kube-proxy and CoreDNS unless disabled; pause; etcd
 * unless external.
 */
export function controlPlaneImages(cluster: ImageCluster, release: Release): string[] {
  const component = (name: string) => kubernetesImage(cluster, name);
  return [
    component("kube-apiserver"),
    component("kube-controller-manager"),
    component("kube-scheduler"),
    ...(cluster.proxy?.disabled === true ? [] : [kubeProxyImage(cluster)]),
    ...(cluster.dns?.disabled === true ? [] : [coreDNSImage(cluster, release)]),
    pauseImage(cluster.imageRepository, release),
    ...(cluster.etcd.external
      ? []
      : [
          imageName(
            cluster.etcd.local?.imageRepository || cluster.imageRepository,
            "etcd",
            etcdImageTag(cluster, release),
          ),
        ]),
  ];
}
