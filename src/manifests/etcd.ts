import semver from "semver";
import { ipFamily, joinHostPort } from "../config/network.js";
import { DEFAULT_ETCD_DATA_DIR } from "../config/paths.js";
import { extraArgsKeepOrder } from "../config/patch-level.js";
import type { Release } from "../config/release.js";
import type { Arg, InitConfig } from "../config/types.js";
import {
  argumentsToCommand,
  componentPod,
  imageName,
  lastArgValue,
  mergeEnvVars,
  podCommand,
  podStyle,
  setArg,
  type Pod,
  type URIScheme,
} from "./static-pod.js";

// The local (stacked) etcd static Pod. kubeadm: phases/etcd/local.go (GetEtcdPodSpec,
// getEtcdCommand) and util/staticpod/utils.go (GetEtcdProbeEndpoint).

export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;
export const ETCD_METRICS_PORT = 2381;
/** kubeadm: constants.EtcdAdvertiseClientUrlsAnnotationKey. */
export const ETCD_CLIENT_URLS_ANNOTATION = "kubeadm.kubernetes.io/etcd.advertise-client-urls";

/** A member of an existing etcd cluster, as etcd's member list reports it. */
export interface EtcdMember {
  name: string;
  peerURL: string;
}

export interface EtcdPodInput {
  cluster: InitConfig["cluster"];
  /** The node's API endpoint: etcd listens on its address. */
  endpoint: { advertiseAddress: string; bindPort: number };
  nodeName: string;
  timeouts: { controlPlaneComponentHealthCheck: string };
  /**
   * Members of the cluster this node joins, itself included (kubeadm join's
   * AddMemberAsLearner result). Empty or absent: a new single-member cluster (init).
   */
  initialCluster?: readonly EtcdMember[];
}

/** `https://<address>:2379` (kubeadm: util/etcd GetClientURL). */
export function etcdClientURL(address: string): string {
  return `https://${joinHostPort(address, ETCD_CLIENT_PORT)}`;
}

/** `https://<address>:2380` (kubeadm: util/etcd GetPeerURL). */
export function etcdPeerURL(address: string): string {
  return `https://${joinHostPort(address, ETCD_PEER_PORT)}`;
}

/** The etcd Pod of `kubeadm init` for this configuration. */
export function initEtcdPod(cfg: InitConfig, release: Release): Pod {
  return etcdPod(
    {
      cluster: cfg.cluster,
      endpoint: cfg.init.localAPIEndpoint,
      nodeName: cfg.init.nodeRegistration.name,
      timeouts: cfg.init.timeouts,
    },
    release,
  );
}

/** kubeadm's GetEtcdPodSpec. */
export function etcdPod(input: EtcdPodInput, release: Release): Pod {
  const { cluster, endpoint } = input;
  const local = cluster.etcd.local;
  if (cluster.etcd.external) {
    throw new Error(
      "etcd static Pod manifest cannot be generated for a cluster using external etcd",
    );
  }
  if (!local) throw new Error("etcd.local is not set: the configuration was not defaulted");
  const dataDir = local.dataDir ?? DEFAULT_ETCD_DATA_DIR;
  // Plain string concatenation, as kubeadm does (cfg.CertificatesDir+"/etcd").
  const certsDir = `${cluster.certificatesDir}/etcd`;
  const isIPv6 = ipFamily(endpoint.advertiseAddress) === 6;
  const probe = etcdProbeEndpoint(local.extraArgs, isIPv6);
  return componentPod(
    {
      name: "etcd",
      image: imageName(
        local.imageRepository || cluster.imageRepository,
        "etcd",
        etcdImageTag(cluster, release),
      ),
      command: etcdCommandFor(input, release),
      volumes: [
        { name: "etcd-data", hostPath: { path: dataDir, type: "DirectoryOrCreate" } },
        { name: "etcd-certs", hostPath: { path: certsDir, type: "DirectoryOrCreate" } },
      ],
      // etcd writes its data, so both mounts are read-write; kubeadm keeps this order.
      volumeMounts: [
        { name: "etcd-data", mountPath: dataDir },
        { name: "etcd-certs", mountPath: certsDir },
      ],
      // Unlike the other components, etcd gets no proxy variables.
      env: mergeEnvVars(local.extraEnvs ?? []),
      requests: { cpu: "100m", memory: "100Mi" },
      // kubernetes/kubeadm#3039: /livez and /readyz on the metrics listener.
      probe: {
        host: probe.host,
        port: probe.port,
        scheme: probe.scheme,
        livenessPath: "/livez",
        readinessPath: "/readyz",
        startupPath: "/readyz",
      },
      annotations: { [ETCD_CLIENT_URLS_ANNOTATION]: etcdClientURL(endpoint.advertiseAddress) },
    },
    podStyle(release, input.timeouts),
  );
}

/** The etcd command line of an etcd Pod (argv, binary first): what the lead starts real etcd with. */
export function etcdCommand(pod: Pod): string[] {
  return podCommand(pod);
}

/** etcd.local.imageTag, else the release's etcd version (kubeadm: images.GetEtcdImage). */
export function etcdImageTag(
  cluster: Pick<InitConfig["cluster"], "etcd">,
  release: Release,
): string {
  return cluster.etcd.local?.imageTag || release.etcdVersion;
}

