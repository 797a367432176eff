// Literal Release / InitConfig / InitData for the manifest tests: kubeadm's defaults for one
// IPv4 control plane with local etcd, written out by hand so these tests do not depend on the
// config helper's defaulting. `initConfig(c => ...)` edits a fresh copy.
import type { Release } from "../../../src/config/release.js";
import type { InitConfig } from "../../../src/config/types.js";
import type { InitData } from "../../../src/phases/init/data.js";
import type { KeySource } from "../../../src/pki/key-source.js";
import type { Host } from "../../../src/remote/host.js";

/** v1.33: numeric probe ports, etcd 3.5 (experimental-* flags), CRI socket as a kubelet flag. */
export function release133(): Release {
  return {
    minor: 33,
    knownPatch: "v1.33.0",
    etcdVersion: "3.5.21-0",
    coreDNSVersion: "v1.12.0",
    pauseVersion: "3.10",
    featureGates: { NodeLocalCRISocket: false, WaitForAllControlPlaneComponents: true },
    behaviour: {
      probeNamedPort: false,
      apiserverKubeletClientOrganization: "kubeadm:cluster-admins",
      podInfraContainerImageFlag: true,
      kubeletFinalizeSubphase: "enable-client-cert-rotation",
    },
  };
}

/** v1.35: named probe ports, etcd 3.6 (feature-gate flags), NodeLocalCRISocket on. */
export function release135(): Release {
  return {
    minor: 35,
    knownPatch: "v1.35.0",
    etcdVersion: "3.6.6-0",
    coreDNSVersion: "v1.13.1",
    pauseVersion: "3.10.1",
    featureGates: { NodeLocalCRISocket: true, WaitForAllControlPlaneComponents: true },
    behaviour: {
      probeNamedPort: true,
      apiserverKubeletClientOrganization: "kubeadm:cluster-admins",
      podInfraContainerImageFlag: false,
      kubeletFinalizeSubphase: "enable-client-cert-rotation",
    },
  };
}

export function initConfig(edit?: (cfg: InitConfig) => void): InitConfig {
  const cfg: InitConfig = {
    init: {
      bootstrapTokens: [],
      nodeRegistration: {
        name: "cp-1",
        criSocket: "unix:///var/run/containerd/containerd.sock",
        taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
        kubeletExtraArgs: [],
        ignorePreflightErrors: [],
        imagePullPolicy: "IfNotPresent",
        imagePullSerial: true,
      },
      localAPIEndpoint: { advertiseAddress: "10.0.0.4", bindPort: 6443 },
      skipPhases: [],
      timeouts: {
        controlPlaneComponentHealthCheck: "4m0s",
        kubeletHealthCheck: "4m0s",
        kubernetesAPICall: "1m0s",
        etcdAPICall: "2m0s",
        tlsBootstrap: "5m0s",
        discovery: "5m0s",
        upgradeManifests: "5m0s",
      },
    },
    cluster: {
      etcd: { local: { dataDir: "/var/lib/etcd" } },
      networking: { serviceSubnet: "10.96.0.0/12", dnsDomain: "cluster.local" },
      kubernetesVersion: "v1.35.0",
      apiServer: { extraArgs: [], extraVolumes: [], extraEnvs: [], certSANs: [] },
      controllerManager: { extraArgs: [], extraVolumes: [], extraEnvs: [] },
      scheduler: { extraArgs: [], extraVolumes: [], extraEnvs: [] },
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
    kubelet: {
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: "/etc/kubernetes/pki/ca.crt" },
      },
      authorization: { mode: "Webhook" },
      cgroupDriver: "systemd",
      clusterDNS: ["10.96.0.10"],
      clusterDomain: "cluster.local",
      healthzBindAddress: "127.0.0.1",
      healthzPort: 10248,
      rotateCertificates: true,
      staticPodPath: "/etc/kubernetes/manifests",
    },
    kubeProxy: {
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
    },
    kubeletUserSupplied: false,
    kubeProxyUserSupplied: false,
  };
  edit?.(cfg);
  return cfg;
}

export function initData(
  host: Host,
  cfg: InitConfig,
  release: Release,
  extra: Partial<Pick<InitData, "patchesDir" | "proxyEnv" | "dryRun">> = {},
): InitData {
  return {
    cfg,
    release,
    host,
    dryRun: extra.dryRun ?? false,
    patchesDir: extra.patchesDir,
    ignorePreflightErrors: new Set(),
    uploadCerts: false,
    certificateKey: undefined,
    skipTokenPrint: false,
    skipCertificateKeyPrint: false,
    proxyEnv: extra.proxyEnv ?? {},
    keys: undefined as unknown as KeySource, // these phases generate no keys
    now: () => new Date("2026-01-01T00:00:00Z"),
  };
}

/** Collects what a phase logs, as the Runner would show it. */
export function recordingLog(): {
  lines: string[];
  warnings: string[];
  log: { info(m: string): void; warn(m: string): void };
} {
  const lines: string[] = [];
  const warnings: string[] = [];
  return {
    lines,
    warnings,
    log: { info: (m) => lines.push(m), warn: (m) => warnings.push(m) },
  };
}
