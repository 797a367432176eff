import { posix } from "node:path";
import { KUBELET_KUBECONFIG, KUBERNETES_DIR, MANIFESTS_DIR } from "../../config/paths.js";
import { hostPortOf, parseIP } from "../../config/network.js";
import type { JoinConfig } from "../../config/types.js";
import type { Check } from "./checks.js";
import { dirAvailableCheck, fileAvailableCheck, fileContentCheck } from "./file-checks.js";
import {
  BRIDGE_NF_CALL_IPTABLES,
  IPV4_FORWARD,
  bridgeNetfilterCheck,
  commonChecks,
  type InitChecksInput,
  type InitChecksOptions,
} from "./init-checks.js";

// kubeadm's preflight RunJoinNodeChecks (preflight/checks.go): the node must not hold a
// kubelet.conf, a bootstrap-kubelet.conf or (workers) a cluster CA already, plus the checks
// init and join share. The cluster's configuration (init's view of it) feeds the shared ones.

export const BOOTSTRAP_KUBELET_KUBECONFIG = "bootstrap-kubelet.conf";

export async function joinNodeChecks(
  join: JoinConfig,
  input: InitChecksInput,
  opts: InitChecksOptions = {},
): Promise<Check[]> {
  const { host } = input;
  const checks: Check[] = [
    dirAvailableCheck(host, MANIFESTS_DIR),
    fileAvailableCheck(host, posix.join(KUBERNETES_DIR, KUBELET_KUBECONFIG)),
    fileAvailableCheck(host, posix.join(KUBERNETES_DIR, BOOTSTRAP_KUBELET_KUBECONFIG)),
    ...(await commonChecks(input, input.cfg.cluster.kubernetesVersion, opts)),
  ];
  if (!join.join.controlPlane) checks.push(fileAvailableCheck(host, join.join.caCertPath));
  // kubeadm adds the IPv4 forwarding checks when the discovery endpoint is an IPv4 address.
  const endpoint = join.join.discovery.bootstrapToken?.apiServerEndpoint;
  const address = endpoint ? hostPortOf(endpoint, "apiServerEndpoint").host : undefined;
  if (address && parseIP(address)?.kind() === "ipv4") {
    checks.push(bridgeNetfilterCheck(host, BRIDGE_NF_CALL_IPTABLES));
    checks.push(fileContentCheck(host, IPV4_FORWARD, "1"));
  }
  return checks;
}
