import { parseBootstrapToken } from "../pki/token.js";
import { DEFAULT_SERVICE_SUBNET } from "./defaults.js";
import { tryParseGoDurationNanos } from "./duration.js";
import { allKnownFeatureGates, lockedGateProblem } from "./feature-gates.js";
import { imageRepositoryProblem } from "./image-reference.js";
import { isDNS1123Subdomain, isQualifiedName, isWildcardDNS1123Subdomain } from "./names.js";
import {
  cidrsOverlap,
  ipFamily,
  parseCIDR,
  parseHostPort,
  parseIP,
  splitCIDRs,
} from "./network.js";
import type { Release } from "./release.js";
import type {
  APIEndpoint,
  Arg,
  BootstrapToken,
  ClusterConfiguration,
  ConfigDocuments,
  ControlPlaneComponent,
  EnvVar,
  HostPathMount,
  InitConfig,
  InitConfiguration,
  JoinConfiguration,
  NodeRegistrationOptions,
  Taint,
  Timeouts,
} from "./types.js";
import { componentConfigUnknownFields } from "./component-configs.js";
import { RELEASES, kubernetesVersionProblem, pinnedRelease, releaseFor } from "./versions.js";
import { quoteValue } from "./values.js";

// kubeadm's validation (apis/kubeadm/validation/validation.go), plus the checks kubeforge adds
// so that bad input is refused before anything is written: taints, extra volumes, discovery
// hash format. What kubeadm accepts is never refused here: overlapping pod and service ranges
// are only a warning (subnetOverlapWarnings). Every function returns ALL problems, each one
// sentence that starts with the field path ("ClusterConfiguration.networking.podSubnet: ...").
// Secrets (token secrets, certificate keys) are never echoed back.

type Problems = string[];

// ---- primitive checks (k8s.io/apimachinery/pkg/util/validation) -------------------------------

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
// cluster-bootstrap token/api BootstrapGroupPattern.
const TOKEN_GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
const KNOWN_TOKEN_USAGES = ["signing", "authentication"];
const CA_CERT_HASH = /^sha256:[0-9a-fA-F]{64}$/;
const ENCRYPTION_ALGORITHMS = ["ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096"];
const PULL_POLICIES = ["Always", "IfNotPresent", "Never"];
const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const HOST_PATH_TYPES = [
  "",
  "DirectoryOrCreate",
  "Directory",
  "FileOrCreate",
  "File",
  "Socket",
  "CharDevice",
  "BlockDevice",
];
// constants.go: MinimumAddressesInServiceSubnet, MaximumBitsForServiceSubnet,
// MinimumAddressesInPodSubnet, PodSubnetNodeMaskMaxDiff.
const MIN_SERVICE_ADDRESSES = 10n;
const MAX_SERVICE_SUBNET_BITS = 20;
const MIN_POD_ADDRESSES = 14n;
const POD_SUBNET_NODE_MASK_MAX_DIFF = 16;

const isAbs = (p: string) => p.startsWith("/");
const q = quoteValue;

/** An address usable to reach the API server (Go net.IP.IsGlobalUnicast). */
function isGlobalUnicast(address: string): boolean {
  const ip = parseIP(address);
  if (!ip) return false;
  const range = ip.range();
  if (["unspecified", "loopback", "multicast", "linkLocal", "broadcast"].includes(range))
    return false;
  return true;
}

/** kubeadm's ParseHostPort: an IP or DNS-1123 subdomain, with an optional port 1-65535. */
export function hostPortProblem(text: string): string | undefined {
  const parsed = parseHostPort(text);
  return "problem" in parsed ? parsed.problem : undefined;
}

// ---- shared pieces ----------------------------------------------------------------------------

function checkArgs(args: Arg[] | undefined, path: string, out: Problems): void {
  args?.forEach((a, i) => {
    if (!a.name) out.push(`${path}[${i}]: the argument has no name`);
  });
}

function checkEnvs(envs: EnvVar[] | undefined, path: string, out: Problems): void {
  envs?.forEach((e, i) => {
    if (!e.name) out.push(`${path}[${i}]: the environment variable has no name`);
  });
}

