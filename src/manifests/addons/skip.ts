// Which addons `init` installs. kubeadm (v1beta4) keeps ClusterConfiguration's dns.disabled and
// proxy.disabled in step with --skip-phases, both ways, before the workflow runs: kubeadm
// cmd/init.go manageSkippedAddons. The synced flags are what upload-config stores.

export const ADDON_PHASE = "addon";
export const COREDNS_PHASE = "addon/coredns";
export const KUBE_PROXY_PHASE = "addon/kube-proxy";

export interface AddonSwitches {
  dns: { disabled?: boolean };
  proxy: { disabled?: boolean };
}

export interface SyncedAddons {
  dnsDisabled: boolean;
  proxyDisabled: boolean;
  /** The phases to skip, with the addon phases of disabled addons appended. */
  skipPhases: string[];
}

/**
 * kubeadm's manageSkippedAddons: skipping "addon" disables both addons, skipping
 * "addon/coredns" or "addon/kube-proxy" disables that one; a disabled addon whose phase is
 * not skipped gets its phase appended to the skip list.
 */
export function syncSkippedAddons(
  cluster: AddonSwitches,
  skipPhases: readonly string[],
): SyncedAddons {
  const skipAll = skipPhases.includes(ADDON_PHASE);
  const skipDNS = skipAll || skipPhases.includes(COREDNS_PHASE);
  const skipProxy = skipAll || skipPhases.includes(KUBE_PROXY_PHASE);
  const dnsDisabled = skipDNS || cluster.dns.disabled === true;
  const proxyDisabled = skipProxy || cluster.proxy.disabled === true;
  const phases = [...skipPhases];
  if (dnsDisabled && !skipDNS) phases.push(COREDNS_PHASE);
  if (proxyDisabled && !skipProxy) phases.push(KUBE_PROXY_PHASE);
  return { dnsDisabled, proxyDisabled, skipPhases: phases };
}
