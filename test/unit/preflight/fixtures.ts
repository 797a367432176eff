import type { InitConfig } from "../../../src/config/types.js";
import { baseInitConfig } from "../../support/init-fixtures.js";

// The preflight tests' configuration: the shared defaulted one for node "node-1" at
// 10.0.0.10, with the fields these tests vary set after defaulting.

export interface ConfigOverrides {
  nodeName?: string;
  advertiseAddress?: string;
  bindPort?: number;
  serviceSubnet?: string;
  podSubnet?: string;
  kubernetesVersion?: string;
  criSocket?: string;
  etcdDataDir?: string;
  externalEtcd?: { endpoints: string[]; caFile?: string; certFile?: string; keyFile?: string };
}

export function initConfig(o: ConfigOverrides = {}): InitConfig {
  return baseInitConfig({ nodeName: "node-1", advertiseAddress: "10.0.0.10" }, (c) => {
    const nr = c.init.nodeRegistration;
    if (o.nodeName !== undefined) nr.name = o.nodeName;
    if (o.criSocket !== undefined) nr.criSocket = o.criSocket;
    const endpoint = c.init.localAPIEndpoint;
    if (o.advertiseAddress !== undefined) endpoint.advertiseAddress = o.advertiseAddress;
    if (o.bindPort !== undefined) endpoint.bindPort = o.bindPort;
    const cl = c.cluster;
    if (o.serviceSubnet !== undefined) cl.networking.serviceSubnet = o.serviceSubnet;
    if (o.podSubnet !== undefined) cl.networking.podSubnet = o.podSubnet;
    if (o.kubernetesVersion !== undefined) cl.kubernetesVersion = o.kubernetesVersion;
    if (o.etcdDataDir !== undefined) cl.etcd.local!.dataDir = o.etcdDataDir;
    if (o.externalEtcd !== undefined) cl.etcd = { external: o.externalEtcd };
  });
}

/**
 * kubeadm's addCommonChecks on a Linux host without a runtime answering, by name and in order,
 * for a version without the conntrack check (kubeadm adds it only for a parsed version below
 * 1.32: init of v1.32+, and join, which passes "").
 */
export const COMMON_CHECKS = [
  "Swap",
  "FileExisting-ip",
  "FileExisting-iptables",
  "FileExisting-mount",
  "FileExisting-nsenter",
  "FileExisting-ebtables",
  "FileExisting-ethtool",
  "FileExisting-socat",
  "FileExisting-tc",
  "FileExisting-touch",
  "SystemVerification",
  "Hostname",
  "KubeletVersion",
  "Service-Kubelet",
  "Port-10250",
];