function checkVolumes(volumes: HostPathMount[] | undefined, path: string, out: Problems): void {
  volumes?.forEach((v, i) => {
    const p = `${path}[${i}]`;
    if (!v.name) out.push(`${p}.name: every extra volume needs a name`);
    if (!v.hostPath) out.push(`${p}.hostPath: every extra volume needs a host path`);
    if (!v.mountPath) out.push(`${p}.mountPath: every extra volume needs a mount path`);
    if (v.pathType !== undefined && !HOST_PATH_TYPES.includes(v.pathType)) {
      out.push(
        `${p}.pathType: ${q(v.pathType)} is not a host path type (one of ${HOST_PATH_TYPES.slice(1).join(", ")})`,
      );
    }
  });
}

function checkComponent(c: ControlPlaneComponent | undefined, path: string, out: Problems): void {
  checkArgs(c?.extraArgs, `${path}.extraArgs`, out);
  checkVolumes(c?.extraVolumes, `${path}.extraVolumes`, out);
  checkEnvs(c?.extraEnvs, `${path}.extraEnvs`, out);
}

/** kubeadm validates an image repository only when one is set (ValidateDNS, ValidateEtcd). */
function checkImageRepository(repo: string | undefined, path: string, out: Problems): void {
  const problem = repo ? imageRepositoryProblem(repo) : undefined;
  if (problem) out.push(`${path}: ${problem}`);
}

function checkCertSANs(sans: string[] | undefined, path: string, out: Problems): void {
  for (const san of sans ?? []) {
    if (!isDNS1123Subdomain(san) && !isWildcardDNS1123Subdomain(san) && !parseIP(san)) {
      out.push(`${path}: ${q(san)} is not a valid IP address, DNS name or wildcard DNS name`);
    }
  }
}

function checkDuration(value: string | undefined, path: string, out: Problems): void {
  if (value === undefined) return;
  const nanos = tryParseGoDurationNanos(value);
  if (nanos === undefined)
    out.push(`${path}: ${q(value)} is not a valid duration (examples: "24h0m0s", "90s")`);
  else if (nanos < 0n) out.push(`${path}: ${q(value)} must not be negative`);
}

function checkTimeouts(t: Timeouts | undefined, path: string, out: Problems): void {
  for (const [k, v] of Object.entries(t ?? {})) checkDuration(v as string, `${path}.${k}`, out);
}

function checkToken(
  token: string | undefined,
  path: string,
  out: Problems,
  required: boolean,
): void {
  if (token === undefined || token === "") {
    if (required) out.push(`${path}: a bootstrap token is required`);
    return;
  }
  if (!parseBootstrapToken(token)) {
    // The value is a secret: describe the expected form instead of echoing it.
    out.push(`${path}: the bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}"`);
  }
}

function checkBootstrapTokens(
  tokens: BootstrapToken[] | undefined,
  path: string,
  out: Problems,
): void {
  tokens?.forEach((t, i) => {
    const p = `${path}[${i}]`;
    checkToken(t.token, `${p}.token`, out, false);
    for (const u of t.usages ?? []) {
      if (!KNOWN_TOKEN_USAGES.includes(u)) {
        out.push(
          `${p}.usages: ${q(u)} is not a bootstrap token usage (valid: ${KNOWN_TOKEN_USAGES.join(", ")})`,
        );
      }
    }
    if (
      (t.groups ?? []).length > 0 &&
      t.usages &&
      t.usages.length > 0 &&
      !t.usages.includes("authentication")
    ) {
      out.push(`${p}.groups: token groups need the "authentication" usage`);
    }
    for (const g of t.groups ?? []) {
      if (!TOKEN_GROUP.test(g)) {
        out.push(`${p}.groups: ${q(g)} must match ${TOKEN_GROUP.source}`);
      }
    }
    if (t.ttl !== undefined && t.expires !== undefined) {
      out.push(`${p}: ttl and expires are mutually exclusive`);
    }
    checkDuration(t.ttl, `${p}.ttl`, out);
    if (t.expires !== undefined && Number.isNaN(Date.parse(t.expires))) {
      out.push(`${p}.expires: ${q(t.expires)} is not an RFC 3339 time`);
    }
  });
}

function checkTaints(taints: Taint[] | null | undefined, path: string, out: Problems): void {
  taints?.forEach((t, i) => {
    const p = `${path}[${i}]`;
    if (!t.key || isQualifiedName(t.key).length > 0)
      out.push(`${p}.key: ${q(t.key ?? "")} is not a valid taint key`);
    if (t.value !== undefined && (t.value.length > 63 || !LABEL_VALUE.test(t.value))) {
      out.push(`${p}.value: ${q(t.value)} is not a valid taint value`);
    }
    if (!TAINT_EFFECTS.includes(t.effect)) {
      out.push(
        `${p}.effect: ${q(t.effect ?? "")} is not a taint effect (one of ${TAINT_EFFECTS.join(", ")})`,
      );
    }
  });
}

