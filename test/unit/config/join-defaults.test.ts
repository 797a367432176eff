import { describe, expect, it } from "vitest";
import {
  DEFAULT_CA_CERT_PATH,
  type JoinDefaultingContext,
  defaultJoinConfig,
  discoveryFilePath,
  joinInitConfig,
  joinNeedsAdvertiseAddress,
} from "../../../src/config/join-defaults.js";
import { validateJoinConfig } from "../../../src/config/join-validate.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import type { ConfigDocuments, JoinConfiguration } from "../../../src/config/types.js";
import { releaseFor } from "../../../src/config/versions.js";

const TOKEN = "abcdef.0123456789abcdef";
const HASH = `sha256:${"7".repeat(64)}`;
const decode = (text: string) => decodeConfigDocuments(text, "join.yaml");
const docsOf = (join: JoinConfiguration): ConfigDocuments => ({ ignoredKinds: [], join });

function ctx(over: Partial<JoinDefaultingContext> = {}) {
  const warnings: string[] = [];
  const c: JoinDefaultingContext = {
    nodeName: " Worker-1.Example.COM",
    advertiseAddress: "192.0.2.21",
    warn: (m) => warnings.push(m),
    ...over,
  };
  return { c, warnings };
}

const tokenDiscovery: JoinConfiguration = {
  discovery: {
    bootstrapToken: { token: TOKEN, apiServerEndpoint: "192.0.2.10:6443", caCertHashes: [HASH] },
  },
};

