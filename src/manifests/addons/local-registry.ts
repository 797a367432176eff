import { dump } from "js-yaml";
import type { KubeObject } from "../../types/kube-object.js";

// How tools find a cluster's local registry: the ConfigMap kube-public/local-registry-hosting of
// KEP-1755 ("Standard for communicating a local registry", kubernetes/enhancements
// keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry), which kind's "Local
// Registry" recipe and k3d create and Tilt and Skaffold read. Its one key holds a YAML document
// of the LocalRegistryHostingV1 fields. `hostFromContainerRuntime` is left out: every node's
// containerd maps `host` itself to the registry (a hosts.toml), so an image is named the same on
// the runner and in a pod spec, which the KEP says the field's absence means.

export const LOCAL_REGISTRY_HOSTING_NAMESPACE = "kube-public";
export const LOCAL_REGISTRY_HOSTING_NAME = "local-registry-hosting";
export const LOCAL_REGISTRY_HOSTING_KEY = "localRegistryHosting.v1";
/** The README's section on the registry: the KEP's `help`, a page for humans. */
export const LOCAL_REGISTRY_HELP = "https://github.com/kubeforge/kubeforge#local-registry";

export interface LocalRegistryHosting {
  /** host:port where the runner pushes, and what pods name images by ("localhost:5001"). */
  host: string;
  help?: string;
}

export function localRegistryHostingConfigMap(r: LocalRegistryHosting): KubeObject {
  const value = { host: r.host, help: r.help ?? LOCAL_REGISTRY_HELP };
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: LOCAL_REGISTRY_HOSTING_NAME,
      namespace: LOCAL_REGISTRY_HOSTING_NAMESPACE,
    },
    // Quoted strings: "localhost:5001" must not read back as anything but text.
    data: {
      [LOCAL_REGISTRY_HOSTING_KEY]: dump(value, { quoteStyle: "double", forceQuotes: true }),
    },
  };
}