function checkNodeRegistration(
  nr: NodeRegistrationOptions | undefined,
  path: string,
  out: Problems,
  defaulted: boolean,
): void {
  const name = nr?.name;
  if (name === undefined || name === "") {
    if (defaulted)
      out.push(`${path}.name: the node name is empty; set --node-name or nodeRegistration.name`);
  } else if (!isDNS1123Subdomain(name)) {
    out.push(
      `${path}.name: ${q(name)} is not a valid node name (a lower-case RFC-1123 DNS subdomain)`,
    );
  }
  // Before defaulting a bare path is fine: kubeadm prepends unix:// (with a warning).
  const socket = nr?.criSocket;
  if (!socket) {
    if (defaulted) out.push(`${path}.criSocket: the CRI socket is empty`);
  } else if ((defaulted || socket.includes("://")) && !socket.startsWith("unix://")) {
    out.push(
      `${path}.criSocket: ${q(socket)} must be a unix:// URL (for example unix:///var/run/containerd/containerd.sock)`,
    );
  }
  checkTaints(nr?.taints, `${path}.taints`, out);
  checkArgs(nr?.kubeletExtraArgs, `${path}.kubeletExtraArgs`, out);
  if (nr?.imagePullPolicy && !PULL_POLICIES.includes(nr.imagePullPolicy)) {
    out.push(
      `${path}.imagePullPolicy: ${q(nr.imagePullPolicy)} is not a pull policy (one of ${PULL_POLICIES.join(", ")})`,
    );
  }
  const ignores = (nr?.ignorePreflightErrors ?? []).map((s) => s.toLowerCase());
  if (ignores.includes("all") && new Set(ignores).size > 1) {
    out.push(`${path}.ignorePreflightErrors: do not name individual checks when "all" is used`);
  }
}

function checkAPIEndpoint(
  ep: APIEndpoint | undefined,
  path: string,
  out: Problems,
  defaulted: boolean,
): void {
  const address = ep?.advertiseAddress;
  if (address !== undefined && address !== "") {
    if (!parseIP(address))
      out.push(`${path}.advertiseAddress: ${q(address)} is not a valid IP address`);
    else if (defaulted && !isGlobalUnicast(address)) {
      // kubeadm: VerifyAPIServerBindAddress.
      out.push(
        `${path}.advertiseAddress: ${q(address)} cannot be the API server's advertise address; use a global unicast address of this node`,
      );
    }
  } else if (defaulted)
    out.push(`${path}.advertiseAddress: no advertise address; set --apiserver-advertise-address`);
  const port = ep?.bindPort;
  if (
    port !== undefined &&
    !(Number.isInteger(port) && port >= 1 && port <= 65535) &&
    !(port === 0 && !defaulted)
  ) {
    out.push(`${path}.bindPort: ${port} is not a port number between 1 and 65535`);
  }
}

function checkCertificateKey(key: string | undefined, path: string, out: Problems): void {
  if (key === undefined || key === "") return;
  if (!/^[0-9a-fA-F]{64}$/.test(key)) {
    out.push(`${path}: the certificate key must be 64 hexadecimal characters (a 32-byte AES key)`);
  }
}

/** Split as kubeadm (strings.Split on ","), without trimming: a blank is an error there too. */
function parseCIDRList(text: string, path: string, out: Problems) {
  const parts = text.split(",");
  const cidrs = parts.map((p) => parseCIDR(p));
  if (cidrs.some((c) => c === undefined)) {
    out.push(`${path}: ${q(text)} is not a CIDR or comma-separated pair of CIDRs`);
    return undefined;
  }
  const list = cidrs as NonNullable<(typeof cidrs)[number]>[];
  if (list.length > 1 && !(list.length === 2 && list[0]!.family !== list[1]!.family)) {
    out.push(
      `${path}: ${q(text)} must be one CIDR, or two CIDRs (one IPv4, one IPv6) for dual-stack`,
    );
  }
  return list;
}

function rangeSize(prefix: number, family: 4 | 6): bigint {
  return 1n << BigInt((family === 4 ? 32 : 128) - prefix);
}

