import type { NodeRole } from "../cluster/types.js";
import { LABELS, volumeName } from "./network-plan.js";

// The Engine API body that creates a node container (pure), as a node needs it and kind learned
// it: systemd as PID 1 (stopped with SIGRTMIN+3, its "halt" signal, systemd(1)); privileged
// where the engine allows it, else every capability the engine grants with seccomp and AppArmor
// unconfined and /proc/sys writable (sysctls); /var on a volume of its own, since containerd's
// overlayfs snapshots cannot live on the container's own overlay root; /lib/modules read-only
// (modprobe); tmpfs on /run and /tmp as systemd expects; a cgroup namespace of its own; one
// static address on the cluster's network, every node's name in /etc/hosts; a control plane's
// API server port published on the runner's loopback.

/** The container's command: fixes what a node needs before systemd starts (see below). */
export const NODE_ENTRYPOINT_SCRIPT = [
  "set -e",
  // Docker mounts cgroups read-only in a container that is not privileged (cgroup v1: one
  // mount per controller; v2: one cgroup2 mount); systemd and the kubelet write them. A bind
  // remount changes only this mount's read-only flag, never the host's hierarchy.
  "if [ -f /sys/fs/cgroup/cgroup.controllers ]; then",
  "  mount -o remount,bind,rw /sys/fs/cgroup",
  "else",
  '  for d in /sys/fs/cgroup/*/; do if mountpoint -q "$d"; then mount -o remount,bind,rw "$d"; fi; done',
  "fi",
  // The kubelet needs shared mount propagation for its volumes; a container's / is private.
  "mount --make-rshared /",
  "if [ -x /sbin/init ]; then exec /sbin/init; else exec /lib/systemd/systemd; fi",
].join("\n");

export interface NodeContainerInput {
  cluster: string;
  node: { name: string; role: NodeRole };
  image: string;
  network: string;
  address: string;
  /** Every node of the cluster on the network: written to /etc/hosts. */
  hosts: readonly { name: string; address: string }[];
  /** Privileged, or every capability but `capDrop` with the confinements lifted. */
  privileged: boolean;
  /** Capabilities the engine cannot grant (not privileged only), e.g. ["SYS_RESOURCE"]. */
  capDrop?: readonly string[];
  /** Mount the engine host's /lib/modules read-only (it has one). */
  libModules: boolean;
  /** Control planes: the API server port, published on the runner's 127.0.0.1 (random port). */
  apiServerPort?: number;
}

export function nodeLabels(cluster: string, node: { name: string; role?: NodeRole }) {
  return {
    [LABELS.cluster]: cluster,
    [LABELS.node]: node.name,
    ...(node.role ? { [LABELS.role]: node.role } : {}),
  };
}

/** POST /containers/create's body for a node. */
export function nodeContainerBody(i: NodeContainerInput): Record<string, unknown> {
  const apiPort = i.apiServerPort !== undefined ? `${i.apiServerPort}/tcp` : undefined;
  const security = i.privileged
    ? { Privileged: true }
    : {
        CapAdd: ["ALL"],
        CapDrop: [...(i.capDrop ?? [])],
        SecurityOpt: ["seccomp=unconfined", "apparmor=unconfined"],
        // The CLI's --security-opt systempaths=unconfined: /proc/sys writable (sysctls).
        MaskedPaths: [],
        ReadonlyPaths: [],
      };
  return {
    Hostname: i.node.name,
    Image: i.image,
    Entrypoint: ["/bin/sh", "-c", NODE_ENTRYPOINT_SCRIPT, "kubeforge-node-entrypoint"],
    Cmd: [],
    // systemd's container interface: it knows it runs in a container.
    Env: ["container=docker"],
    StopSignal: "SIGRTMIN+3",
    Labels: nodeLabels(i.cluster, i.node),
    ...(apiPort ? { ExposedPorts: { [apiPort]: {} } } : {}),
    HostConfig: {
      ...security,
      CgroupnsMode: "private",
      Tmpfs: { "/run": "rw,nosuid,nodev,exec", "/tmp": "rw,nosuid,nodev,exec" },
      Mounts: [
        { Type: "volume", Source: volumeName(i.cluster, i.node.name), Target: "/var" },
        ...(i.libModules
          ? [{ Type: "bind", Source: "/lib/modules", Target: "/lib/modules", ReadOnly: true }]
          : []),
      ],
      NetworkMode: i.network,
      ExtraHosts: i.hosts.map((h) => `${h.name}:${h.address}`),
      ...(apiPort ? { PortBindings: { [apiPort]: [{ HostIp: "127.0.0.1", HostPort: "" }] } } : {}),
      RestartPolicy: { Name: "no" },
      Init: false,
    },
    NetworkingConfig: {
      EndpointsConfig: {
        [i.network]: { IPAMConfig: { IPv4Address: i.address }, Aliases: [i.node.name] },
      },
    },
  };
}

// Linux capability numbers (include/uapi/linux/capability.h), for the engine's bounding set.
const CAPABILITIES = [
  "CHOWN",
  "DAC_OVERRIDE",
  "DAC_READ_SEARCH",
  "FOWNER",
  "FSETID",
  "KILL",
  "SETGID",
  "SETUID",
  "SETPCAP",
  "LINUX_IMMUTABLE",
  "NET_BIND_SERVICE",
  "NET_BROADCAST",
  "NET_ADMIN",
  "NET_RAW",
  "IPC_LOCK",
  "IPC_OWNER",
  "SYS_MODULE",
  "SYS_RAWIO",
  "SYS_CHROOT",
  "SYS_PTRACE",
  "SYS_PACCT",
  "SYS_ADMIN",
  "SYS_BOOT",
  "SYS_NICE",
  "SYS_RESOURCE",
  "SYS_TIME",
  "SYS_TTY_CONFIG",
  "MKNOD",
  "LEASE",
  "AUDIT_WRITE",
  "AUDIT_CONTROL",
  "SETFCAP",
  "MAC_OVERRIDE",
  "MAC_ADMIN",
  "SYSLOG",
  "WAKE_ALARM",
  "BLOCK_SUSPEND",
  "AUDIT_READ",
  "PERFMON",
  "BPF",
  "CHECKPOINT_RESTORE",
];

/**
 * The capabilities a bounding set lacks (the CapBnd hex mask of /proc/<pid>/status): what a
 * container on that machine cannot be given, so `--privileged`, which asks for all, fails.
 */
export function capabilitiesMissing(capBndHex: string): string[] {
  const mask = BigInt(`0x${capBndHex.trim()}`);
  return CAPABILITIES.filter((_, bit) => ((mask >> BigInt(bit)) & 1n) === 0n);
}
