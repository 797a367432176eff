import { parseGoDurationNanos } from "../config/duration.js";
import type { Release } from "../config/release.js";
import type { Arg, EnvVar, HostPathType } from "../config/types.js";
import { toYAML } from "../config/yaml.js";

// The Pod shape kubeadm gives every control-plane static Pod, and the helpers that fill it.
// kubeadm: util/staticpod/utils.go (ComponentPod, probes), util/arguments.go
// (ArgumentsToCommand), util/env.go (GetProxyEnvVars, MergeKubeadmEnvVars).

/** kubeadm constants.ProbePort: the named container port probes use from v1.34. */
export const PROBE_PORT_NAME = "probe-port";
/** The priority of the system-node-critical PriorityClass (util/staticpod/utils.go). */
export const SYSTEM_NODE_CRITICAL_PRIORITY = 2000001000;

export interface HostPathVolume {
  name: string;
  hostPath: { path: string; type: HostPathType };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  /** Omitted when false, as Go's omitempty does. */
  readOnly?: true;
}

export interface ContainerPort {
  name: string;
  containerPort: number;
  protocol: "TCP";
}

export type URIScheme = "HTTP" | "HTTPS";

export interface HTTPGetProbe {
  httpGet: { host?: string; path: string; port: number | string; scheme: URIScheme };
  /** Omitted when 0, as core/v1 Probe's `omitempty` field (kubeadm's readiness probes). */
  initialDelaySeconds?: number;
  timeoutSeconds: number;
  periodSeconds: number;
  failureThreshold: number;
}

export interface PodEnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy: "IfNotPresent";
  command: string[];
  env?: PodEnvVar[];
  ports?: ContainerPort[];
  livenessProbe: HTTPGetProbe;
  readinessProbe?: HTTPGetProbe;
  startupProbe: HTTPGetProbe;
  resources: { requests: Record<string, string> };
  volumeMounts: VolumeMount[];
}

export interface Pod {
  apiVersion: "v1";
  kind: "Pod";
  metadata: {
    name: string;
    namespace: "kube-system";
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    /** Present (as null) only where the release's kubeadm marshals it. */
    creationTimestamp?: null;
  };
  spec: {
    containers: Container[];
    hostNetwork: true;
    priority: number;
    priorityClassName: "system-node-critical";
    securityContext: { seccompProfile: { type: "RuntimeDefault" } };
    volumes: HostPathVolume[];
  };
  status: Record<string, never>;
}

/** How a release's kubeadm shapes static Pods. */
export interface PodStyle {
  /** Probes use the named port "probe-port" and the container declares it (v1.34+). */
  namedProbePort: boolean;
  /** controlPlaneComponentHealthCheck in seconds: the startup probe's failure budget. */
  startupTimeoutSeconds: number;
  /** kubeadm ≤1.33 marshals `creationTimestamp: null`; k8s PR 130989 dropped it in 1.34. */
  nullCreationTimestamp: boolean;
}

/** The pod style for a release and a defaulted `InitConfiguration.timeouts`. */
export function podStyle(
  release: Release,
  timeouts: { controlPlaneComponentHealthCheck: string },
): PodStyle {
  return {
    namedProbePort: release.behaviour.probeNamedPort,
    startupTimeoutSeconds:
      Number(
        parseGoDurationNanos(
          timeouts.controlPlaneComponentHealthCheck,
          "timeouts.controlPlaneComponentHealthCheck",
        ),
      ) / 1e9,
    nullCreationTimestamp: release.behaviour.nullCreationTimestamp,
  };
}

/** Where and how a component is probed. */
export interface ProbeEndpoint {
  /** "" leaves the host out (the kubelet then probes the Pod IP). */
  host: string;
  port: number;
  scheme: URIScheme;
  livenessPath: string;
  /** kube-controller-manager has no readiness probe. */
  readinessPath?: string;
  startupPath: string;
}

export interface ComponentSpec {
  name: string;
  image: string;
  command: string[];
  volumes: HostPathVolume[];
  /** Kept in the order given: kubeadm sorts control-plane mounts by name but not etcd's. */
  volumeMounts: VolumeMount[];
  env: PodEnvVar[];
  requests: Record<string, string>;
  probe: ProbeEndpoint;
  annotations?: Record<string, string>;
}

