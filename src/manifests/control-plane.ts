import { posix } from "node:path";
import { ipFamily, joinHostPort } from "../config/network.js";
import { extraArgsKeepOrder } from "../config/patch-level.js";
import {
  CONTROLLER_MANAGER_KUBECONFIG,
  KUBERNETES_DIR,
  SCHEDULER_KUBECONFIG,
} from "../config/paths.js";
import type { Release } from "../config/release.js";
import { ETCD_CLIENT_PORT } from "./etcd.js";
import type {
  Arg,
  ExternalEtcd,
  HostPathMount,
  HostPathType,
  InitConfig,
} from "../config/types.js";
import {
  argumentsToCommand,
  compareBytes,
  componentPod,
  kubernetesImage,
  lastArgValue,
  mergeEnvVars,
  podStyle,
  probeAddress,
  proxyEnvVars,
  setArg,
  sortByName,
  type HostPathVolume,
  type Pod,
  type VolumeMount,
} from "./static-pod.js";

// The kube-apiserver, kube-controller-manager and kube-scheduler static Pods.
// kubeadm: phases/controlplane/manifests.go (commands, probes), volumes.go (host paths).

export type ControlPlaneComponent = "kube-apiserver" | "kube-controller-manager" | "kube-scheduler";
export const CONTROL_PLANE_COMPONENTS: readonly ControlPlaneComponent[] = [
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
];

/** kubeadm constants.KubeControllerManagerPort / KubeSchedulerPort. */
export const KUBE_CONTROLLER_MANAGER_PORT = 10257;
export const KUBE_SCHEDULER_PORT = 10259;

/** kubeadm: constants.KubeAPIServerAdvertiseAddressEndpointAnnotationKey. */
export const APISERVER_ENDPOINT_ANNOTATION =
  "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint";

const CA_CERTS_DIR = "/etc/ssl/certs";
/**
 * Directories /etc/ssl/certs may link into; each is mounted only when it exists on the host
 * (kubeadm: volumes.go caCertsExtraVolumePaths).
 */
export const CA_TRUST_DIRS: readonly string[] = [
  "/etc/pki/ca-trust",
  "/etc/pki/tls/certs",
  "/etc/ca-certificates",
  "/usr/share/ca-certificates",
  "/usr/local/share/ca-certificates",
];
const DEFAULT_FLEXVOLUME_DIR = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec";

/** kubeadm's valid authorization modes (manifests.go isValidAuthzMode). */
const AUTHZ_MODES = ["Node", "RBAC", "Webhook", "ABAC", "AlwaysAllow", "AlwaysDeny"];
const DEFAULT_AUTHZ_MODES = ["Node", "RBAC"];

export interface ControlPlaneOptions {
  /** Which of CA_TRUST_DIRS exist on the node (kubeadm stats them on the machine it runs on). */
  existingHostPaths: ReadonlySet<string>;
  /** The environment kubeforge runs in; its *_proxy variables are copied into the Pods. */
  proxyEnv: Readonly<Record<string, string | undefined>>;
  /** ca.crt is present without ca.key (kubeadm's UsingExternalCA). */
  externalCA: boolean;
  /** Receives kubeadm's warnings (ignored authorization modes). */
  warn?: (message: string) => void;
}

