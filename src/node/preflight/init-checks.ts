// The checks of `kubeadm init` on a Linux host, in kubeadm's order: InitNodeChecks and
// addCommonChecks (preflight/checks.go, kubernetes/kubernetes@00b6a4c7 ≈ v1.35) with the Linux
// parts of checks_linux.go (@039c72e8, ≥ 1.32). IsPrivilegedUser is not in this list: kubeadm
// (since PR #128799, 1.33) runs it first and alone, before building the list.
import type { InitConfig } from "../../config/types.js";
import type { Release } from "../../config/release.js";
import { parseCIDR, parseIP } from "../../config/network.js";
import { DEFAULT_ETCD_DATA_DIR, MANIFESTS_DIR } from "../../config/paths.js";
import { RELEASES } from "../../config/versions.js";
import {
  KUBE_CONTROLLER_MANAGER_PORT,
  KUBE_SCHEDULER_PORT,
} from "../../manifests/control-plane.js";
import { ETCD_CLIENT_PORT, ETCD_PEER_PORT } from "../../manifests/etcd.js";
import type { Host } from "../../remote/host.js";
import { execChecks } from "./binaries.js";
import type { LookupOptions } from "../lookpath.js";
import { type Check, type CheckResult, makeCheck } from "./checks.js";
import {
  asksRuntimeConfig,
  connectCRI,
  containerRuntimeVersionChecks,
  criCheck,
  criConnectWarning,
  type KubeadmRelease,
} from "./cri.js";
import {
  dirAvailableCheck,
  fileAvailableCheck,
  fileContentCheck,
  fileExistingCheck,
} from "./file-checks.js";
import {
  hostnameCheck,
  httpProxyCheck,
  httpProxyCIDRCheck,
  portOpenCheck,
} from "./network-checks.js";
import type { ProxyEnv } from "./proxy.js";
import { memCheck, numCPUCheck, swapCheck } from "./resource-checks.js";
import { firewalldCheck, serviceCheck } from "./services.js";
import { systemVerificationCheck } from "./system.js";
import { kubeletVersionCheck, kubernetesVersionCheck } from "./version-checks.js";

/**
 * The newest Kubernetes minor kubeforge supports (the last row of the version table): the
 * "kubeadm version" of the KubernetesVersion check.
 */
export const NEWEST_SUPPORTED_MINOR = Math.max(...RELEASES.map((r) => r.minor));

/**
 * The oldest Kubernetes minor kubeforge supports. Join's node checks run before discovery, so
 * before the cluster's version (the kubeadm version kubeforge stands for) is known: their
 * KubeletVersion minimum is the loosest one any supported cluster would apply.
 */
export const OLDEST_SUPPORTED_MINOR = Math.min(...RELEASES.map((r) => r.minor));

/** kubeadm constants.KubeletPort. */
export const KUBELET_PORT = 10250;
const STATIC_POD_COMPONENTS = [
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "etcd",
];

export const IPV4_FORWARD = "/proc/sys/net/ipv4/ip_forward";
export const IPV6_DEFAULT_FORWARDING = "/proc/sys/net/ipv6/conf/default/forwarding";
const BRIDGE_NF_CALL_IPTABLES = "/proc/sys/net/bridge/bridge-nf-call-iptables";
const BRIDGE_NF_CALL_IP6TABLES = "/proc/sys/net/bridge/bridge-nf-call-ip6tables";

/** What the init checks read (a subset of InitData). */
export interface InitChecksInput {
  readonly cfg: InitConfig;
  readonly release: Release;
  readonly host: Host;
  readonly proxyEnv: ProxyEnv;
}

export interface InitChecksOptions extends LookupOptions {
  /**
   * A control plane joining an existing cluster (kubeadm's isSecondaryControlPlane): the common
   * and networking checks already ran as join checks.
   */
  secondaryControlPlane?: boolean;
  /**
   * With secondaryControlPlane: the shared certificates come from the kubeadm-certs Secret
   * (--certificate-key), so the external etcd client files are not expected on the node yet.
   */
  downloadCerts?: boolean;
  /** Defaults to NEWEST_SUPPORTED_MINOR. */
  newestSupportedMinor?: number;
  /** Receives the warning kubeadm logs when it cannot connect to the container runtime. */
  warn?: (line: string) => void;
}

/** The same check with its errors lowered to warnings. */
function asWarning(check: Check): Check {
  return makeCheck(check.name(), async (): Promise<CheckResult> => {
    const r = await check.check();
    return { ...r, warnings: [...r.warnings, ...r.errors], errors: [] };
  });
}

/**
 * bridge-nf-call-iptables (and -ip6tables for IPv6) = 1. kubeadm dropped these checks in 1.30
 * (kubernetes/kubernetes#123464: "not all the network implementations require this setting"),
 * so no release kubeforge supports has them; before that they were errors. kubeforge keeps
 * them as WARNINGS because the bridge CNI plugin (the default of kubeforge's CI clusters)
 * needs bridged traffic to pass iptables for Services to work.
 */
function bridgeNetfilterCheck(host: Host, path: string): Check {
  return asWarning(fileContentCheck(host, path, "1"));
}

/** The IP families a configuration uses (kubeadm: any IPv4/IPv6 CIDR or advertise address). */
function families(cfg: InitConfig): { v4: boolean; v6: boolean } {
  const cidrs = [
    ...cfg.cluster.networking.serviceSubnet.split(","),
    ...(cfg.cluster.networking.podSubnet ?? "").split(","),
  ];
  const fams = cidrs.map((c) => parseCIDR(c)?.family);
  const ip = parseIP(cfg.init.localAPIEndpoint.advertiseAddress);
  if (ip) fams.push(ip.kind() === "ipv6" ? 6 : 4);
  return { v4: fams.includes(4), v6: fams.includes(6) };
}