describe("defaultJoinConfig: kubeadm's v1beta4 defaults and SetJoinDynamicDefaults", () => {
  it("defaults a worker's token-discovery join completely", () => {
    const { c, warnings } = ctx();
    expect(defaultJoinConfig(docsOf(tokenDiscovery), c)).toEqual({
      join: {
        dryRun: false,
        caCertPath: "/etc/kubernetes/pki/ca.crt",
        discovery: {
          bootstrapToken: {
            token: TOKEN,
            apiServerEndpoint: "192.0.2.10:6443",
            caCertHashes: [HASH],
            unsafeSkipCAVerification: false,
          },
          tlsBootstrapToken: TOKEN, // SetDefaults_Discovery
        },
        nodeRegistration: {
          name: "worker-1.example.com", // nodeutil.GetHostname: trimmed, lower-cased
          criSocket: "unix:///var/run/containerd/containerd.sock",
          taints: [], // no control-plane taint for workers
          kubeletExtraArgs: [],
          ignorePreflightErrors: [],
          imagePullPolicy: "IfNotPresent",
          imagePullSerial: true,
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
    });
    expect(warnings).toEqual([]);
  });

  it("defaults a control-plane join: taint, detected address, port 6443", () => {
    const cfg = defaultJoinConfig(
      docsOf({ ...tokenDiscovery, controlPlane: { certificateKey: "f".repeat(64) } }),
      ctx().c,
    );
    expect(cfg.join.controlPlane).toEqual({
      certificateKey: "f".repeat(64),
      localAPIEndpoint: { advertiseAddress: "192.0.2.21", bindPort: 6443 },
    });
    expect(cfg.join.nodeRegistration.taints).toEqual([
      { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
    ]);
  });

  it.each<[string, JoinConfiguration["controlPlane"], string, number]>([
    ["absent address", {}, "192.0.2.21", 6443],
    ["0.0.0.0", { localAPIEndpoint: { advertiseAddress: "0.0.0.0" } }, "192.0.2.21", 6443],
    ["::", { localAPIEndpoint: { advertiseAddress: "::" } }, "192.0.2.21", 6443],
    [
      "given address, port 0",
      { localAPIEndpoint: { advertiseAddress: "10.1.1.1", bindPort: 0 } },
      "10.1.1.1",
      6443,
    ],
    ["given port", { localAPIEndpoint: { bindPort: 8443 } }, "192.0.2.21", 8443],
  ])("control-plane endpoint: %s", (_n, controlPlane, address, port) => {
    const cfg = defaultJoinConfig(docsOf({ ...tokenDiscovery, controlPlane }), ctx().c);
    expect(cfg.join.controlPlane?.localAPIEndpoint).toEqual({
      advertiseAddress: address,
      bindPort: port,
    });
  });

  it("keeps explicit taints: [] means none even on a control plane", () => {
    const cp = defaultJoinConfig(
      docsOf({ ...tokenDiscovery, controlPlane: {}, nodeRegistration: { taints: [] } }),
      ctx().c,
    );
    expect(cp.join.nodeRegistration.taints).toEqual([]);
    const taint = { key: "dedicated", value: "ci", effect: "NoExecute" as const };
    const worker = defaultJoinConfig(
      docsOf({ ...tokenDiscovery, nodeRegistration: { taints: [taint] } }),
      ctx().c,
    );
    expect(worker.join.nodeRegistration.taints).toEqual([taint]);
  });

  it("keeps an explicit TLS bootstrap token and the given fields", () => {
    const other = "zzzzzz.0123456789zzzzzz";
    const cfg = defaultJoinConfig(
      docsOf({
        discovery: { ...tokenDiscovery.discovery, tlsBootstrapToken: other },
        caCertPath: "/opt/ca.crt",
        nodeRegistration: { name: "N1", imagePullPolicy: "Never", imagePullSerial: false },
        timeouts: { discovery: "30s" },
        dryRun: true,
      }),
      ctx().c,
    );
    expect(cfg.join.discovery.tlsBootstrapToken).toBe(other);
    expect(cfg.join.caCertPath).toBe("/opt/ca.crt");
    expect(cfg.join.nodeRegistration).toMatchObject({
      name: "n1",
      imagePullPolicy: "Never",
      imagePullSerial: false,
    });
    expect(cfg.join.timeouts.discovery).toBe("30s");
    expect(cfg.join.timeouts.tlsBootstrap).toBe("5m0s");
    expect(cfg.join.dryRun).toBe(true);
  });

  it("uses the detected CRI socket, and prepends unix:// to a bare path with kubeadm's warning", () => {
    expect(
      defaultJoinConfig(docsOf(tokenDiscovery), ctx({ criSocket: "unix:///run/crio/crio.sock" }).c)
        .join.nodeRegistration.criSocket,
    ).toBe("unix:///run/crio/crio.sock");
    const { c, warnings } = ctx();
    const cfg = defaultJoinConfig(
      docsOf({
        ...tokenDiscovery,
        nodeRegistration: { criSocket: "/run/containerd/containerd.sock" },
      }),
      c,
    );
    expect(cfg.join.nodeRegistration.criSocket).toBe("unix:///run/containerd/containerd.sock");
    expect(warnings).toEqual([
      'Usage of CRI endpoints without URL scheme is deprecated and can cause kubelet errors in the future. Automatically prepending scheme "unix" to the "criSocket" with value "/run/containerd/containerd.sock". Please update your configuration!',
    ]);
  });

  it("turns a file:// discovery URL into a path and keeps an https one", () => {
    const file = (kubeConfigPath: string) =>
      defaultJoinConfig(docsOf({ discovery: { file: { kubeConfigPath } } }), ctx().c).join
        .discovery;
    expect(file("file:///etc/kubernetes/discovery.conf")).toEqual({
      file: { kubeConfigPath: "/etc/kubernetes/discovery.conf" },
    });
    expect(file("https://example.com/cluster-info.yaml")).toEqual({
      file: { kubeConfigPath: "https://example.com/cluster-info.yaml" },
    });
  });

  it("takes the v1beta3 discovery.timeout as timeouts.discovery (conversion.go)", () => {
    const cfg = defaultJoinConfig(
      decode(`apiVersion: kubeadm.k8s.io/v1beta3
kind: JoinConfiguration
discovery:
  timeout: 10m
  bootstrapToken:
    token: ${TOKEN}
    apiServerEndpoint: 192.0.2.10:6443
    unsafeSkipCAVerification: true
nodeRegistration:
  kubeletExtraArgs:
    v: "4"
    node-ip: 192.0.2.21
`),
      ctx().c,
    );
    expect(cfg.join.timeouts).toMatchObject({ discovery: "10m0s", kubernetesAPICall: "1m0s" });
    expect(cfg.join.nodeRegistration.kubeletExtraArgs).toEqual([
      { name: "node-ip", value: "192.0.2.21" },
      { name: "v", value: "4" },
    ]);
    expect(validateJoinConfig(cfg)).toEqual([]);
  });

  it("warns that documents other than JoinConfiguration are ignored", () => {
    const { c, warnings } = ctx();
    defaultJoinConfig(
      decode(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  file:
    kubeConfigPath: /d.conf
`),
      c,
    );
    expect(warnings).toEqual([
      expect.stringContaining(
        "join reads only the JoinConfiguration; ignored: ClusterConfiguration, KubeletConfiguration",
      ),
    ]);
  });

  it("leaves an undetected control-plane address empty for validation to report", () => {
    const cfg = defaultJoinConfig(
      docsOf({ ...tokenDiscovery, controlPlane: {} }),
      ctx({ advertiseAddress: undefined }).c,
    );
    expect(cfg.join.controlPlane?.localAPIEndpoint.advertiseAddress).toBe("");
    expect(validateJoinConfig(cfg)).toEqual([
      "JoinConfiguration.controlPlane.localAPIEndpoint.advertiseAddress: no advertise address; set --apiserver-advertise-address",
    ]);
  });

  it("does not modify its input", () => {
    const docs = docsOf({ ...tokenDiscovery, controlPlane: {} });
    const before = structuredClone(docs);
    defaultJoinConfig(docs, ctx().c);
    expect(docs).toEqual(before);
  });

  it("exports kubeadm's DefaultCACertPath", () => {
    expect(DEFAULT_CA_CERT_PATH).toBe("/etc/kubernetes/pki/ca.crt");
  });
});

describe("discoveryFilePath (SetDefaults_FileDiscovery with Go's url.Parse)", () => {
  it.each([
    ["file:///etc/kubernetes/discovery.conf", "/etc/kubernetes/discovery.conf"],
    ["FILE:///etc/d.conf", "/etc/d.conf"], // url.Parse lower-cases the scheme
    ["file://host/etc/d.conf", "/etc/d.conf"], // the authority is not part of the path
    ["file:///tmp/a%20b.conf", "/tmp/a b.conf"], // escapes are decoded
    ["file:///tmp/d.conf?x=1#top", "/tmp/d.conf"],
    ["file:d.conf", ""], // opaque: Go's Path is empty
    ["file:///bad%zz", "file:///bad%zz"], // url.Parse fails: left alone
    ["/etc/d.conf", "/etc/d.conf"],
    ["d.conf", "d.conf"],
    ["https://example.com/d.conf", "https://example.com/d.conf"],
  ])("%s → %s", (input, expected) => {
    expect(discoveryFilePath(input)).toBe(expected);
  });
});

describe("joinNeedsAdvertiseAddress", () => {
  it.each<[string, JoinConfiguration | undefined, boolean]>([
    ["no JoinConfiguration", undefined, false],
    ["worker", tokenDiscovery, false],
    ["control plane without an address", { controlPlane: {} }, true],
    [
      "control plane at 0.0.0.0",
      { controlPlane: { localAPIEndpoint: { advertiseAddress: "0.0.0.0" } } },
      true,
    ],
    [
      "control plane with an address",
      { controlPlane: { localAPIEndpoint: { advertiseAddress: "10.0.0.5" } } },
      false,
    ],
  ])("%s → %s", (_n, join, expected) => {
    expect(joinNeedsAdvertiseAddress({ ignoredKinds: [], ...(join ? { join } : {}) })).toBe(
      expected,
    );
  });
});

describe("joinInitConfig (fetchInitConfigurationFromJoinConfiguration)", () => {
  const resolved = { version: "v1.35.2", release: releaseFor("v1.35.2"), source: "kubeadm-config" };
  // What init stored in kube-system/kubeadm-config and kubelet-config, decoded.
  const fromCluster = decode(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.2
controlPlaneEndpoint: cp.example.com
clusterName: ci
networking:
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.100.0.0/16
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
maxPods: 50
`);
  const clusterConfigs = {
    cluster: fromCluster.cluster!,
    kubelet: fromCluster.kubelet!,
  };

  it("puts this control plane's registration and endpoint into the cluster's configuration", () => {
    const join = defaultJoinConfig(
      docsOf({
        ...tokenDiscovery,
        controlPlane: { localAPIEndpoint: { advertiseAddress: "192.0.2.22", bindPort: 7443 } },
        nodeRegistration: { name: "cp-2", kubeletExtraArgs: [{ name: "v", value: "2" }] },
      }),
      ctx().c,
    );
    const init = joinInitConfig(join, clusterConfigs, { resolved, advertiseAddress: "10.9.9.9" });
    expect(init.init.nodeRegistration).toEqual(join.join.nodeRegistration);
    expect(init.init.localAPIEndpoint).toEqual({ advertiseAddress: "192.0.2.22", bindPort: 7443 });
    expect(init.init.bootstrapTokens).toEqual([]);
    expect(init.init.timeouts).toEqual(join.join.timeouts);
    // SetClusterDynamicDefaults: the endpoint's missing port is this node's bind port.
    expect(init.cluster.controlPlaneEndpoint).toBe("cp.example.com:7443");
    expect(init.cluster).toMatchObject({
      clusterName: "ci",
      kubernetesVersion: "v1.35.2",
      certificatesDir: "/etc/kubernetes/pki",
      networking: {
        podSubnet: "10.244.0.0/16",
        serviceSubnet: "10.100.0.0/16",
        dnsDomain: "cluster.local",
      },
      etcd: { local: { dataDir: "/var/lib/etcd" } },
    });
    // The cluster's kubelet settings stay; kubeadm's defaults fill the rest.
    expect(init.kubelet).toMatchObject({
      cgroupDriver: "cgroupfs",
      maxPods: 50,
      clusterDNS: ["10.100.0.10"],
      clusterDomain: "cluster.local",
    });
    expect(init.kubeletUserSupplied).toBe(true);
    expect(init.kubeProxy).toMatchObject({ clusterCIDR: "10.244.0.0/16", bindAddress: "0.0.0.0" });
  });

  it("carries the join's timeouts, which kubeadm join makes the active ones (SetActiveTimeouts)", () => {
    const join = defaultJoinConfig(
      docsOf({
        ...tokenDiscovery,
        controlPlane: { localAPIEndpoint: { advertiseAddress: "192.0.2.22" } },
        timeouts: { controlPlaneComponentHealthCheck: "90s", etcdAPICall: "20s" },
      }),
      ctx().c,
    );
    const init = joinInitConfig(join, clusterConfigs, { resolved });
    expect(init.init.timeouts).toMatchObject({
      controlPlaneComponentHealthCheck: "90s",
      etcdAPICall: "20s",
      kubernetesAPICall: "1m0s",
    });
  });

  it("gives a worker the detected address and no control-plane taint", () => {
    const join = defaultJoinConfig(docsOf(tokenDiscovery), ctx().c);
    const init = joinInitConfig(join, clusterConfigs, { resolved, advertiseAddress: "fd00::21" });
    expect(init.init.localAPIEndpoint).toEqual({ advertiseAddress: "fd00::21", bindPort: 6443 });
    expect(init.init.nodeRegistration.taints).toEqual([]);
    expect(init.kubeProxy).toMatchObject({ bindAddress: "::" });
  });
});
