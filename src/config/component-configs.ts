import { kubeProxyConfigurationType, kubeletConfigurationType } from "./component-types.js";
import { unknownGoFields } from "./go-struct.js";
import { indexedIP, ipFamily, splitCIDRs } from "./network.js";
import { MANIFESTS_DIR } from "./paths.js";
import type { Release } from "./release.js";
import type { ComponentConfig, ConfigDocuments } from "./types.js";
import { KUBELET_CONFIG_API, KUBE_PROXY_CONFIG_API } from "./types.js";

// The component configs kubeadm generates and the few fields it defaults in them
// (kubeadm: componentconfigs/kubelet.go and kubeproxy.go, Default()). A value the user set that
// differs from kubeadm's recommendation is kept, with kubeadm's warning; only
// rotateCertificates is forced (kubeadm cannot tell an explicit false from an unset field).

export const KUBELET_DEFAULT_CLUSTER_DNS_IP = "10.96.0.10"; // v1beta4 DefaultClusterDNSIP
export const KUBELET_HEALTHZ_BIND_ADDRESS = "127.0.0.1";
export const KUBELET_HEALTHZ_PORT = 10248; // constants.KubeletHealthzPort
export const KUBE_PROXY_KUBECONFIG = "/var/lib/kube-proxy/kubeconfig.conf";

type Warn = (msg: string) => void;
type Obj = Record<string, unknown>;

/** kubeadm's warnDefaultComponentConfigValue, with Go's %v rendering of the values. */
function recommend(
  warn: Warn,
  kind: string,
  param: string,
  recommended: unknown,
  provided: unknown,
): void {
  const show = (v: unknown) => (Array.isArray(v) ? `[${v.join(" ")}]` : String(v));
  warn(
    `The recommended value for "${param}" in "${kind}" is: ${show(recommended)}; the provided value is: ${show(provided)}`,
  );
}

function section(parent: Obj, key: string): Obj {
  const existing = parent[key];
  if (typeof existing === "object" && existing !== null && !Array.isArray(existing))
    return existing as Obj;
  const created: Obj = {};
  parent[key] = created;
  return created;
}

/** The Service IP of the cluster DNS: the 10th address of the first service CIDR (constants.GetDNSIP). */
export function clusterDNSIP(serviceSubnet: string): string {
  const first = splitCIDRs(serviceSubnet)[0];
  try {
    return first === undefined ? KUBELET_DEFAULT_CLUSTER_DNS_IP : indexedIP(first, 10);
  } catch {
    return KUBELET_DEFAULT_CLUSTER_DNS_IP; // kubeadm falls back to DefaultClusterDNSIP too
  }
}

export interface KubeletDefaultsInput {
  serviceSubnet: string;
  dnsDomain: string;
  certificatesDir: string;
  /** resolvConf to set when the user did not (kubeadm: only when systemd-resolved is active). */
  resolvConf?: string;
}

/** KubeletConfiguration with kubeadm's defaults (kubeadm-facts.md §5; componentconfigs/kubelet.go). */
export function defaultKubeletConfiguration(
  user: ComponentConfig | undefined,
  input: KubeletDefaultsInput,
  warn: Warn = () => {},
): ComponentConfig {
  const kind = "KubeletConfiguration";
  const kc = user ? structuredClone(user) : { apiVersion: KUBELET_CONFIG_API, kind };
  const check = (param: string, recommended: unknown, current: unknown, set: () => void) => {
    if (current === undefined || current === null || current === "") set();
    else if (JSON.stringify(current) !== JSON.stringify(recommended))
      recommend(warn, kind, param, recommended, current);
  };

  check("staticPodPath", MANIFESTS_DIR, kc.staticPodPath, () => (kc.staticPodPath = MANIFESTS_DIR));

  const dnsIP = clusterDNSIP(input.serviceSubnet);
  if (kc.clusterDNS === undefined || kc.clusterDNS === null) kc.clusterDNS = [dnsIP];
  else if (
    !Array.isArray(kc.clusterDNS) ||
    kc.clusterDNS.length !== 1 ||
    kc.clusterDNS[0] !== dnsIP
  ) {
    recommend(warn, kind, "clusterDNS", [dnsIP], kc.clusterDNS);
  }

  check(
    "clusterDomain",
    input.dnsDomain,
    kc.clusterDomain,
    () => (kc.clusterDomain = input.dnsDomain),
  );

  const authentication = section(kc, "authentication");
  const x509 = section(authentication, "x509");
  const clientCAFile = `${input.certificatesDir.replace(/\/+$/, "")}/ca.crt`;
  check(
    "authentication.x509.clientCAFile",
    clientCAFile,
    x509.clientCAFile,
    () => (x509.clientCAFile = clientCAFile),
  );

  const anonymous = section(authentication, "anonymous");
  if (anonymous.enabled === undefined || anonymous.enabled === null) anonymous.enabled = false;
  else if (anonymous.enabled === true)
    recommend(warn, kind, "authentication.anonymous.enabled", false, true);

  const authorization = section(kc, "authorization");
  check(
    "authorization.mode",
    "Webhook",
    authorization.mode,
    () => (authorization.mode = "Webhook"),
  );

  const webhook = section(authentication, "webhook");
  if (webhook.enabled === undefined || webhook.enabled === null) webhook.enabled = true;
  else if (webhook.enabled === false)
    recommend(warn, kind, "authentication.webhook.enabled", true, false);

  check("healthzBindAddress", KUBELET_HEALTHZ_BIND_ADDRESS, kc.healthzBindAddress, () => {
    kc.healthzBindAddress = KUBELET_HEALTHZ_BIND_ADDRESS;
  });
  if (kc.healthzPort === undefined || kc.healthzPort === null)
    kc.healthzPort = KUBELET_HEALTHZ_PORT;
  else if (kc.healthzPort !== KUBELET_HEALTHZ_PORT)
    recommend(warn, kind, "healthzPort", KUBELET_HEALTHZ_PORT, kc.healthzPort);

  if (kc.readOnlyPort !== undefined && kc.readOnlyPort !== null && kc.readOnlyPort !== 0) {
    recommend(warn, kind, "readOnlyPort", 0, kc.readOnlyPort);
  }

  kc.rotateCertificates = true;
  if (kc.cgroupDriver === undefined || kc.cgroupDriver === null || kc.cgroupDriver === "")
    kc.cgroupDriver = "systemd";

  if (input.resolvConf !== undefined) {
    if (kc.resolvConf === undefined || kc.resolvConf === null) kc.resolvConf = input.resolvConf;
    else if (kc.resolvConf !== input.resolvConf)
      recommend(warn, kind, "resolvConf", input.resolvConf, kc.resolvConf);
  }
  return kc;
}

