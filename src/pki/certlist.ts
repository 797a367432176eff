import type { Release } from "../config/release.js";
import type { InitConfig } from "../config/types.js";
import { formatIP, hostPortOf, indexedIP, parseIP, splitCIDRs } from "../config/network.js";
import type { AltNames, ExtKeyUsage } from "./certs.js";
import {
  CA_CERTIFICATE_VALIDITY_MS,
  CERTIFICATE_BACKDATE_MS,
  CERTIFICATE_VALIDITY_MS,
} from "./certs.js";
import { parseGoDuration } from "../config/duration.js";
import { isDNS1123Subdomain, isWildcardDNS1123Subdomain } from "../config/names.js";
import { kubeletClientUsesRBAC } from "../config/versions.js";

// kubeadm's certificate tree for init, as data (kubeadm: phases/certs/certlist.go), and the
// config-dependent parts of each certificate (kubeadm: util/pkiutil/pki_helpers.go
// GetAPIServerAltNames, getAltNames, appendSANsToAltNames).

/** kubeadm constants ClusterAdminsGroupAndClusterRoleBinding. */
const CLUSTER_ADMINS_GROUP = "kubeadm:cluster-admins";

export type CertName =
  | "ca"
  | "apiserver"
  | "apiserver-kubelet-client"
  | "front-proxy-ca"
  | "front-proxy-client"
  | "etcd-ca"
  | "etcd-server"
  | "etcd-peer"
  | "etcd-healthcheck-client"
  | "apiserver-etcd-client";

export interface CertDefinition {
  /** kubeadm's phase name: "apiserver-kubelet-client". */
  name: CertName;
  /** kubeadm's LongName; the phase help is "Generate the <longName>". */
  longName: string;
  /** File base name under the cert dir: "etcd/server" → etcd/server.crt, etcd/server.key. */
  baseName: string;
  /** Name of the signing CA; undefined for a CA. */
  caName: CertName | undefined;
}

/** The resolved certificate for one InitConfig: who it names and what it may do. */
export interface CertSpec extends CertDefinition {
  commonName: string;
  organization: string[];
  usages: ExtKeyUsage[];
  /** Requested SANs, before de-duplication (a CA's DNS=[CN] is added when it is built). */
  altNames: AltNames;
}

/** kubeadm's GetDefaultCertList, in order: each CA precedes the certificates it signs. */
export const CERTIFICATES: readonly CertDefinition[] = [
  {
    name: "ca",
    longName: "self-signed Kubernetes CA to provision identities for other Kubernetes components",
    baseName: "ca",
    caName: undefined,
  },
  {
    name: "apiserver",
    longName: "certificate for serving the Kubernetes API",
    baseName: "apiserver",
    caName: "ca",
  },
  {
    name: "apiserver-kubelet-client",
    longName: "certificate for the API server to connect to kubelet",
    baseName: "apiserver-kubelet-client",
    caName: "ca",
  },
  {
    name: "front-proxy-ca",
    longName: "self-signed CA to provision identities for front proxy",
    baseName: "front-proxy-ca",
    caName: undefined,
  },
  {
    name: "front-proxy-client",
    longName: "certificate for the front proxy client",
    baseName: "front-proxy-client",
    caName: "front-proxy-ca",
  },
  {
    name: "etcd-ca",
    longName: "self-signed CA to provision identities for etcd",
    baseName: "etcd/ca",
    caName: undefined,
  },
  {
    name: "etcd-server",
    longName: "certificate for serving etcd",
    baseName: "etcd/server",
    caName: "etcd-ca",
  },
  {
    name: "etcd-peer",
    longName: "certificate for etcd nodes to communicate with each other",
    baseName: "etcd/peer",
    caName: "etcd-ca",
  },
  {
    name: "etcd-healthcheck-client",
    longName: "certificate for liveness probes to healthcheck etcd",
    baseName: "etcd/healthcheck-client",
    caName: "etcd-ca",
  },
  {
    name: "apiserver-etcd-client",
    longName: "certificate the apiserver uses to access etcd",
    baseName: "apiserver-etcd-client",
    caName: "etcd-ca",
  },
];