/** Last value of a flag in an extraArgs list (kubeadm GetArgValue with startIdx -1). */
function argValue(args: Arg[] | undefined, name: string): string | undefined {
  return args?.filter((a) => a.name === name).at(-1)?.value;
}

function checkNetworking(cl: ClusterConfiguration, out: Problems): void {
  const p = "ClusterConfiguration.networking";
  const n = cl.networking ?? {};
  if (n.dnsDomain !== undefined && n.dnsDomain !== "" && !isDNS1123Subdomain(n.dnsDomain)) {
    out.push(`${p}.dnsDomain: ${q(n.dnsDomain)} is not a valid DNS domain (an RFC-1123 subdomain)`);
  }
  const services = n.serviceSubnet
    ? parseCIDRList(n.serviceSubnet, `${p}.serviceSubnet`, out)
    : undefined;
  for (const s of services ?? []) {
    const bits = s.family === 4 ? 32 : 128;
    if (rangeSize(s.prefix, s.family) < MIN_SERVICE_ADDRESSES) {
      out.push(
        `${p}.serviceSubnet: ${s.text} is too small; it needs at least ${MIN_SERVICE_ADDRESSES} addresses`,
      );
    } else if (bits - s.prefix > MAX_SERVICE_SUBNET_BITS) {
      out.push(
        `${p}.serviceSubnet: ${s.text} is too large; for IPv${s.family} the mask must be /${bits - MAX_SERVICE_SUBNET_BITS} or longer`,
      );
    }
  }
  const pods = n.podSubnet ? parseCIDRList(n.podSubnet, `${p}.podSubnet`, out) : undefined;
  const allocate = argValue(cl.controllerManager?.extraArgs, "allocate-node-cidrs");
  for (const s of pods ?? []) {
    if (rangeSize(s.prefix, s.family) < MIN_POD_ADDRESSES) {
      out.push(
        `${p}.podSubnet: ${s.text} is too small; it needs at least ${MIN_POD_ADDRESSES} addresses`,
      );
      continue;
    }
    if (allocate === "false") continue;
    const maskArg = s.family === 6 ? "node-cidr-mask-size-ipv6" : "node-cidr-mask-size-ipv4";
    const maskText = argValue(cl.controllerManager?.extraArgs, maskArg);
    const nodeMask = maskText === undefined ? (s.family === 6 ? 64 : 24) : Number(maskText);
    if (!Number.isInteger(nodeMask)) {
      out.push(
        `ClusterConfiguration.controllerManager.extraArgs: ${maskArg}=${q(maskText)} is not an integer`,
      );
    } else if (s.prefix > nodeMask) {
      out.push(
        `${p}.podSubnet: ${s.text} is smaller than one node's range (/${nodeMask}); lower the mask or set controllerManager ${maskArg}`,
      );
    } else if (nodeMask - s.prefix > POD_SUBNET_NODE_MASK_MAX_DIFF) {
      out.push(
        `${p}.podSubnet: ${s.text} and the node mask /${nodeMask} differ by more than ${POD_SUBNET_NODE_MASK_MAX_DIFF} bits`,
      );
    }
  }
}

/**
 * Pod ranges that overlap a service range. kubeadm does not check this (ValidateNetworking), so
 * it is a warning, never an error: an IPv6 pod /56 holding the service /112 works with kubeadm.
 * An absent service subnet is kubeadm's default one. Ranges that do not parse are validation's.
 */
export function subnetOverlapWarnings(
  networking: { podSubnet?: string; serviceSubnet?: string } | undefined,
): string[] {
  const ranges = (text: string | undefined) =>
    (text ?? "").split(",").flatMap((c) => (c === "" ? [] : [parseCIDR(c)]));
  const pods = ranges(networking?.podSubnet);
  const services = ranges(networking?.serviceSubnet || DEFAULT_SERVICE_SUBNET);
  const warnings: string[] = [];
  for (const pod of pods) {
    for (const svc of services) {
      if (pod && svc && cidrsOverlap(pod.text, svc.text)) {
        warnings.push(
          `networking.podSubnet ${q(pod.text)} overlaps with networking.serviceSubnet ${q(svc.text)}: Pod and Service addresses may collide`,
        );
      }
    }
  }
  return warnings;
}