/** The three control-plane Pods kubeadm's GetStaticPodSpecs builds. */
export function controlPlanePods(
  cfg: InitConfig,
  release: Release,
  opts: ControlPlaneOptions,
): Record<ControlPlaneComponent, Pod> {
  const cluster = cfg.cluster;
  const endpoint = cfg.init.localAPIEndpoint;
  const style = podStyle(release, cfg.init.timeouts);
  const mounts = controlPlaneHostPaths(cfg, opts.existingHostPaths);
  const proxy = proxyEnvVars(opts.proxyEnv);
  const image = (name: string): string => kubernetesImage(cluster, name);
  const keepOrder = extraArgsKeepOrder(cluster.kubernetesVersion, release);

  const apiserver = componentPod(
    {
      name: "kube-apiserver",
      image: image("kube-apiserver"),
      command: [
        "kube-apiserver",
        ...argumentsToCommand(
          apiServerArgs(cfg, opts.warn),
          cluster.apiServer.extraArgs,
          keepOrder,
        ),
      ],
      ...mounts.get("kube-apiserver"),
      env: mergeEnvVars(proxy, cluster.apiServer.extraEnvs),
      requests: { cpu: "250m" },
      probe: {
        host: endpoint.advertiseAddress ? probeAddress(endpoint.advertiseAddress) : "127.0.0.1",
        port: endpoint.bindPort,
        scheme: "HTTPS",
        livenessPath: "/livez",
        readinessPath: "/readyz",
        startupPath: "/livez",
      },
      annotations: {
        [APISERVER_ENDPOINT_ANNOTATION]: joinHostPort(endpoint.advertiseAddress, endpoint.bindPort),
      },
    },
    style,
  );

  const kcmBind = lastArgValue(cluster.controllerManager.extraArgs, "bind-address");
  const controllerManager = componentPod(
    {
      name: "kube-controller-manager",
      image: image("kube-controller-manager"),
      command: [
        "kube-controller-manager",
        ...argumentsToCommand(
          controllerManagerArgs(cfg, opts.externalCA),
          cluster.controllerManager.extraArgs,
          keepOrder,
        ),
      ],
      ...mounts.get("kube-controller-manager"),
      env: mergeEnvVars(proxy, cluster.controllerManager.extraEnvs),
      requests: { cpu: "200m" },
      probe: {
        host: kcmBind === undefined ? "127.0.0.1" : probeAddress(kcmBind),
        port: KUBE_CONTROLLER_MANAGER_PORT,
        scheme: "HTTPS",
        livenessPath: "/healthz",
        startupPath: "/healthz",
      },
    },
    style,
  );

  const schedulerBind = lastArgValue(cluster.scheduler.extraArgs, "bind-address");
  const scheduler = componentPod(
    {
      name: "kube-scheduler",
      image: image("kube-scheduler"),
      command: [
        "kube-scheduler",
        ...argumentsToCommand(schedulerArgs(), cluster.scheduler.extraArgs, keepOrder),
      ],
      ...mounts.get("kube-scheduler"),
      env: mergeEnvVars(proxy, cluster.scheduler.extraEnvs),
      requests: { cpu: "100m" },
      probe: {
        host: schedulerBind === undefined ? "127.0.0.1" : probeAddress(schedulerBind),
        port: KUBE_SCHEDULER_PORT,
        scheme: "HTTPS",
        livenessPath: "/livez",
        readinessPath: "/readyz",
        startupPath: "/livez",
      },
    },
    style,
  );

  return {
    "kube-apiserver": apiserver,
    "kube-controller-manager": controllerManager,
    "kube-scheduler": scheduler,
  };
}

function pki(cfg: InitConfig, file: string): string {
  return posix.join(cfg.cluster.certificatesDir, file);
}