export function certDefinition(name: CertName): CertDefinition {
  const def = CERTIFICATES.find((c) => c.name === name);
  if (!def) throw new Error(`unknown certificate "${String(name)}"`);
  return def;
}

/** True when etcd is external: kubeadm then creates no etcd certificates. */
export function usesExternalEtcd(cfg: InitConfig): boolean {
  return cfg.cluster.etcd.external !== undefined && cfg.cluster.etcd.external !== null;
}

/** True for the certificates that exist only with local (stacked) etcd. */
export function isEtcdCertificate(def: CertDefinition): boolean {
  return def.name === "etcd-ca" || def.caName === "etcd-ca";
}

/** kubeadm's GetDefaultCertList, or GetCertsWithoutEtcd with external etcd. */
export function certificatesFor(cfg: InitConfig): CertDefinition[] {
  return CERTIFICATES.filter((c) => !(usesExternalEtcd(cfg) && isEtcdCertificate(c)));
}

export type Warn = (message: string) => void;

function advertiseAddress(cfg: InitConfig): string {
  const text = cfg.init.localAPIEndpoint.advertiseAddress;
  if (!parseIP(text)) {
    throw new Error(
      `localAPIEndpoint.advertiseAddress "${text}" is not a valid textual representation of an IP address`,
    );
  }
  return formatIP(text);
}

/**
 * Adds user SANs as kubeadm's appendSANsToAltNames: IPs to the IPs, RFC 1123 (wildcard)
 * subdomains to the DNS names; anything else is dropped with a warning.
 */
export function appendSANs(
  alt: AltNames,
  sans: readonly string[],
  certName: string,
  warn: Warn,
): void {
  for (const san of sans) {
    if (parseIP(san)) alt.ips.push(formatIP(san));
    else if (isDNS1123Subdomain(san) || isWildcardDNS1123Subdomain(san)) alt.dnsNames.push(san);
    else {
      warn(
        `'${san}' was not added to the '${certName}' SAN, because it is not a valid IP or RFC-1123 compliant DNS entry`,
      );
    }
  }
}

/**
 * kubeadm's GetAPIServerAltNames: node name and the kubernetes service names; the first IP of
 * the first service CIDR and the advertise address; the controlPlaneEndpoint host; certSANs.
 */
export function apiServerAltNames(cfg: InitConfig, warn: Warn): AltNames {
  const advertise = advertiseAddress(cfg);
  const serviceSubnet = cfg.cluster.networking.serviceSubnet;
  const firstCIDR = splitCIDRs(serviceSubnet)[0];
  let virtualIP: string;
  try {
    virtualIP = indexedIP(firstCIDR ?? "", 1);
  } catch (e) {
    throw new Error(
      `networking.serviceSubnet "${serviceSubnet}": unable to get the first IP address of the service CIDR`,
      { cause: e },
    );
  }
  const alt: AltNames = {
    dnsNames: [
      cfg.init.nodeRegistration.name,
      "kubernetes",
      "kubernetes.default",
      "kubernetes.default.svc",
      `kubernetes.default.svc.${cfg.cluster.networking.dnsDomain}`,
    ],
    ips: [virtualIP, advertise],
  };
  const endpoint = cfg.cluster.controlPlaneEndpoint;
  if (endpoint) {
    const { host } = hostPortOf(endpoint, "controlPlaneEndpoint");
    if (parseIP(host)) alt.ips.push(formatIP(host));
    else alt.dnsNames.push(host);
  }
  appendSANs(alt, cfg.cluster.apiServer.certSANs, "apiserver", warn);
  return alt;
}

/** kubeadm's getAltNames for etcd/server and etcd/peer: node name, localhost and loopbacks. */
export function etcdAltNames(cfg: InitConfig, which: "server" | "peer", warn: Warn): AltNames {
  const alt: AltNames = {
    dnsNames: [cfg.init.nodeRegistration.name, "localhost"],
    ips: [advertiseAddress(cfg), "127.0.0.1", "::1"],
  };
  const local = cfg.cluster.etcd.local;
  if (local) {
    const sans = which === "server" ? local.serverCertSANs : local.peerCertSANs;
    appendSANs(alt, sans ?? [], which === "server" ? "etcd/server" : "etcd/peer", warn);
  }
  return alt;
}