function checkURLs(urls: string[], requireHTTPS: boolean, path: string, out: Problems): void {
  for (const u of urls) {
    const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(u)?.[1];
    if (!scheme) out.push(`${path}: ${q(u)} has no URL scheme (for example https://10.0.0.1:2379)`);
    else if (requireHTTPS && scheme.toLowerCase() !== "https") {
      out.push(`${path}: ${q(u)} must use https when certificate files are set`);
    }
  }
}

function checkEtcd(cl: ClusterConfiguration, out: Problems): void {
  const p = "ClusterConfiguration.etcd";
  const { local, external } = cl.etcd ?? {};
  if (local && external) {
    out.push(`${p}: local and external are mutually exclusive; set only one`);
    return;
  }
  if (local) {
    if (local.dataDir && !isAbs(local.dataDir))
      out.push(`${p}.local.dataDir: ${q(local.dataDir)} is not an absolute path`);
    checkCertSANs(local.serverCertSANs, `${p}.local.serverCertSANs`, out);
    checkCertSANs(local.peerCertSANs, `${p}.local.peerCertSANs`, out);
    checkImageRepository(local.imageRepository, `${p}.local.imageRepository`, out);
    checkArgs(local.extraArgs, `${p}.local.extraArgs`, out);
    checkEnvs(local.extraEnvs, `${p}.local.extraEnvs`, out);
  }
  if (external) {
    const e = `${p}.external`;
    const { caFile = "", certFile = "", keyFile = "" } = external;
    if ((certFile === "") !== (keyFile === ""))
      out.push(`${e}: set both certFile and keyFile, or neither`);
    if (certFile !== "" && keyFile !== "" && caFile === "")
      out.push(`${e}.caFile: certFile and keyFile need caFile too`);
    if ((external.endpoints ?? []).length === 0)
      out.push(`${e}.endpoints: list at least one etcd endpoint`);
    checkURLs(
      external.endpoints ?? [],
      caFile !== "" || certFile !== "" || keyFile !== "",
      `${e}.endpoints`,
      out,
    );
    for (const [k, v] of [
      ["caFile", caFile],
      ["certFile", certFile],
      ["keyFile", keyFile],
    ] as const) {
      if (v !== "" && !isAbs(v)) out.push(`${e}.${k}: ${q(v)} is not an absolute path`);
    }
  }
}

/** kubeadm's check of ClusterConfiguration.featureGates, for a release when it is known. */
export function checkFeatureGates(
  gates: Record<string, boolean> | undefined,
  release: Release | undefined,
  out: Problems,
): void {
  const known = release?.featureGates ?? allKnownFeatureGates();
  for (const g of Object.keys(gates ?? {})) {
    if (release?.graduatedFeatureGates?.includes(g)) {
      out.push(
        `ClusterConfiguration.featureGates: ${g} graduated and is no longer a feature gate in Kubernetes v1.${release.minor}; remove it`,
      );
    } else if (!(g in known)) {
      const where = release ? ` for Kubernetes v1.${release.minor}` : "";
      const names = Object.keys(known).sort().join(", ") || "none";
      out.push(
        `ClusterConfiguration.featureGates: ${g} is not a kubeadm feature gate${where} (known: ${names})`,
      );
    } else {
      const locked = release ? lockedGateProblem(g, gates![g]!, release) : undefined;
      if (locked) out.push(`ClusterConfiguration.featureGates: ${locked}`);
    }
  }
}

