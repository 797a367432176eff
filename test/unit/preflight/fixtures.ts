// Literal InitConfig / Release / InitData for the preflight tests: kubeadm's defaults for a
// single IPv4 control plane with local etcd, written out by hand so these tests do not depend
// on the config helper's defaulting.
import type { Release } from "../../../src/config/release.js";
import type { InitConfig } from "../../../src/config/types.js";
import type { InitData } from "../../../src/phases/init/data.js";
import type { KeySource } from "../../../src/pki/key-source.js";
import type { Host } from "../../../src/remote/host.js";

export function release(minor = 35): Release {
  return {
    minor,
    knownPatch: `v1.${minor}.0`,
    etcdVersion: "3.6.6-0",
    coreDNSVersion: "v1.13.1",
    pauseVersion: "3.10.1",
    featureGates: {},
    behaviour: {
      probeNamedPort: true,
      apiserverKubeletClientOrganization: "kubeadm:cluster-admins",
      podInfraContainerImageFlag: false,
      kubeletFinalizeSubphase: "enable-client-cert-rotation",
    },
  };
}

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
  const noTimeouts = {
    controlPlaneComponentHealthCheck: "4m0s",
    kubeletHealthCheck: "4m0s",
    kubernetesAPICall: "1m0s",
    etcdAPICall: "2m0s",
    tlsBootstrap: "5m0s",
    discovery: "5m0s",
    upgradeManifests: "5m0s",
  };
  const component = { extraArgs: [], extraVolumes: [], extraEnvs: [] };
  return {
    init: {
      bootstrapTokens: [],
      nodeRegistration: {
        name: o.nodeName ?? "node-1",
        criSocket: o.criSocket ?? "unix:///var/run/containerd/containerd.sock",
        taints: [],
        kubeletExtraArgs: [],
        ignorePreflightErrors: [],
        imagePullPolicy: "IfNotPresent",
        imagePullSerial: true,
      },
      localAPIEndpoint: {
        advertiseAddress: o.advertiseAddress ?? "10.0.0.10",
        bindPort: o.bindPort ?? 6443,
      },
      skipPhases: [],
      timeouts: noTimeouts,
    },
    cluster: {
      etcd: o.externalEtcd
        ? { external: o.externalEtcd }
        : { local: { dataDir: o.etcdDataDir ?? "/var/lib/etcd" } },
      networking: {
        serviceSubnet: o.serviceSubnet ?? "10.96.0.0/12",
        dnsDomain: "cluster.local",
        ...(o.podSubnet === undefined ? {} : { podSubnet: o.podSubnet }),
      },
      kubernetesVersion: o.kubernetesVersion ?? "v1.35.0",
      apiServer: { ...component, certSANs: [] },
      controllerManager: component,
      scheduler: component,
      dns: {},
      proxy: {},
      certificatesDir: "/etc/kubernetes/pki",
      imageRepository: "registry.k8s.io",
      featureGates: {},
      clusterName: "kubernetes",
      encryptionAlgorithm: "RSA-2048",
      certificateValidityPeriod: "8760h0m0s",
      caCertificateValidityPeriod: "87600h0m0s",
    },
    kubelet: { apiVersion: "kubelet.config.k8s.io/v1beta1", kind: "KubeletConfiguration" },
    kubeProxy: { apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration" },
    kubeletUserSupplied: false,
    kubeProxyUserSupplied: false,
  };
}

const noKeys: KeySource = {
  prefetch: () => undefined,
  take: () => Promise.reject(new Error("preflight tests generate no keys")),
  discard: () => undefined,
};

export function initData(
  host: Host,
  opts: {
    cfg?: InitConfig;
    release?: Release;
    ignore?: string[];
    dryRun?: boolean;
    proxyEnv?: Record<string, string>;
  } = {},
): InitData {
  return {
    cfg: opts.cfg ?? initConfig(),
    release: opts.release ?? release(),
    host,
    dryRun: opts.dryRun ?? false,
    patchesDir: undefined,
    ignorePreflightErrors: new Set((opts.ignore ?? []).map((s) => s.toLowerCase())),
    uploadCerts: false,
    certificateKey: undefined,
    skipTokenPrint: false,
    skipCertificateKeyPrint: false,
    proxyEnv: opts.proxyEnv ?? {},
    keys: noKeys,
    now: () => new Date(),
  };
}

/** Collects what the runner prints. */
export function captureOutput(): {
  info: (l: string) => void;
  warn: (l: string) => void;
  lines: string[];
  warnings: string[];
} {
  const lines: string[] = [];
  const warnings: string[] = [];
  return {
    lines,
    warnings,
    info: (l) => void lines.push(l),
    warn: (l) => {
      lines.push(l);
      warnings.push(l);
    },
  };
}