/** kubeadm: manifests.go getAPIServerCommand (defaults before extraArgs). */
function apiServerArgs(cfg: InitConfig, warn?: (message: string) => void): Arg[] {
  const cluster = cfg.cluster;
  const endpoint = cfg.init.localAPIEndpoint;
  let args: Arg[] = [
    { name: "advertise-address", value: endpoint.advertiseAddress },
    { name: "enable-admission-plugins", value: "NodeRestriction" },
    { name: "service-cluster-ip-range", value: cluster.networking.serviceSubnet },
    { name: "service-account-key-file", value: pki(cfg, "sa.pub") },
    { name: "service-account-signing-key-file", value: pki(cfg, "sa.key") },
    {
      name: "service-account-issuer",
      value: `https://kubernetes.default.svc.${cluster.networking.dnsDomain}`,
    },
    { name: "client-ca-file", value: pki(cfg, "ca.crt") },
    { name: "tls-cert-file", value: pki(cfg, "apiserver.crt") },
    { name: "tls-private-key-file", value: pki(cfg, "apiserver.key") },
    { name: "kubelet-client-certificate", value: pki(cfg, "apiserver-kubelet-client.crt") },
    { name: "kubelet-client-key", value: pki(cfg, "apiserver-kubelet-client.key") },
    { name: "enable-bootstrap-token-auth", value: "true" },
    { name: "secure-port", value: String(endpoint.bindPort) },
    { name: "allow-privileged", value: "true" },
    { name: "kubelet-preferred-address-types", value: "InternalIP,ExternalIP,Hostname" },
    // kubeadm always configures the front proxy; it is useless without the client cert anyway.
    { name: "requestheader-username-headers", value: "X-Remote-User" },
    { name: "requestheader-group-headers", value: "X-Remote-Group" },
    { name: "requestheader-extra-headers-prefix", value: "X-Remote-Extra-" },
    { name: "requestheader-client-ca-file", value: pki(cfg, "front-proxy-ca.crt") },
    { name: "requestheader-allowed-names", value: "front-proxy-client" },
    { name: "proxy-client-cert-file", value: pki(cfg, "front-proxy-client.crt") },
    { name: "proxy-client-key-file", value: pki(cfg, "front-proxy-client.key") },
  ];

  const external = cluster.etcd.external;
  if (external) {
    args = setArg(args, "etcd-servers", external.endpoints.join(","));
    if (external.caFile) args = setArg(args, "etcd-cafile", external.caFile);
    if (external.certFile && external.keyFile) {
      args = setArg(args, "etcd-certfile", external.certFile);
      args = setArg(args, "etcd-keyfile", external.keyFile);
    }
  } else {
    // The local etcd listens on the loopback of the advertise address's family.
    const loopback = ipFamily(endpoint.advertiseAddress) === 6 ? "::1" : "127.0.0.1";
    args = setArg(args, "etcd-servers", `https://${joinHostPort(loopback, ETCD_CLIENT_PORT)}`);
    args = setArg(args, "etcd-cafile", pki(cfg, "etcd/ca.crt"));
    args = setArg(args, "etcd-certfile", pki(cfg, "apiserver-etcd-client.crt"));
    args = setArg(args, "etcd-keyfile", pki(cfg, "apiserver-etcd-client.key"));
    const advertised = lastArgValue(cluster.etcd.local?.extraArgs, "advertise-client-urls");
    if (advertised !== undefined) args = setArg(args, "etcd-servers", advertised);
  }

  // A structured authorization config replaces --authorization-mode altogether.
  if (lastArgValue(cluster.apiServer.extraArgs, "authorization-config") === undefined) {
    const requested = lastArgValue(cluster.apiServer.extraArgs, "authorization-mode") ?? "";
    args = setArg(args, "authorization-mode", authorizationModes(requested, warn));
  }
  return args;
}

/**
 * kubeadm's getAuthzModes: the user's modes with unknown ones dropped (and warned about);
 * Node,RBAC when none is left.
 */
export function authorizationModes(requested: string, warn?: (message: string) => void): string {
  if (requested.length > 0) {
    const modes: string[] = [];
    for (const mode of requested.split(",")) {
      if (AUTHZ_MODES.includes(mode)) modes.push(mode);
      else warn?.(`ignoring unknown kube-apiserver authorization-mode "${mode}"`);
    }
    if (modes.length > 0) {
      const chosen = modes.join(",");
      if (chosen !== DEFAULT_AUTHZ_MODES.join(",")) {
        warn?.(
          `the default kube-apiserver authorization-mode is "${DEFAULT_AUTHZ_MODES.join(",")}"; using "${chosen}"`,
        );
      }
      return chosen;
    }
  }
  return DEFAULT_AUTHZ_MODES.join(",");
}