function checkCluster(cl: ClusterConfiguration, release: Release | undefined, out: Problems): void {
  const p = "ClusterConfiguration";
  checkImageRepository(cl.dns?.imageRepository, `${p}.dns.imageRepository`, out);
  checkNetworking(cl, out);
  checkCertSANs(cl.apiServer?.certSANs, `${p}.apiServer.certSANs`, out);
  checkComponent(cl.apiServer, `${p}.apiServer`, out);
  checkComponent(cl.controllerManager, `${p}.controllerManager`, out);
  checkComponent(cl.scheduler, `${p}.scheduler`, out);
  if (cl.certificatesDir && !isAbs(cl.certificatesDir)) {
    out.push(`${p}.certificatesDir: ${q(cl.certificatesDir)} is not an absolute path`);
  }
  checkFeatureGates(cl.featureGates, release, out);
  if (cl.controlPlaneEndpoint) {
    const problem = hostPortProblem(cl.controlPlaneEndpoint);
    if (problem)
      out.push(
        `${p}.controlPlaneEndpoint: ${q(cl.controlPlaneEndpoint)} is not a valid endpoint: ${problem}`,
      );
  }
  checkImageRepository(cl.imageRepository, `${p}.imageRepository`, out);
  checkEtcd(cl, out);
  if (cl.encryptionAlgorithm) {
    // ECDSA-P384 came with kubeadm 1.34 (kubernetes/kubernetes#131677); 1.33 refuses it.
    const algorithms = ENCRYPTION_ALGORITHMS.filter(
      (a) => a !== "ECDSA-P384" || release?.behaviour.encryptionAlgorithmECDSAP384 !== false,
    );
    if (!algorithms.includes(cl.encryptionAlgorithm)) {
      const where = release ? ` for Kubernetes v1.${release.minor}` : "";
      out.push(
        `${p}.encryptionAlgorithm: ${q(cl.encryptionAlgorithm)} is not supported${where} (one of ${algorithms.join(", ")})`,
      );
    }
  }
  for (const k of ["certificateValidityPeriod", "caCertificateValidityPeriod"] as const) {
    checkDuration(cl[k], `${p}.${k}`, out);
    const nanos = cl[k] === undefined ? undefined : tryParseGoDurationNanos(cl[k]);
    if (nanos === 0n) out.push(`${p}.${k}: must be longer than zero`);
  }
}

function checkInit(init: InitConfiguration, out: Problems, defaulted: boolean): void {
  const p = "InitConfiguration";
  checkNodeRegistration(init.nodeRegistration, `${p}.nodeRegistration`, out, defaulted);
  checkBootstrapTokens(init.bootstrapTokens, `${p}.bootstrapTokens`, out);
  checkAPIEndpoint(init.localAPIEndpoint, `${p}.localAPIEndpoint`, out, defaulted);
  checkCertificateKey(init.certificateKey, `${p}.certificateKey`, out);
  checkTimeouts(init.timeouts, `${p}.timeouts`, out);
  if (
    init.patches?.directory !== undefined &&
    init.patches.directory !== "" &&
    !isAbs(init.patches.directory)
  ) {
    out.push(`${p}.patches.directory: ${q(init.patches.directory)} is not an absolute path`);
  }
}

// ---- public API -------------------------------------------------------------------------------

/**
 * kubeadm.k8s.io/v1beta3 documents ("<file>: <Kind>", ConfigDocuments.v1beta3Documents) for a
 * release whose kubeadm no longer reads them: kubernetes/kubernetes#136016 removed v1beta3 in
 * 1.37 (CHANGELOG-1.37, v1.37.0-alpha.1), and kubeadm refuses an "old API spec" naming the
 * kubeadm that can still migrate it (util/config ValidateSupportedVersion, oldKnownAPIVersions).
 */
export function removedAPIVersionProblems(
  v1beta3Documents: readonly string[] | undefined,
  release: Release | undefined,
): string[] {
  if (!release || release.behaviour.kubeadmAPIV1beta3) return [];
  return (v1beta3Documents ?? []).map(
    (doc) =>
      `${doc} uses kubeadm.k8s.io/v1beta3, which kubeadm no longer reads from Kubernetes v1.37 (v1.${release.minor} here); write it as kubeadm.k8s.io/v1beta4 ("kubeadm config migrate" of kubeadm v1.36 converts it)`,
  );
}

/** Every problem in a defaulted init configuration (kubeadm ValidateInitConfiguration). */
export function validateInitConfig(cfg: InitConfig): string[] {
  const out: Problems = [];
  let release: Release | undefined;
  try {
    release = releaseFor(cfg.cluster.kubernetesVersion);
  } catch (e) {
    out.push(`ClusterConfiguration.kubernetesVersion: ${(e as Error).message}`);
  }
  checkInit(cfg.init, out, true);
  checkCluster(cfg.cluster, release, out);
  out.push(...removedAPIVersionProblems(cfg.v1beta3Documents, release));
  // The advertise address must be of the primary (first) service range's family, or
  // kube-apiserver refuses to start: "service IP family ... must match public address family"
  // (cmd/kube-apiserver/app/options/validation.go validatePublicIPServiceClusterIPRangeIPFamilies).
  const family = ipFamily(cfg.init.localAPIEndpoint.advertiseAddress);
  const primary = parseCIDR(splitCIDRs(cfg.cluster.networking.serviceSubnet)[0] ?? "")?.family;
  if (family !== undefined && primary !== undefined && family !== primary) {
    out.push(
      `InitConfiguration.localAPIEndpoint.advertiseAddress: IPv${family} address ${q(cfg.init.localAPIEndpoint.advertiseAddress)} does not match the IPv${primary} primary range of networking.serviceSubnet ${q(cfg.cluster.networking.serviceSubnet)} (kube-apiserver advertises the kubernetes Service's endpoint in the first service range's family)`,
    );
  }
  return out;
}