/** kubeadm's ComponentPod with the container kubeadm builds for each component. */
export function componentPod(spec: ComponentSpec, style: PodStyle): Pod {
  const port: number | string = style.namedProbePort ? PROBE_PORT_NAME : spec.probe.port;
  const probe = (path: string, timing: ProbeTiming): HTTPGetProbe =>
    httpProbe(spec.probe.host, path, port, spec.probe.scheme, timing);
  const container: Container = {
    name: spec.name,
    image: spec.image,
    imagePullPolicy: "IfNotPresent",
    command: spec.command,
    livenessProbe: probe(spec.probe.livenessPath, LIVENESS),
    startupProbe: probe(spec.probe.startupPath, startupTiming(style.startupTimeoutSeconds)),
    resources: { requests: { ...spec.requests } },
    volumeMounts: spec.volumeMounts,
  };
  if (spec.probe.readinessPath !== undefined) {
    container.readinessProbe = probe(spec.probe.readinessPath, READINESS);
  }
  if (spec.env.length > 0) container.env = spec.env;
  if (style.namedProbePort) {
    container.ports = [{ name: PROBE_PORT_NAME, containerPort: spec.probe.port, protocol: "TCP" }];
  }
  const metadata: Pod["metadata"] = {
    name: spec.name,
    namespace: "kube-system",
    // kubeadm: the component and tier labels identify control-plane Pods in kube-system.
    labels: { component: spec.name, tier: "control-plane" },
  };
  if (spec.annotations && Object.keys(spec.annotations).length > 0) {
    metadata.annotations = { ...spec.annotations };
  }
  if (style.nullCreationTimestamp) metadata.creationTimestamp = null;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata,
    spec: {
      containers: [container],
      hostNetwork: true,
      priority: SYSTEM_NODE_CRITICAL_PRIORITY,
      priorityClassName: "system-node-critical",
      securityContext: { seccompProfile: { type: "RuntimeDefault" } },
      volumes: sortByName(spec.volumes),
    },
    status: {},
  };
}

/** The manifest text kubeadm writes: Go-like YAML that Kubernetes reads back as the same Pod. */
export function renderStaticPod(pod: object): string {
  return toYAML(pod);
}

/** The container command of a static Pod (for example to start the real etcd with its flags). */
export function podCommand(pod: Pod): string[] {
  const container = pod.spec.containers[0];
  if (!container) throw new Error(`static Pod "${pod.metadata.name}" has no container`);
  return [...container.command];
}

interface ProbeTiming {
  initialDelaySeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
  periodSeconds: number;
}

// kubeadm: util/staticpod/utils.go LivenessProbe / ReadinessProbe / StartupProbe.
const LIVENESS: ProbeTiming = {
  initialDelaySeconds: 10,
  timeoutSeconds: 15,
  failureThreshold: 8,
  periodSeconds: 10,
};
const READINESS: ProbeTiming = {
  initialDelaySeconds: 0,
  timeoutSeconds: 15,
  failureThreshold: 3,
  periodSeconds: 1,
};

function startupTiming(timeoutSeconds: number): ProbeTiming {
  const periodSeconds = 10;
  // kubeadm: enough failures to cover the whole control-plane health-check timeout.
  return {
    initialDelaySeconds: periodSeconds,
    timeoutSeconds: 15,
    failureThreshold: Math.ceil(timeoutSeconds / periodSeconds),
    periodSeconds,
  };
}

function httpProbe(
  host: string,
  path: string,
  port: number | string,
  scheme: URIScheme,
  timing: ProbeTiming,
): HTTPGetProbe {
  const httpGet: HTTPGetProbe["httpGet"] = { path, port, scheme };
  if (host !== "") httpGet.host = host; // Go omits the empty host
  const { initialDelaySeconds, ...rest } = timing;
  // ReadinessProbe's 0 delay: `initialDelaySeconds,omitempty` leaves it out of the manifest.
  return initialDelaySeconds === 0
    ? { httpGet, ...rest }
    : { httpGet, initialDelaySeconds, ...rest };
}

/**
 * kubeadm's getProbeAddress: an unspecified bind address cannot be probed, so the host is left
 * empty and the kubelet probes the Pod IP (kubernetes/kubernetes#86504).
 */