/** kubeadm: manifests.go getControllerManagerCommand. */
function controllerManagerArgs(cfg: InitConfig, externalCA: boolean): Arg[] {
  const cluster = cfg.cluster;
  const kubeconfig = posix.join(KUBERNETES_DIR, CONTROLLER_MANAGER_KUBECONFIG);
  const caFile = pki(cfg, "ca.crt");
  let args: Arg[] = [
    { name: "bind-address", value: "127.0.0.1" },
    { name: "leader-elect", value: "true" },
    { name: "kubeconfig", value: kubeconfig },
    { name: "authentication-kubeconfig", value: kubeconfig },
    { name: "authorization-kubeconfig", value: kubeconfig },
    { name: "client-ca-file", value: caFile },
    { name: "requestheader-client-ca-file", value: pki(cfg, "front-proxy-ca.crt") },
    { name: "root-ca-file", value: caFile },
    { name: "service-account-private-key-file", value: pki(cfg, "sa.key") },
    { name: "cluster-signing-cert-file", value: caFile },
    { name: "cluster-signing-key-file", value: pki(cfg, "ca.key") },
    { name: "use-service-account-credentials", value: "true" },
    { name: "controllers", value: "*,bootstrapsigner,tokencleaner" },
  ];
  // With an external CA there is no ca.key: empty paths keep the csrsigning controller off.
  if (externalCA) {
    args = setArg(args, "cluster-signing-key-file", "");
    args = setArg(args, "cluster-signing-cert-file", "");
  }
  // The controller-manager allocates node CIDRs only when a pod network was given.
  const podSubnet = cluster.networking.podSubnet;
  if (podSubnet) {
    args = setArg(args, "allocate-node-cidrs", "true");
    args = setArg(args, "cluster-cidr", podSubnet);
    if (cluster.networking.serviceSubnet) {
      args = setArg(args, "service-cluster-ip-range", cluster.networking.serviceSubnet);
    }
  }
  if (cluster.clusterName) args = setArg(args, "cluster-name", cluster.clusterName);
  return args;
}

/** kubeadm: manifests.go getSchedulerCommand. */
function schedulerArgs(): Arg[] {
  const kubeconfig = posix.join(KUBERNETES_DIR, SCHEDULER_KUBECONFIG);
  return [
    { name: "bind-address", value: "127.0.0.1" },
    { name: "leader-elect", value: "true" },
    { name: "kubeconfig", value: kubeconfig },
    { name: "authentication-kubeconfig", value: kubeconfig },
    { name: "authorization-kubeconfig", value: kubeconfig },
  ];
}

interface ComponentMounts {
  volumes: HostPathVolume[];
  volumeMounts: VolumeMount[];
}

/**
 * kubeadm's controlPlaneHostPathMounts: per component, volumes and mounts keyed by name, so a
 * later mount (the user's extraVolumes come last) replaces an earlier one of the same name.
 */
class HostPathMounts {
  private readonly volumes = new Map<string, Map<string, HostPathVolume>>();
  private readonly mounts = new Map<string, Map<string, VolumeMount>>();

  add(
    component: ControlPlaneComponent,
    name: string,
    hostPath: string,
    mountPath: string,
    readOnly: boolean,
    type: HostPathType,
  ): void {
    entry(this.volumes, component).set(name, { name, hostPath: { path: hostPath, type } });
    const mount: VolumeMount = { name, mountPath };
    if (readOnly) mount.readOnly = true;
    entry(this.mounts, component).set(name, mount);
  }

  get(component: ControlPlaneComponent): ComponentMounts {
    return {
      volumes: sortByName([...(this.volumes.get(component)?.values() ?? [])]),
      volumeMounts: sortByName([...(this.mounts.get(component)?.values() ?? [])]),
    };
  }
}

function entry<V>(map: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let inner = map.get(key);
  if (!inner) map.set(key, (inner = new Map<string, V>()));
  return inner;
}

