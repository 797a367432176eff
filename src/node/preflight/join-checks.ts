import { posix } from "node:path";
import { KUBELET_KUBECONFIG, KUBERNETES_DIR } from "../../config/paths.js";
import { goSplitHostPort, ipFamily } from "../../config/network.js";
import type { JoinConfig } from "../../config/types.js";
import type { Host } from "../../remote/host.js";
import type { Check } from "./checks.js";
import type { KubeadmRelease } from "./cri.js";
import { fileAvailableCheck, fileContentCheck } from "./file-checks.js";
import {
  IPV4_FORWARD,
  IPV6_DEFAULT_FORWARDING,
  OLDEST_SUPPORTED_MINOR,
  commonChecks,
  type InitChecksOptions,
} from "./init-checks.js";
import { httpProxyCheck } from "./network-checks.js";
import type { ProxyEnv } from "./proxy.js";

// kubeadm's JoinNodeChecks (preflight/checks.go @00b6a4c7 ≈ v1.35, checks_linux.go @039c72e8):
// built from the JoinConfiguration alone, before discovery, so a node that already joined is
// told so at once instead of after a discovery attempt.

export const BOOTSTRAP_KUBELET_KUBECONFIG = "bootstrap-kubelet.conf";

export interface JoinChecksInput {
  readonly join: JoinConfig;
  readonly host: Host;
  readonly proxyEnv: ProxyEnv;
}

export interface JoinChecksOptions extends Pick<InitChecksOptions, "warn" | "searchPath"> {
  /**
   * The minor of the kubeadm kubeforge stands for, which sets the kubelet's minimum version.
   * Unknown before discovery (the cluster's version), hence OLDEST_SUPPORTED_MINOR by default;
   * `up`, which knows the version it installs, passes it.
   */
  kubeadmMinor?: number;
  /**
   * The exact kubeadm kubeforge stands for, when known before discovery (`up`): its
   * ContainerRuntimeVersion check runs among the common checks. Without it (a join that learns
   * the version by discovery), the join preflight runs that check after discovery.
   */
  kubeadm?: KubeadmRelease;
}

/**
 * In kubeadm's order: no kubelet.conf or bootstrap-kubelet.conf yet, the common checks (with
 * Kubernetes version "", as kubeadm), no cluster CA yet (workers only: a control plane's CA may
 * have been copied there by hand), and for token discovery whether HTTPS to the endpoint's host
 * goes through a proxy and forwarding for the endpoint's IP family.
 */
export async function joinNodeChecks(
  input: JoinChecksInput,
  opts: JoinChecksOptions = {},
): Promise<Check[]> {
  const { join, host } = input;
  const cfg = join.join;
  const checks: Check[] = [
    fileAvailableCheck(host, posix.join(KUBERNETES_DIR, KUBELET_KUBECONFIG)),
    fileAvailableCheck(host, posix.join(KUBERNETES_DIR, BOOTSTRAP_KUBELET_KUBECONFIG)),
    ...(await commonChecks(
      host,
      cfg.nodeRegistration,
      "",
      opts.kubeadm?.release.minor ?? opts.kubeadmMinor ?? OLDEST_SUPPORTED_MINOR,
      opts,
    )),
  ];
  if (!cfg.controlPlane) checks.push(fileAvailableCheck(host, cfg.caCertPath));

  const endpoint = cfg.discovery.bootstrapToken?.apiServerEndpoint;
  // kubeadm: net.SplitHostPort; an endpoint it cannot split adds nothing.
  const split = endpoint === undefined ? undefined : goSplitHostPort(endpoint);
  if (split) {
    checks.push(httpProxyCheck(input.proxyEnv, split.host));
    const family = ipFamily(split.host);
    if (family === 4) checks.push(fileContentCheck(host, IPV4_FORWARD, "1"));
    if (family === 6) checks.push(fileContentCheck(host, IPV6_DEFAULT_FORWARDING, "1"));
  }
  return checks;
}
