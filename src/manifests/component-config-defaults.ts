import {
  defaultKubeletConfiguration,
  defaultKubeProxyConfiguration,
} from "../config/component-configs.js";
import { DEFAULT_DNS_DOMAIN, DEFAULT_SERVICE_SUBNET } from "../config/defaults.js";
import { DEFAULT_CERTIFICATES_DIR } from "../config/paths.js";
import { PLACEHOLDER_ADVERTISE_ADDRESS } from "../config/print.js";
import type { Release } from "../config/release.js";
import { toYAML } from "../config/yaml.js";
import { marshalKubeProxyConfiguration } from "./addons/kube-proxy-config.js";
import { marshalKubeletConfiguration } from "./kubelet.js";

// `kubeadm config print init-defaults|join-defaults --component-configs ...` (cmd/config.go):
// the defaulted component configuration documents appended after the kubeadm ones.

/** cmd/config.go legacyKindToGroupMap, sorted as getSupportedComponentConfigKinds prints it. */
export const PRINTABLE_COMPONENT_CONFIGS = ["KubeProxyConfiguration", "KubeletConfiguration"];

/**
 * The defaulted component configuration documents kubeadm appends for --component-configs
 * (getDefaultComponentConfigBytes over DefaultedStaticInitConfiguration: the placeholder
 * advertise address, the default service subnet, no pod subnet; the kubelet's resolvConf,
 * which kubeadm sets when the host runs systemd-resolved, is left out).
 */
export function defaultComponentConfigDocuments(
  kinds: readonly string[],
  release: Release,
): string[] {
  const unknown = kinds.filter((k) => !PRINTABLE_COMPONENT_CONFIGS.includes(k));
  if (unknown.length > 0) {
    throw new Error(
      `--component-configs needs to contain some of [${PRINTABLE_COMPONENT_CONFIGS.join(" ")}] (got "${unknown.join(",")}")`,
    );
  }
  return kinds.map((kind) => {
    if (kind === "KubeletConfiguration") {
      const kubelet = defaultKubeletConfiguration(undefined, {
        serviceSubnet: DEFAULT_SERVICE_SUBNET,
        dnsDomain: DEFAULT_DNS_DOMAIN,
        certificatesDir: DEFAULT_CERTIFICATES_DIR,
      });
      return toYAML(marshalKubeletConfiguration(kubelet, release));
    }
    const proxy = defaultKubeProxyConfiguration(undefined, {
      advertiseAddress: PLACEHOLDER_ADVERTISE_ADDRESS,
    });
    return marshalKubeProxyConfiguration(proxy, release);
  });
}
