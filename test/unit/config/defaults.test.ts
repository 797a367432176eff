import { describe, expect, it } from "vitest";
import { clusterDNSIP } from "../../../src/config/component-configs.js";
import { type DefaultingContext, defaultInitConfig } from "../../../src/config/defaults.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import type { ConfigDocuments } from "../../../src/config/types.js";
import { releaseFor } from "../../../src/config/versions.js";

function ctx(over: Partial<DefaultingContext> = {}): DefaultingContext & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    resolved: { version: "v1.35.2", release: releaseFor("v1.35.2"), source: "test" },
    nodeName: "CP-1.Example.COM ",
    advertiseAddress: "192.0.2.10",
    generateToken: () => "genera.tedtoken00000000",
    warn: (m) => warnings.push(m),
    warnings,
    ...over,
  };
}
const empty: ConfigDocuments = { ignoredKinds: [] };
const decode = (text: string) => decodeConfigDocuments(text, "test.yaml");

describe("defaultInitConfig: kubeadm's v1beta4 defaults", () => {
  const cfg = defaultInitConfig(empty, ctx());

  it("fills InitConfiguration like kubeadm", () => {
    expect(cfg.init.bootstrapTokens).toEqual([
      {
        token: "genera.tedtoken00000000",
        ttl: "24h0m0s",
        usages: ["signing", "authentication"],
        groups: ["system:bootstrappers:kubeadm:default-node-token"],
      },
    ]);
    expect(cfg.init.localAPIEndpoint).toEqual({ advertiseAddress: "192.0.2.10", bindPort: 6443 });
    expect(cfg.init.nodeRegistration).toEqual({
      name: "cp-1.example.com", // nodeutil.GetHostname: trimmed and lower-cased
      criSocket: "unix:///var/run/containerd/containerd.sock",
      taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
      kubeletExtraArgs: [],
      ignorePreflightErrors: [],
      imagePullPolicy: "IfNotPresent",
      imagePullSerial: true,
    });
    expect(cfg.init.timeouts).toEqual({
      controlPlaneComponentHealthCheck: "4m0s",
      kubeletHealthCheck: "4m0s",
      kubernetesAPICall: "1m0s",
      etcdAPICall: "2m0s",
      tlsBootstrap: "5m0s",
      discovery: "5m0s",
      upgradeManifests: "5m0s",
    });
    expect(cfg.init.skipPhases).toEqual([]);
  });

  it("fills ClusterConfiguration like kubeadm", () => {
    expect(cfg.cluster).toMatchObject({
      kubernetesVersion: "v1.35.2",
      networking: { serviceSubnet: "10.96.0.0/12", dnsDomain: "cluster.local" },
      certificatesDir: "/etc/kubernetes/pki",
      imageRepository: "registry.k8s.io",
      clusterName: "kubernetes",
      encryptionAlgorithm: "RSA-2048",
      certificateValidityPeriod: "8760h0m0s",
      caCertificateValidityPeriod: "87600h0m0s",
      etcd: { local: { dataDir: "/var/lib/etcd" } },
      featureGates: {},
    });
    expect(cfg.cluster.controlPlaneEndpoint).toBeUndefined();
    expect(cfg.cluster.networking.podSubnet).toBeUndefined();
  });

  it("generates kubeadm's KubeletConfiguration and KubeProxyConfiguration", () => {
    expect(cfg.kubelet).toEqual({
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
    });
    expect(cfg.kubeProxy).toEqual({
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
      bindAddress: "0.0.0.0",
      clientConnection: { kubeconfig: "/var/lib/kube-proxy/kubeconfig.conf" },
    });
    expect(cfg.kubeletUserSupplied).toBe(false);
    expect(cfg.kubeProxyUserSupplied).toBe(false);
  });
});