/** The certificate `name` resolved for this configuration and release (kubeadm's GetConfig). */
export function certSpec(name: CertName, cfg: InitConfig, release: Release, warn: Warn): CertSpec {
  const def = certDefinition(name);
  const none: AltNames = { dnsNames: [], ips: [] };
  const nodeName = cfg.init.nodeRegistration.name;
  const base = {
    ...def,
    organization: [] as string[],
    usages: [] as ExtKeyUsage[],
    altNames: none,
  };
  switch (name) {
    case "ca":
      return { ...base, commonName: "kubernetes" };
    case "front-proxy-ca":
      return { ...base, commonName: "front-proxy-ca" };
    case "etcd-ca":
      return { ...base, commonName: "etcd-ca" };
    case "apiserver":
      return {
        ...base,
        commonName: "kube-apiserver",
        usages: ["serverAuth"],
        altNames: apiServerAltNames(cfg, warn),
      };
    case "apiserver-kubelet-client": {
      // O=kubeadm:cluster-admins (kubernetes/kubernetes#121837) until kubeadm moved the rights
      // to a ClusterRoleBinding (#138957: 1.37, and the 1.33–1.36 patches named in versions.ts).
      const viaRBAC = kubeletClientUsesRBAC(cfg.cluster.kubernetesVersion, release);
      return {
        ...base,
        commonName: "kube-apiserver-kubelet-client",
        organization: viaRBAC ? [] : [CLUSTER_ADMINS_GROUP],
        usages: ["clientAuth"],
      };
    }
    case "front-proxy-client":
      return { ...base, commonName: "front-proxy-client", usages: ["clientAuth"] };
    case "etcd-server":
      // etcd 3.2+ also wants clientAuth on the server certificate (etcd-io/etcd#9785).
      return {
        ...base,
        commonName: nodeName,
        usages: ["serverAuth", "clientAuth"],
        altNames: etcdAltNames(cfg, "server", warn),
      };
    case "etcd-peer":
      return {
        ...base,
        commonName: nodeName,
        usages: ["serverAuth", "clientAuth"],
        altNames: etcdAltNames(cfg, "peer", warn),
      };
    case "etcd-healthcheck-client":
      return { ...base, commonName: "kube-etcd-healthcheck-client", usages: ["clientAuth"] };
    case "apiserver-etcd-client":
      return { ...base, commonName: "kube-apiserver-etcd-client", usages: ["clientAuth"] };
  }
}

export interface Validity {
  notBefore: Date;
  notAfter: Date;
}

/** Milliseconds of certificateValidityPeriod (leaf) or caCertificateValidityPeriod (CA). */
export function validityPeriodMs(cfg: InitConfig, kind: "ca" | "leaf"): number {
  const field = kind === "ca" ? "caCertificateValidityPeriod" : "certificateValidityPeriod";
  const text = cfg.cluster[field];
  if (!text) return kind === "ca" ? CA_CERTIFICATE_VALIDITY_MS : CERTIFICATE_VALIDITY_MS;
  const ms = parseGoDuration(text, `ClusterConfiguration.${field}`);
  if (ms <= 0) throw new Error(`ClusterConfiguration.${field} "${text}" must be positive`);
  return ms;
}

/**
 * kubeadm's KubeadmCert.GetConfig dates: NotBefore = start − 5m (back-dated against small
 * clock jumps) for CAs and leaves alike; NotAfter = start + the configured validity period.
 */
export function certificateValidity(cfg: InitConfig, kind: "ca" | "leaf", now: Date): Validity {
  return {
    notBefore: new Date(now.getTime() - CERTIFICATE_BACKDATE_MS),
    notAfter: new Date(now.getTime() + validityPeriodMs(cfg, kind)),
  };
}