/** kubeadm: volumes.go getHostPathVolumesForTheControlPlane. */
function controlPlaneHostPaths(
  cfg: InitConfig,
  existingHostPaths: ReadonlySet<string>,
): HostPathMounts {
  const cluster = cfg.cluster;
  const certsDir = cluster.certificatesDir;
  const m = new HostPathMounts();
  const dirOrCreate: HostPathType = "DirectoryOrCreate";

  m.add("kube-apiserver", "k8s-certs", certsDir, certsDir, true, dirOrCreate);
  m.add("kube-apiserver", "ca-certs", CA_CERTS_DIR, CA_CERTS_DIR, true, dirOrCreate);
  if (cluster.etcd.external) {
    etcdCertDirs(cluster.etcd.external, certsDir).forEach((dir, i) =>
      m.add("kube-apiserver", `etcd-certs-${i}`, dir, dir, true, dirOrCreate),
    );
  }

  m.add("kube-controller-manager", "k8s-certs", certsDir, certsDir, true, dirOrCreate);
  m.add("kube-controller-manager", "ca-certs", CA_CERTS_DIR, CA_CERTS_DIR, true, dirOrCreate);
  const kcmConf = posix.join(KUBERNETES_DIR, CONTROLLER_MANAGER_KUBECONFIG);
  m.add("kube-controller-manager", "kubeconfig", kcmConf, kcmConf, true, "FileOrCreate");
  // Third-party storage plugins talk to the controller-manager through sockets here: read-write.
  const flexDir =
    lastArgValue(cluster.controllerManager.extraArgs, "flex-volume-plugin-dir") ??
    DEFAULT_FLEXVOLUME_DIR;
  m.add("kube-controller-manager", "flexvolume-dir", flexDir, flexDir, false, dirOrCreate);

  const schedulerConf = posix.join(KUBERNETES_DIR, SCHEDULER_KUBECONFIG);
  m.add("kube-scheduler", "kubeconfig", schedulerConf, schedulerConf, true, "FileOrCreate");

  // /etc/ssl/certs may hold symlinks into these directories on some distributions.
  for (const dir of CA_TRUST_DIRS) {
    if (!existingHostPaths.has(dir)) continue;
    const name = dir.replace(/\//g, "-").slice(1);
    m.add("kube-apiserver", name, dir, dir, true, dirOrCreate);
    m.add("kube-controller-manager", name, dir, dir, true, dirOrCreate);
  }

  addExtraVolumes(m, "kube-apiserver", cluster.apiServer.extraVolumes);
  addExtraVolumes(m, "kube-controller-manager", cluster.controllerManager.extraVolumes);
  addExtraVolumes(m, "kube-scheduler", cluster.scheduler.extraVolumes);
  return m;
}

function addExtraVolumes(
  m: HostPathMounts,
  component: ControlPlaneComponent,
  extra: readonly HostPathMount[],
): void {
  for (const v of extra) {
    m.add(component, v.name, v.hostPath, v.mountPath, v.readOnly ?? false, v.pathType ?? "");
  }
}

/**
 * kubeadm: volumes.go getEtcdCertVolumes. The directories of the external etcd CA, cert and key,
 * minus those already mounted (/etc/ssl/certs, the CA trust dirs, the certificates dir) and
 * minus those inside another one; sorted, as Go's sets.List returns them.
 */
export function etcdCertDirs(etcd: ExternalEtcd, certificatesDir: string): string[] {
  const dirs = new Set<string>();
  for (const file of [etcd.caFile ?? "", etcd.certFile ?? "", etcd.keyFile ?? ""]) {
    const dir = goDir(file);
    // String prefixes, not path prefixes, exactly as kubeadm compares them.
    if (
      dir === "." ||
      CA_TRUST_DIRS.some((p) => dir.startsWith(p)) ||
      dir.startsWith(CA_CERTS_DIR) ||
      dir.startsWith(certificatesDir)
    ) {
      continue;
    }
    let covered = false;
    for (const existing of [...dirs].sort(compareBytes)) {
      if (existing.startsWith(dir)) dirs.delete(existing);
      else if (dir.startsWith(existing)) covered = true;
    }
    if (!covered) dirs.add(dir);
  }
  return [...dirs].sort(compareBytes);
}

/** Go's filepath.Dir: everything before the last slash, cleaned ("." when there is none). */
function goDir(path: string): string {
  const dir = path.slice(0, path.lastIndexOf("/") + 1);
  if (dir === "") return ".";
  const clean = posix.normalize(dir);
  return clean.length > 1 ? clean.replace(/\/+$/, "") : clean;
}