describe("defaultInitConfig: what the user gives", () => {
  it("keeps an explicit empty taint list and the given node name, lower-cased", () => {
    const cfg = defaultInitConfig(
      decode(
        `apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: Worker-A\n  taints: []\n`,
      ),
      ctx(),
    );
    expect(cfg.init.nodeRegistration.taints).toEqual([]);
    expect(cfg.init.nodeRegistration.name).toBe("worker-a");
  });

  it("adds the bind port to a control-plane endpoint without one, bracketing IPv6", () => {
    const docs = (endpoint: string) =>
      decode(
        `apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: 8443\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: "${endpoint}"\n`,
      );
    expect(defaultInitConfig(docs("cp.example.com"), ctx()).cluster.controlPlaneEndpoint).toBe(
      "cp.example.com:8443",
    );
    expect(defaultInitConfig(docs("fd00::100"), ctx()).cluster.controlPlaneEndpoint).toBe(
      "[fd00::100]:8443",
    );
    expect(defaultInitConfig(docs("10.0.0.1:443"), ctx()).cluster.controlPlaneEndpoint).toBe(
      "10.0.0.1:443",
    );
    // kubeadm refuses "[v6]" without a port; defaulting leaves it for validation to report.
    expect(defaultInitConfig(docs("[fd00::100]"), ctx()).cluster.controlPlaneEndpoint).toBe(
      "[fd00::100]",
    );
  });

  it("lower-cases certSANs and uses the detected address for an unspecified one", () => {
    const cfg = defaultInitConfig(
      decode(
        `apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 0.0.0.0\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\napiServer:\n  certSANs: [My-ELB.Example.com]\n`,
      ),
      ctx(),
    );
    expect(cfg.cluster.apiServer.certSANs).toEqual(["my-elb.example.com"]);
    expect(cfg.init.localAPIEndpoint.advertiseAddress).toBe("192.0.2.10");
  });

  it("prepends unix:// to a CRI socket path, with kubeadm's warning", () => {
    const c = ctx();
    const cfg = defaultInitConfig(
      decode(
        `apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  criSocket: /run/crio/crio.sock\n`,
      ),
      c,
    );
    expect(cfg.init.nodeRegistration.criSocket).toBe("unix:///run/crio/crio.sock");
    expect(c.warnings[0]).toContain("without URL scheme is deprecated");
  });

  it("uses a detected CRI socket when none is given", () => {
    expect(
      defaultInitConfig(empty, ctx({ criSocket: "unix:///run/crio/crio.sock" })).init
        .nodeRegistration.criSocket,
    ).toBe("unix:///run/crio/crio.sock");
  });

  it("leaves ttl unset on a token that has an expiry", () => {
    const cfg = defaultInitConfig(
      decode(
        `apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens:\n- expires: "2030-01-01T00:00:00Z"\n  usages: [signing]\n`,
      ),
      ctx(),
    );
    expect(cfg.init.bootstrapTokens[0]).toEqual({
      expires: "2030-01-01T00:00:00Z",
      usages: ["signing"],
      groups: ["system:bootstrappers:kubeadm:default-node-token"],
      token: "genera.tedtoken00000000",
    });
  });

  it("keeps user component-config values, warns where kubeadm warns, forces rotateCertificates", () => {
    const c = ctx({ kubeletResolvConf: "/run/systemd/resolve/resolv.conf" });
    const docs = decode(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  podSubnet: 10.244.0.0/16
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: [10.96.0.53]
cgroupDriver: cgroupfs
rotateCertificates: false
maxPods: 50
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: 10.0.0.0/8
mode: ipvs
`);
    const before = structuredClone(docs);
    const cfg = defaultInitConfig(docs, c);
    expect(cfg.kubelet).toMatchObject({
      clusterDNS: ["10.96.0.53"],
      cgroupDriver: "cgroupfs",
      rotateCertificates: true,
      maxPods: 50,
      resolvConf: "/run/systemd/resolve/resolv.conf",
    });
    expect(cfg.kubeProxy).toMatchObject({
      clusterCIDR: "10.0.0.0/8",
      mode: "ipvs",
      bindAddress: "0.0.0.0",
    });
    expect(c.warnings).toEqual([
      'The recommended value for "clusterDNS" in "KubeletConfiguration" is: [10.96.0.10]; the provided value is: [10.96.0.53]',
      'The recommended value for "clusterCIDR" in "KubeProxyConfiguration" is: 10.244.0.0/16; the provided value is: 10.0.0.0/8',
    ]);
    expect(cfg.kubeletUserSupplied).toBe(true);
    expect(cfg.kubeProxyUserSupplied).toBe(true);
    expect(docs).toEqual(before); // defaulting does not touch its input
  });
});

describe("defaultInitConfig: a v1beta3 file", () => {
  it("ends up with v1beta4 defaults plus the converted values", () => {
    const cfg = defaultInitConfig(
      decode(`apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
apiServer:
  timeoutForControlPlane: 7m0s
  extraArgs: {v: "2"}
`),
      ctx(),
    );
    expect(cfg.init.timeouts.controlPlaneComponentHealthCheck).toBe("7m0s");
    expect(cfg.init.timeouts.kubeletHealthCheck).toBe("4m0s");
    expect(cfg.init.nodeRegistration.imagePullSerial).toBe(true);
    expect(cfg.cluster.apiServer.extraArgs).toEqual([{ name: "v", value: "2" }]);
    expect(cfg.cluster.encryptionAlgorithm).toBe("RSA-2048");
  });
});

describe("defaultInitConfig: IPv6 and dual-stack", () => {
  const withNetworking = (serviceSubnet: string, podSubnet: string) =>
    decode(
      `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  serviceSubnet: "${serviceSubnet}"\n  podSubnet: "${podSubnet}"\n`,
    );

  it("IPv6: DNS IP from the IPv6 service range, kube-proxy binds ::", () => {
    const cfg = defaultInitConfig(
      withNetworking("fd00:10:96::/112", "fd00:10:244::/56"),
      ctx({ advertiseAddress: "fd00::2" }),
    );
    expect(cfg.kubelet.clusterDNS).toEqual(["fd00:10:96::a"]);
    expect(cfg.kubeProxy.bindAddress).toBe("::");
    expect(cfg.kubeProxy.clusterCIDR).toBe("fd00:10:244::/56");
    expect(cfg.init.localAPIEndpoint.advertiseAddress).toBe("fd00::2");
  });

  it.each([
    ["10.96.0.0/16,fd00:10:96::/112", "10.96.0.10"],
    ["fd00:10:96::/112,10.96.0.0/16", "fd00:10:96::a"],
  ])("dual-stack %s: the first service CIDR decides the DNS IP (%s)", (serviceSubnet, dns) => {
    const cfg = defaultInitConfig(
      withNetworking(serviceSubnet, "10.244.0.0/16,fd00:10:244::/56"),
      ctx(),
    );
    expect(cfg.kubelet.clusterDNS).toEqual([dns]);
    expect(cfg.kubeProxy.clusterCIDR).toBe("10.244.0.0/16,fd00:10:244::/56");
  });

  it("falls back to 10.96.0.10 when the service range cannot hold it, as kubeadm", () => {
    expect(clusterDNSIP("10.0.0.0/29")).toBe("10.96.0.10");
  });
});