/** Every problem in a JoinConfiguration as written (kubeadm ValidateJoinConfiguration). */
export function validateJoinConfiguration(join: JoinConfiguration): string[] {
  return checkJoinConfiguration(join, { defaulted: false });
}

export interface JoinCheckOptions {
  /**
   * True for the defaulted form `join` runs with (join-defaults.ts): then what defaulting fills
   * is required (node name, CRI socket, TLS bootstrap token, advertise address, CA path).
   */
  defaulted: boolean;
  /**
   * Whether a discovery file given as a path exists; kubeadm's ValidateDiscoveryKubeConfigPath
   * stats it. The caller looks (validation does no I/O); undefined = not checked.
   */
  discoveryFileExists?: boolean;
}

/** kubeadm's ValidateJoinConfiguration, on the written (defaulted=false) or defaulted form. */
export function checkJoinConfiguration(join: JoinConfiguration, opts: JoinCheckOptions): string[] {
  const out: Problems = [];
  const { defaulted } = opts;
  const p = "JoinConfiguration";
  const d = join.discovery ?? {};
  if (!d.bootstrapToken && !d.file) {
    out.push(
      defaulted
        ? `${p}.discovery: set bootstrapToken or file (on the command line: the API server endpoint host:port with --token, or --discovery-file)`
        : `${p}.discovery: set bootstrapToken or file`,
    );
  }
  if (d.bootstrapToken && d.file)
    out.push(`${p}.discovery: bootstrapToken and file cannot both be set`);
  if (d.bootstrapToken) {
    const bt = d.bootstrapToken;
    const b = `${p}.discovery.bootstrapToken`;
    if (!bt.apiServerEndpoint)
      out.push(`${b}.apiServerEndpoint: the API server endpoint (host:port) is required`);
    else if (!/^(\[[^\]]+\]|[^:[\]]+):[0-9]+$/.test(bt.apiServerEndpoint)) {
      out.push(
        `${b}.apiServerEndpoint: ${q(bt.apiServerEndpoint)} must be host:port ([ipv6]:port for IPv6)`,
      );
    } else {
      const problem = hostPortProblem(bt.apiServerEndpoint);
      if (problem)
        out.push(`${b}.apiServerEndpoint: ${q(bt.apiServerEndpoint)} is not valid: ${problem}`);
    }
    if ((bt.caCertHashes ?? []).length === 0 && !bt.unsafeSkipCAVerification) {
      // kubeadm's instruction, after the safe way out: pin the CA.
      out.push(
        `${b}.caCertHashes: token discovery without caCertHashes is unsafe; pin the cluster CA with --discovery-token-ca-cert-hash (caCertHashes in a config file), or set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue`,
      );
    }
    for (const h of bt.caCertHashes ?? []) {
      if (!CA_CERT_HASH.test(h))
        out.push(`${b}.caCertHashes: ${q(h)} is not of the form "sha256:<64 hex digits>"`);
    }
    checkToken(bt.token, `${b}.token`, out, true);
    // Defaulting copies the discovery token here, so after it kubeadm requires a valid one.
    checkToken(d.tlsBootstrapToken, `${p}.discovery.tlsBootstrapToken`, out, defaulted);
  }
  if (d.file) {
    const path = d.file.kubeConfigPath;
    const f = `${p}.discovery.file.kubeConfigPath`;
    const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(path ?? "")?.[1]?.toLowerCase();
    if (!path) out.push(`${f}: a file path or https URL is required`);
    else if (scheme === "https") {
      if (!URL.canParse(path)) out.push(`${f}: ${q(path)} is not a valid HTTPS URL`);
    } else if (scheme !== undefined && (defaulted || scheme !== "file")) {
      // Defaulting turns file:// URLs into paths, so a scheme left afterwards is not "file".
      out.push(`${f}: ${q(path)}: only https URLs and file paths are accepted`);
    } else if (scheme === undefined && opts.discoveryFileExists === false) {
      out.push(`${f}: ${q(path)} is not a valid HTTPS URL or a file on disk`);
    }
    checkToken(d.tlsBootstrapToken, `${p}.discovery.tlsBootstrapToken`, out, false);
  }
  checkNodeRegistration(join.nodeRegistration, `${p}.nodeRegistration`, out, defaulted);
  if (join.controlPlane) {
    checkAPIEndpoint(
      join.controlPlane.localAPIEndpoint,
      `${p}.controlPlane.localAPIEndpoint`,
      out,
      defaulted,
    );
    checkCertificateKey(join.controlPlane.certificateKey, `${p}.controlPlane.certificateKey`, out);
  }
  const caCertPath = join.caCertPath;
  if (defaulted && !caCertPath) {
    out.push(`${p}.caCertPath: the CA certificate path is empty`);
  } else if (
    caCertPath !== undefined &&
    caCertPath !== "" &&
    (!isAbs(caCertPath) || !caCertPath.endsWith(".crt"))
  ) {
    out.push(`${p}.caCertPath: ${q(caCertPath)} must be an absolute path to a .crt file`);
  }
  checkTimeouts(join.timeouts, `${p}.timeouts`, out);
  const patches = join.patches?.directory;
  if (patches !== undefined && patches !== "" && !isAbs(patches)) {
    out.push(`${p}.patches.directory: ${q(patches)} is not an absolute path`);
  }
  return out;
}

