import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Release } from "../../../src/config/release.js";
import type { InitConfig } from "../../../src/config/types.js";
import type { InitData } from "../../../src/phases/init/data.js";
import type { KeySource } from "../../../src/pki/key-source.js";
import { KeyPool } from "../../../src/pki/keys.js";
import type { Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import type { Logger, PhaseContext } from "../../../src/workflow/phase.js";

// Test fixtures for the pki and kubeconfig areas: a defaulted InitConfig as kubeadm's
// defaults would leave it, a Release row, InitData over a LocalHost rooted in a temp dir,
// and a logger that records lines.

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

export interface InitOverrides {
  advertiseAddress?: string;
  bindPort?: number;
  nodeName?: string;
  serviceSubnet?: string;
  dnsDomain?: string;
  controlPlaneEndpoint?: string;
  certSANs?: string[];
  certificatesDir?: string;
  encryptionAlgorithm?: InitConfig["cluster"]["encryptionAlgorithm"];
  externalEtcd?: boolean;
  etcdServerCertSANs?: string[];
  etcdPeerCertSANs?: string[];
  certificateValidityPeriod?: string;
  caCertificateValidityPeriod?: string;
  clusterName?: string;
}

export function testInitConfig(o: InitOverrides = {}): InitConfig {
  const cfg: InitConfig = {
    init: {
      bootstrapTokens: [],
      nodeRegistration: {
        name: o.nodeName ?? "cp-1",
        criSocket: "unix:///var/run/containerd/containerd.sock",
        taints: [],
        kubeletExtraArgs: [],
        ignorePreflightErrors: [],
        imagePullPolicy: "IfNotPresent",
        imagePullSerial: true,
      },
      localAPIEndpoint: {
        advertiseAddress: o.advertiseAddress ?? "192.168.10.5",
        bindPort: o.bindPort ?? 6443,
      },
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
      etcd: o.externalEtcd
        ? { external: { endpoints: ["https://10.0.0.9:2379"] } }
        : {
            local: {
              dataDir: "/var/lib/etcd",
              serverCertSANs: o.etcdServerCertSANs ?? [],
              peerCertSANs: o.etcdPeerCertSANs ?? [],
            },
          },
      networking: {
        serviceSubnet: o.serviceSubnet ?? "10.96.0.0/12",
        dnsDomain: o.dnsDomain ?? "cluster.local",
      },
      kubernetesVersion: "v1.35.0",
      ...(o.controlPlaneEndpoint !== undefined
        ? { controlPlaneEndpoint: o.controlPlaneEndpoint }
        : {}),
      apiServer: { extraArgs: [], extraVolumes: [], extraEnvs: [], certSANs: o.certSANs ?? [] },
      controllerManager: { extraArgs: [], extraVolumes: [], extraEnvs: [] },
      scheduler: { extraArgs: [], extraVolumes: [], extraEnvs: [] },
      dns: {},
      proxy: {},
      certificatesDir: o.certificatesDir ?? "/etc/kubernetes/pki",
      imageRepository: "registry.k8s.io",
      featureGates: {},
      clusterName: o.clusterName ?? "kubernetes",
      encryptionAlgorithm: o.encryptionAlgorithm ?? "RSA-2048",
      certificateValidityPeriod: o.certificateValidityPeriod ?? "8760h0m0s",
      caCertificateValidityPeriod: o.caCertificateValidityPeriod ?? "87600h0m0s",
    },
    kubelet: { apiVersion: "kubelet.config.k8s.io/v1beta1", kind: "KubeletConfiguration" },
    kubeProxy: { apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration" },
    kubeletUserSupplied: false,
    kubeProxyUserSupplied: false,
  };
  return cfg;
}

export function testRelease(overrides: DeepPartial<Release["behaviour"]> = {}): Release {
  return {
    minor: 35,
    knownPatch: "v1.35.0",
    etcdVersion: "3.6.6-0",
    coreDNSVersion: "v1.13.1",
    pauseVersion: "3.10.1",
    featureGates: {},
    behaviour: {
      probeNamedPort: true,
      apiserverKubeletClientOrganization: "kubeadm:cluster-admins",
      podInfraContainerImageFlag: false,
      kubeletFinalizeSubphase: "enable-client-cert-rotation",
      ...overrides,
    },
  };
}

export interface RecordingLogger extends Logger {
  lines: string[];
  warnings: string[];
}

export function recordingLogger(): RecordingLogger {
  const lines: string[] = [];
  const warnings: string[] = [];
  return { lines, warnings, info: (m) => lines.push(m), warn: (m) => warnings.push(m) };
}

export function ctxFor(path: string, log: Logger = recordingLogger()): PhaseContext {
  return { path, log };
}

export function testInitData(
  cfg: InitConfig,
  host: Host,
  opts: { now?: Date; keys?: KeySource; release?: Release } = {},
): InitData {
  const now = opts.now ?? new Date();
  return {
    cfg,
    release: opts.release ?? testRelease(),
    host,
    dryRun: false,
    patchesDir: undefined,
    ignorePreflightErrors: new Set(),
    uploadCerts: false,
    certificateKey: undefined,
    skipTokenPrint: false,
    skipCertificateKeyPrint: false,
    proxyEnv: {},
    keys: opts.keys ?? new KeyPool(),
    now: () => now,
  };
}

/** A LocalHost rooted in a fresh temp dir, and a cleanup function. */
export async function tempRootHost(): Promise<{
  host: LocalHost;
  root: string;
  cleanup: () => Promise<void>;
}> {
  const root = await mkdtemp(join(tmpdir(), "kubeforge-pki-"));
  return {
    host: new LocalHost({ rootfs: root }),
    root,
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}