/**
 * kubeadm picks the etcd 3.6 flag names when the image tag parses as a semantic version of at
 * least 3.6.0 (k8s.io/apimachinery version.ParseSemantic + AtLeast). A pre-release such as
 * "3.6.0-rc.1" sorts before 3.6.0; a tag that is not a version ("latest") gets the old names.
 */
export function etcdUsesV36Flags(imageTag: string): boolean {
  const trimmed = imageTag.trimStart();
  // Go accepts an optional leading "v"; npm semver would also accept "=", Go does not.
  if (trimmed.startsWith("=") || semver.valid(trimmed) === null) return false;
  return semver.gte(trimmed, "3.6.0");
}

function etcdCommandFor(input: EtcdPodInput, release: Release): string[] {
  const { cluster, endpoint, nodeName } = input;
  const local = cluster.etcd.local!;
  const certs = (file: string): string => `${cluster.certificatesDir}/${file}`;
  // The loopback of the advertise address's family.
  const loopback = ipFamily(endpoint.advertiseAddress) === 6 ? "::1" : "127.0.0.1";
  const clientURL = etcdClientURL(endpoint.advertiseAddress);
  const peerURL = etcdPeerURL(endpoint.advertiseAddress);
  let args: Arg[] = [
    { name: "name", value: nodeName },
    { name: "listen-client-urls", value: `${etcdClientURL(loopback)},${clientURL}` },
    { name: "advertise-client-urls", value: clientURL },
    { name: "listen-peer-urls", value: peerURL },
    { name: "initial-advertise-peer-urls", value: peerURL },
    { name: "data-dir", value: local.dataDir ?? DEFAULT_ETCD_DATA_DIR },
    { name: "cert-file", value: certs("etcd/server.crt") },
    { name: "key-file", value: certs("etcd/server.key") },
    { name: "trusted-ca-file", value: certs("etcd/ca.crt") },
    { name: "client-cert-auth", value: "true" },
    { name: "peer-cert-file", value: certs("etcd/peer.crt") },
    { name: "peer-key-file", value: certs("etcd/peer.key") },
    { name: "peer-trusted-ca-file", value: certs("etcd/ca.crt") },
    { name: "peer-client-cert-auth", value: "true" },
    { name: "snapshot-count", value: "10000" },
    {
      name: "listen-metrics-urls",
      value: `http://${joinHostPort(loopback, ETCD_METRICS_PORT)}`,
    },
  ];
  if (etcdUsesV36Flags(etcdImageTag(cluster, release))) {
    args.push(
      { name: "feature-gates", value: "InitialCorruptCheck=true" },
      { name: "watch-progress-notify-interval", value: "5s" },
    );
  } else {
    args.push(
      { name: "experimental-initial-corrupt-check", value: "true" },
      { name: "experimental-watch-progress-notify-interval", value: "5s" },
    );
  }

  const members = input.initialCluster ?? [];
  if (members.length === 0) {
    args = setArg(args, "initial-cluster", `${nodeName}=${peerURL}`);
  } else {
    // The joining member must be part of the list.
    args = setArg(args, "initial-cluster", members.map((m) => `${m.name}=${m.peerURL}`).join(","));
    args = setArg(args, "initial-cluster-state", "existing");
  }
  const keepOrder = extraArgsKeepOrder(cluster.kubernetesVersion, release);
  return ["etcd", ...argumentsToCommand(args, local.extraArgs ?? [], keepOrder)];
}

/**
 * kubeadm's GetEtcdProbeEndpoint: the first URL of a listen-metrics-urls extraArg decides the
 * probe's host, port and scheme; otherwise http on the loopback, port 2381.
 */
export function etcdProbeEndpoint(
  extraArgs: readonly Arg[] | undefined,
  isIPv6: boolean,
): { host: string; port: number; scheme: URIScheme } {
  const loopback = isIPv6 ? "::1" : "127.0.0.1";
  const fallback = { host: loopback, port: ETCD_METRICS_PORT, scheme: "HTTP" as URIScheme };
  const metricsURLs = lastArgValue(extraArgs, "listen-metrics-urls");
  if (metricsURLs === undefined) return fallback;
  const url = parseURLAuthority(metricsURLs.split(",")[0]!);
  if (!url) return fallback;
  const port = url.port === "" ? NaN : Number(url.port);
  return {
    host: url.hostname || loopback,
    port: Number.isInteger(port) && port > 0 && port <= 65535 ? port : ETCD_METRICS_PORT,
    scheme: url.scheme === "https" ? "HTTPS" : "HTTP",
  };
}

/** Scheme, host (brackets removed, as Go's URL.Hostname) and port of "scheme://host:port/...". */
function parseURLAuthority(
  text: string,
): { scheme: string; hostname: string; port: string } | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(?:\/\/([^/?#]*))?/.exec(text);
  if (!m) return undefined;
  const authority = (m[2] ?? "").replace(/^.*@/, "");
  const hostPort = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(authority);
  if (!hostPort) return undefined;
  return {
    scheme: m[1]!.toLowerCase(),
    hostname: hostPort[1]!.replace(/^\[(.*)\]$/, "$1"),
    port: hostPort[2] ?? "",
  };
}
