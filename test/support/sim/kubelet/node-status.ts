import { statfsSync } from "node:fs";
import { arch, cpus, networkInterfaces, release, totalmem } from "node:os";
import { readdir } from "node:fs/promises";
import type { HostFiles } from "./host-files.js";
import type { Taint } from "./kubelet-config.js";

// SIMULATION (test double). The Node object the kubelet registers and keeps current
// (pkg/kubelet/kubelet_node_status.go initialNode / setNodeStatus, pkg/kubelet/nodestatus).

export interface NodeIdentity {
  nodeName: string;
  hostname: string;
  nodeIPs: string[];
  labels: Record<string, string>;
  taints: Taint[];
  kubeletPort: number;
  maxPods: number;
  kubeletVersion: string;
  /** Ready regardless of the CNI configuration (for tests that need Ready nodes). */
  assumeNetworkReady: boolean;
}

/** Go's GOARCH for Node's process.arch. */
export function goArch(a = arch()): string {
  return (
    (
      {
        x64: "amd64",
        ia32: "386",
        arm64: "arm64",
        arm: "arm",
        ppc64: "ppc64le",
        s390x: "s390x",
      } as Record<string, string>
    )[a] ?? a
  );
}

/**
 * The node's address when --node-ip is not given. The kubelet resolves its host name, else
 * takes the default route's interface address (pkg/kubelet/nodestatus NodeAddress,
 * k8s.io/apimachinery/pkg/util/net ResolveBindAddress). Here: the first non-loopback IPv4 of
 * this network namespace, else the first IPv4 at all (a test namespace may have its address on
 * lo), else 127.0.0.1.
 */
export function defaultNodeIP(): string {
  const all = Object.values(networkInterfaces()).flatMap((l) => l ?? []);
  const v4 = all.filter((a) => a.family === "IPv4");
  return (
    v4.find((a) => !a.internal)?.address ??
    v4.find((a) => !a.address.startsWith("127."))?.address ??
    "127.0.0.1"
  );
}

/**
 * containerd's CRI reports NetworkReady=false until a CNI configuration exists in its conf dir
 * (/etc/cni/net.d by default), and the kubelet then reports the node NotReady: the state of
 * every fresh kubeadm node before a network add-on is installed.
 */
export async function cniConfigured(files: HostFiles): Promise<boolean> {
  try {
    return (await readdir(files.real("/etc/cni/net.d"))).some((n) =>
      /\.(conf|conflist|json)$/.test(n),
    );
  } catch {
    return false;
  }
}

async function firstLine(files: HostFiles, path: string, realFallback = true): Promise<string> {
  const own = await files.readText(path);
  if (own !== undefined) return own.trim();
  if (!realFallback) return "";
  const real = await import("node:fs/promises")
    .then((fs) => fs.readFile(path, "utf8"))
    .catch(() => "");
  return real.trim();
}

async function osImage(files: HostFiles): Promise<string> {
  const text = await firstLine(files, "/etc/os-release");
  const m = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(text);
  return m?.[1] ?? "Linux";
}

/** Status fields that do not change while the kubelet runs. */
export async function staticNodeStatus(files: HostFiles, id: NodeIdentity) {
  const memKi = Math.floor(totalmem() / 1024);
  let storageKi = 0;
  try {
    const fs = statfsSync(files.rootfs || "/");
    storageKi = Math.floor((fs.blocks * fs.bsize) / 1024);
  } catch {
    /* unknown */
  }
  const capacity = {
    cpu: String(cpus().length),
    "ephemeral-storage": `${storageKi}Ki`,
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    memory: `${memKi}Ki`,
    pods: String(id.maxPods),
  };
  // Node allocatable = capacity − eviction thresholds (evictionHard defaults memory.available
  // 100Mi, nodefs.available 10%; pkg/kubelet/cm GetNodeAllocatableAbsolute).
  const allocatable = {
    ...capacity,
    "ephemeral-storage": String(Math.floor(storageKi * 1024 * 0.9)),
    memory: `${memKi - 100 * 1024}Ki`,
  };
  const addresses = [
    ...id.nodeIPs.map((address) => ({ type: "InternalIP", address })),
    { type: "Hostname", address: id.hostname },
  ];
  return {
    addresses,
    allocatable,
    capacity,
    daemonEndpoints: { kubeletEndpoint: { Port: id.kubeletPort } },
    nodeInfo: {
      architecture: goArch(),
      bootID: await firstLine(files, "/proc/sys/kernel/random/boot_id"),
      // SIMULATION: no container runtime image store; named so nobody mistakes it for one.
      containerRuntimeVersion: "kubeforge-simulation://0.1.0",
      kernelVersion: release(),
      kubeProxyVersion: "",
      kubeletVersion: id.kubeletVersion,
      machineID: await firstLine(files, "/etc/machine-id"),
      operatingSystem: "linux",
      osImage: await osImage(files),
      systemUUID: await firstLine(files, "/sys/class/dmi/id/product_uuid").catch(() => ""),
    },
  };
}

/** The node conditions (pkg/kubelet/nodestatus: MemoryPressure, DiskPressure, PIDPressure, Ready). */
export function nodeConditions(networkReady: boolean, since: string, heartbeat: string) {
  const c = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: since,
  });
  return [
    c(
      "MemoryPressure",
      "False",
      "KubeletHasSufficientMemory",
      "kubelet has sufficient memory available",
    ),
    c("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    c("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    networkReady
      ? c("Ready", "True", "KubeletReady", "kubelet is posting ready status")
      : c(
          "Ready",
          "False",
          "KubeletNotReady",
          "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
        ),
  ];
}

/**
 * initialNode: labels kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and their
 * beta.kubernetes.io/ forms, then --node-labels (which may override them); taints from
 * --register-with-taints; the controller-managed attach/detach annotation (enabled by default);
 * and a first status. A Node may be created with its status (the Node strategy keeps status on
 * create).
 */
export function initialNode(id: NodeIdentity, status: Record<string, unknown>) {
  const labels: Record<string, string> = {
    "beta.kubernetes.io/arch": goArch(),
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": goArch(),
    "kubernetes.io/hostname": id.hostname,
    "kubernetes.io/os": "linux",
    ...id.labels,
  };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: id.nodeName,
      labels,
      annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
    },
    spec: id.taints.length > 0 ? { taints: id.taints } : {},
    status,
  };
}

/** updateDefaultLabels: the labels a re-registering kubelet puts back on an existing Node. */
export const DEFAULT_LABEL_KEYS = [
  "kubernetes.io/hostname",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/instance-type",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
];