/** What the common checks read of a node: the JoinConfiguration's or InitConfiguration's. */
export interface NodeRegistration {
  readonly name: string;
  readonly criSocket: string;
}

/**
 * The common checks of init and join (kubeadm's addCommonChecks), for a Linux host. Join passes
 * kubernetesVersion "" as kubeadm does: no conntrack check and no kubelet-newer-than-cluster skew
 * check. `kubeadmMinor` is the minor of the kubeadm kubeforge stands for (the kubelet's minimum);
 * `kubeadm`, when known, its exact version, which decides the ContainerRuntimeVersion check.
 */
export async function commonChecks(
  host: Host,
  nodeReg: NodeRegistration,
  kubernetesVersion: string,
  kubeadmMinor: number,
  opts: LookupOptions & Pick<InitChecksOptions, "warn"> & { kubeadm?: KubeadmRelease },
): Promise<Check[]> {
  const checks: Check[] = [];
  const cri = await connectCRI(host, nodeReg.criSocket, opts, {
    runtimeConfig: opts.kubeadm !== undefined && asksRuntimeConfig(opts.kubeadm),
  });
  if (cri.connected) {
    // [M] kubeadm builds ContainerRuntimeVersion with the socket alone, right after CRI (its log
    // line follows CRI's in checks.go); kubeforge runs it on a runtime it could connect to.
    checks.push(criCheck(host, nodeReg.criSocket, cri));
    if (opts.kubeadm) {
      checks.push(...containerRuntimeVersionChecks(host, nodeReg.criSocket, cri, opts.kubeadm));
    }
  } else opts.warn?.(criConnectWarning(cri.reason));
  checks.push(swapCheck(host));
  checks.push(...execChecks(host, kubernetesVersion, opts));
  checks.push(
    systemVerificationCheck(host, opts),
    hostnameCheck(host, nodeReg.name),
    kubeletVersionCheck(host, kubernetesVersion, kubeadmMinor, opts),
    serviceCheck(host, "kubelet", opts),
    portOpenCheck(host, KUBELET_PORT),
  );
  return checks;
}

/**
 * The checks `kubeadm init` runs on its first control-plane node, in kubeadm's order, and a
 * joining control plane after the join checks (secondaryControlPlane). Not included:
 * ExternalEtcdVersion (asks the external etcd over TLS; a later issue). ImagePull is not in the
 * list in kubeadm either: RunPullImagesCheck runs it afterwards (image-pull.ts).
 */
export async function initNodeChecks(
  input: InitChecksInput,
  opts: InitChecksOptions = {},
): Promise<Check[]> {
  const { cfg, host, proxyEnv } = input;
  const endpoint = cfg.init.localAPIEndpoint;
  const kubernetesVersion = cfg.cluster.kubernetesVersion;
  const checks: Check[] = [
    numCPUCheck(host),
    memCheck(host),
    kubernetesVersionCheck(kubernetesVersion, opts.newestSupportedMinor ?? NEWEST_SUPPORTED_MINOR),
    firewalldCheck(host, [endpoint.bindPort, KUBELET_PORT], opts),
    portOpenCheck(host, endpoint.bindPort),
    portOpenCheck(host, KUBE_SCHEDULER_PORT),
    portOpenCheck(host, KUBE_CONTROLLER_MANAGER_PORT),
    ...STATIC_POD_COMPONENTS.map((c) => fileAvailableCheck(host, `${MANIFESTS_DIR}/${c}.yaml`)),
    httpProxyCheck(proxyEnv, endpoint.advertiseAddress),
  ];
  for (const cidr of cfg.cluster.networking.serviceSubnet.split(",")) {
    checks.push(httpProxyCIDRCheck(proxyEnv, cidr));
  }
  for (const cidr of (cfg.cluster.networking.podSubnet ?? "").split(",")) {
    checks.push(httpProxyCIDRCheck(proxyEnv, cidr));
  }

  if (!opts.secondaryControlPlane) {
    const nodeReg = cfg.init.nodeRegistration;
    checks.push(
      ...(await commonChecks(host, nodeReg, kubernetesVersion, input.release.minor, {
        ...opts,
        kubeadm: { version: kubernetesVersion, release: input.release },
      })),
    );
    const { v4, v6 } = families(cfg);
    if (v4) {
      checks.push(bridgeNetfilterCheck(host, BRIDGE_NF_CALL_IPTABLES));
      checks.push(fileContentCheck(host, IPV4_FORWARD, "1"));
    }
    if (v6) {
      checks.push(bridgeNetfilterCheck(host, BRIDGE_NF_CALL_IP6TABLES));
      checks.push(fileContentCheck(host, IPV6_DEFAULT_FORWARDING, "1"));
    }
  }

  const { local, external } = cfg.cluster.etcd;
  if (external === undefined) {
    checks.push(
      portOpenCheck(host, ETCD_CLIENT_PORT),
      portOpenCheck(host, ETCD_PEER_PORT),
      dirAvailableCheck(host, local?.dataDir ?? DEFAULT_ETCD_DATA_DIR),
    );
  } else if (!(opts.secondaryControlPlane && opts.downloadCerts)) {
    // kubeadm: "Only check etcd certificates when using an external etcd and not joining with
    // automatic download of certs" — download-certs writes them later.
    for (const file of [external.caFile, external.certFile, external.keyFile]) {
      if (file) checks.push(fileExistingCheck(host, file, "ExternalEtcdClientCertificates"));
    }
  }
  return checks;
}
