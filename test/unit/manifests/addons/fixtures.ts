import { defaultInitConfig } from "../../../../src/config/defaults.js";
import { PLACEHOLDER_TOKEN } from "../../../../src/config/print.js";
import type { Release } from "../../../../src/config/release.js";
import type {
  ClusterConfiguration,
  ComponentConfig,
  InitConfig,
} from "../../../../src/config/types.js";
import { RELEASES, releaseFor } from "../../../../src/config/versions.js";

// Configurations for the addon tests, defaulted by the real defaultInitConfig so that the
// kube-proxy component config gets kubeadm's defaults (bind address, cluster CIDR) for the
// network it is given.

export const MINORS = RELEASES.map((r) => r.minor);

export interface AddonConfigOptions {
  minor?: number;
  advertiseAddress?: string;
  cluster?: ClusterConfiguration;
  kubeProxy?: ComponentConfig;
}

export function addonConfig(o: AddonConfigOptions = {}): { cfg: InitConfig; release: Release } {
  const version = `v1.${o.minor ?? 35}.2`;
  const release = structuredClone(releaseFor(version));
  const cfg = defaultInitConfig(
    {
      ignoredKinds: [],
      ...(o.cluster ? { cluster: o.cluster } : {}),
      ...(o.kubeProxy ? { kubeProxy: o.kubeProxy } : {}),
    },
    {
      resolved: { version, release, source: "test" },
      nodeName: "cp-1",
      advertiseAddress: o.advertiseAddress ?? "10.0.0.4",
      generateToken: () => PLACEHOLDER_TOKEN,
    },
  );
  return { cfg, release };
}

/** The networks every addon is built for. */
export const NETWORKS = [
  {
    name: "IPv4",
    advertiseAddress: "10.0.0.4",
    serviceSubnet: "10.96.0.0/12",
    podSubnet: "10.244.0.0/16",
    dnsIP: "10.96.0.10",
    bindAddress: "0.0.0.0",
    server: "https://10.0.0.4:6443",
  },
  {
    name: "IPv6",
    advertiseAddress: "fd00:10::4",
    serviceSubnet: "fd00::/108",
    podSubnet: "fd00:244::/56",
    dnsIP: "fd00::a",
    bindAddress: "::",
    server: "https://[fd00:10::4]:6443",
  },
  {
    name: "dual-stack, IPv4 first",
    advertiseAddress: "10.0.0.4",
    serviceSubnet: "10.96.0.0/16,fd00::/108",
    podSubnet: "10.244.0.0/16,fd00:244::/56",
    dnsIP: "10.96.0.10",
    bindAddress: "0.0.0.0",
    server: "https://10.0.0.4:6443",
  },
  {
    name: "dual-stack, IPv6 first",
    advertiseAddress: "fd00:10::4",
    serviceSubnet: "fd00::/108,10.96.0.0/16",
    podSubnet: "fd00:244::/56,10.244.0.0/16",
    dnsIP: "fd00::a",
    bindAddress: "::",
    server: "https://[fd00:10::4]:6443",
  },
] as const;