export function probeAddress(address: string): string {
  return address === "0.0.0.0" || address === "::" ? "" : address;
}

/** The value of the last occurrence of a flag in an argument list (kubeadm's GetArgValue). */
export function lastArgValue(args: readonly Arg[] | undefined, name: string): string | undefined {
  if (!args) return undefined;
  for (let i = args.length - 1; i >= 0; i--) {
    const arg = args[i]!;
    if (arg.name === name) return arg.value;
  }
  return undefined;
}

/** Replaces every default of that name with one value, or appends it (kubeadm's SetArgValues). */
export function setArg(args: Arg[], name: string, value: string): Arg[] {
  const kept = args.filter((a) => a.name !== name);
  return [...kept, { name, value }];
}

/**
 * kubeadm's ArgumentsToCommand, rendered as `--name=value`: a flag named in `overrides` drops
 * every default of that name; the same flag may appear several times (v1beta4 extraArgs is a
 * list). Before kubernetes/kubernetes#135400 every flag is sorted by name, then value; after it
 * (`keepOverrideOrder`, see extraArgsKeepOrder) the defaults are sorted and the overrides
 * follow them in the user's order, so the first --service-account-issuer stays the one that
 * signs tokens.
 */
export function argumentsToCommand(
  base: readonly Arg[],
  overrides: readonly Arg[],
  keepOverrideOrder = false,
): string[] {
  const byNameThenValue = (a: Arg, b: Arg) =>
    compareBytes(a.name, b.name) || compareBytes(a.value, b.value);
  const overridden = new Set(overrides.map((a) => a.name));
  const kept = base.filter((a) => !overridden.has(a.name));
  const args = keepOverrideOrder
    ? [...kept.sort(byNameThenValue), ...overrides]
    : [...overrides, ...kept].sort(byNameThenValue);
  return args.map((a) => `--${a.name}=${a.value}`);
}

/** Go's string ordering (bytewise UTF-8), which differs from JS for characters past U+FFFF. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * kubeadm's GetProxyEnvVars over a given environment: every variable whose name ends in
 * "_proxy" (any case) and whose value is not empty.
 */
export function proxyEnvVars(env: Readonly<Record<string, string | undefined>>): EnvVar[] {
  return Object.entries(env)
    .filter(([name, value]) => name.toLowerCase().endsWith("_proxy") && value)
    .map(([name, value]) => ({ name, value: value! }));
}

/**
 * kubeadm's MergeKubeadmEnvVars: later lists win by name. kubeadm collects them in a Go map, so
 * its order is arbitrary; we sort by name, as newer kubeadm releases do, to write stable files.
 */
export function mergeEnvVars(...lists: readonly (readonly EnvVar[])[]): PodEnvVar[] {
  const byName = new Map<string, EnvVar>();
  for (const list of lists) for (const env of list) byName.set(env.name, env);
  return [...byName.values()]
    .sort((a, b) => compareBytes(a.name, b.name))
    .map((env) => {
      const out: PodEnvVar = { name: env.name };
      if (env.value) out.value = env.value; // Go omits the empty value
      if (env.valueFrom) out.valueFrom = env.valueFrom;
      return out;
    });
}

export function sortByName<T extends { name: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => compareBytes(a.name, b.name));
}

/** "image:tag" as kubeadm's GetGenericImage; "+" is not valid in a tag (KubernetesVersionToImageTag). */
export function imageName(repository: string, name: string, tag: string): string {
  return `${repository}/${name}:${tag.replace(/\+/g, "_")}`;
}

/**
 * A control-plane component's or kube-proxy's image, as kubeadm's GetKubernetesImage: from the
 * CI registry for a CI build (GetControlPlaneImageRepository), tagged with the version.
 */
export function kubernetesImage(
  cluster: { imageRepository: string; ciImageRepository?: string; kubernetesVersion: string },
  name: string,
): string {
  return imageName(
    cluster.ciImageRepository || cluster.imageRepository,
    name,
    cluster.kubernetesVersion,
  );
}

/**
 * The Kubernetes version an image tag stands for: the tag with the "_" KubernetesVersionToImageTag
 * wrote for the "+" of a CI build's version ("v1.37.0-alpha.2.34_0123abc" → "…+0123abc").
 */
export function versionOfImageTag(tag: string): string {
  return tag.replace(/_/g, "+");
}