export interface KubeProxyDefaultsInput {
  podSubnet?: string;
  /** localAPIEndpoint.advertiseAddress: an IPv6 one makes the bind address "::". */
  advertiseAddress: string;
}

/** KubeProxyConfiguration with kubeadm's defaults (kubeadm-facts.md §12.3; componentconfigs/kubeproxy.go). */
export function defaultKubeProxyConfiguration(
  user: ComponentConfig | undefined,
  input: KubeProxyDefaultsInput,
  warn: Warn = () => {},
): ComponentConfig {
  const kind = "KubeProxyConfiguration";
  const kp = user ? structuredClone(user) : { apiVersion: KUBE_PROXY_CONFIG_API, kind };

  // v1beta4 DefaultProxyBindAddressv4/v6, chosen by the family of the advertise address.
  const bindAddress = ipFamily(input.advertiseAddress) === 6 ? "::" : "0.0.0.0";
  if (kp.bindAddress === undefined || kp.bindAddress === null || kp.bindAddress === "")
    kp.bindAddress = bindAddress;
  else if (kp.bindAddress !== bindAddress)
    recommend(warn, kind, "bindAddress", bindAddress, kp.bindAddress);

  const podSubnet = input.podSubnet ?? "";
  if (
    (kp.clusterCIDR === undefined || kp.clusterCIDR === null || kp.clusterCIDR === "") &&
    podSubnet !== ""
  ) {
    kp.clusterCIDR = podSubnet;
  } else if (podSubnet !== "" && kp.clusterCIDR !== podSubnet) {
    recommend(warn, kind, "clusterCIDR", podSubnet, kp.clusterCIDR);
  }

  const clientConnection = section(kp, "clientConnection");
  const kubeconfig = clientConnection.kubeconfig;
  if (kubeconfig === undefined || kubeconfig === null || kubeconfig === "")
    clientConnection.kubeconfig = KUBE_PROXY_KUBECONFIG;
  else if (kubeconfig !== KUBE_PROXY_KUBECONFIG) {
    recommend(warn, kind, "clientConnection.kubeconfig", KUBE_PROXY_KUBECONFIG, kubeconfig);
  }
  return kp;
}

/**
 * Fields of the KubeletConfiguration and KubeProxyConfiguration documents that their Go types
 * (of `release`) lack, one sentence each with the field's path. kubeadm decodes every document
 * strictly (util/config/strict VerifyUnmarshalStrict): `kubeadm config validate` fails on
 * these, `kubeadm init` prints them as warnings and drops the fields (its marshalled config
 * does not carry them).
 */
export function componentConfigUnknownFields(
  docs: Pick<ConfigDocuments, "kubelet" | "kubeProxy" | "source">,
  release: Release,
): string[] {
  const where = docs.source ?? "the configuration";
  const unknown = (kind: string, fields: string[]) =>
    fields.map((f) => `${where}: ${kind}: unknown field ${JSON.stringify(f)}`);
  return [
    ...unknown(
      "KubeletConfiguration",
      unknownGoFields(kubeletConfigurationType(release), docs.kubelet),
    ),
    ...unknown(
      "KubeProxyConfiguration",
      unknownGoFields(kubeProxyConfigurationType(release), docs.kubeProxy),
    ),
  ];
}