/**
 * Every problem in decoded documents before defaulting (`kubeforge config validate`): fields
 * left out are kubeadm's defaults and fine; machine-dependent ones (node name, advertise
 * address) are checked only when given.
 */
export function validateConfigDocuments(docs: ConfigDocuments): string[] {
  const out: Problems = [];
  let release: Release | undefined;
  const version = docs.cluster?.kubernetesVersion;
  if (version !== undefined && version !== "") {
    const problem = kubernetesVersionProblem(version);
    if (problem) out.push(`ClusterConfiguration.kubernetesVersion: ${problem}`);
    else if (!/^(latest|stable)/.test(version.replace(/^release\//, "")))
      release = releaseFor(version);
  }
  if (docs.init) checkInit(docs.init, out, false);
  if (docs.cluster) checkCluster(docs.cluster, release, out);
  out.push(...removedAPIVersionProblems(docs.v1beta3Documents, release));
  if (docs.join) out.push(...validateJoinConfiguration(docs.join));
  return out;
}

/**
 * `kubeadm config validate`: every problem validateConfigDocuments finds, plus the component
 * configurations decoded strictly (kubeadm's ValidateConfig loads init and cluster documents
 * with strictErrors, so a field their Go types lack is an error here, where init only warns).
 * Their types are those of the pinned version, else of the newest release.
 */
export function validateConfigFile(docs: ConfigDocuments): string[] {
  const out = validateConfigDocuments(docs);
  if (docs.init || docs.cluster) {
    const release = pinnedRelease(docs.cluster?.kubernetesVersion ?? "") ?? RELEASES.at(-1)!;
    out.push(...componentConfigUnknownFields(docs, release));
  }
  return out;
}

/** kubeadm's ValidateCertValidity: values above the defaults are only warned about. */
export function certificateValidityWarnings(cl: ClusterConfiguration): string[] {
  const warnings: string[] = [];
  const leaf = cl.certificateValidityPeriod
    ? tryParseGoDurationNanos(cl.certificateValidityPeriod)
    : undefined;
  const ca = cl.caCertificateValidityPeriod
    ? tryParseGoDurationNanos(cl.caCertificateValidityPeriod)
    : undefined;
  const hour = 3_600_000_000_000n;
  if (leaf !== undefined && leaf > 8760n * hour) {
    warnings.push(
      `certificateValidityPeriod: the value ${cl.certificateValidityPeriod} is more than the recommended default for certificate expiration: 8760h0m0s`,
    );
  }
  if (ca !== undefined && ca > 87600n * hour) {
    warnings.push(
      `caCertificateValidityPeriod: the value ${cl.caCertificateValidityPeriod} is more than the recommended default for CA certificate expiration: 87600h0m0s`,
    );
  }
  if (leaf !== undefined && ca !== undefined && leaf > ca) {
    warnings.push(
      `certificateValidityPeriod: the value ${cl.certificateValidityPeriod} is more than the caCertificateValidityPeriod: ${cl.caCertificateValidityPeriod}`,
    );
  }
  return warnings;
}
