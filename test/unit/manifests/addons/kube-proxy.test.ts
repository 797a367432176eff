import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseYAMLDocuments } from "../../../../src/config/yaml.js";
import type { KubeObject } from "../../../../src/kube/types.js";
import {
  kubeProxyConfigMap,
  kubeProxyDaemonSet,
  kubeProxyEnabled,
  kubeProxyImage,
  kubeProxyObjects,
} from "../../../../src/manifests/addons/kube-proxy.js";
import { COMPONENT_CONFIG_HASH_ANNOTATION } from "../../../../src/manifests/upload-config.js";
import { addonConfig, MINORS, NETWORKS } from "./fixtures.js";
import { kubectlRead, schemaProblems } from "./kube-read.js";

const data = (cm: KubeObject) => cm.data as Record<string, string>;
type Container = { image: string; env: { name: string; value?: string }[] };
const container = (ds: KubeObject) =>
  (ds.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!;

// config.conf of a kubeadm cluster with podSubnet 10.244.0.0/16 and no KubeProxyConfiguration
// given: every field of the v1alpha1 Go type, unset ones as Go zero values, as kubeadm marshals
// it (fields per staging/src/k8s.io/kube-proxy/config/v1alpha1/types.go).
const KUBEADM_DEFAULT_CONFIG_CONF = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 10.244.0.0/16
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ""
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""`;

describe("every kube-proxy object, per release and network, read back by Kubernetes", () => {
  const cases = MINORS.flatMap((minor) => NETWORKS.map((net) => ({ minor, net })));
  it.each(cases)("v1.$minor, $net.name", ({ minor, net }) => {
    const { cfg, release } = addonConfig({
      minor,
      advertiseAddress: net.advertiseAddress,
      cluster: { networking: { serviceSubnet: net.serviceSubnet, podSubnet: net.podSubnet } },
    });
    const objects = kubeProxyObjects(cfg, release, {});

    // kubeadm's order of writes (proxy.go EnsureProxyAddon).
    expect(objects.inOrder.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      "ConfigMap/kube-proxy",
      "DaemonSet/kube-proxy",
      "ServiceAccount/kube-proxy",
      "ClusterRoleBinding/kubeadm:node-proxier",
      "Role/kube-proxy",
      "RoleBinding/kube-proxy",
    ]);
    const read = kubectlRead(objects.inOrder);
    expect(read).toEqual(objects.inOrder);
    for (const obj of read) expect(schemaProblems(obj)).toEqual([]);

    // The two files kube-proxy reads, as Kubernetes' YAML reader sees them.
    const files = data(objects.configMap);
    const [kubeconfig] = parseYAMLDocuments(files["kubeconfig.conf"]!, "kubeconfig.conf") as {
      clusters: { cluster: { server: string } }[];
    }[];
    expect(kubeconfig!.clusters[0]!.cluster.server).toBe(net.server);
    const [config] = parseYAMLDocuments(files["config.conf"]!, "config.conf") as Record<
      string,
      unknown
    >[];
    expect(config).toMatchObject({
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
      bindAddress: net.bindAddress,
      clusterCIDR: net.podSubnet,
      clientConnection: { kubeconfig: "/var/lib/kube-proxy/kubeconfig.conf" },
    });
    expect(Object.hasOwn(config!.iptables as object, "snatNodeInternalIP")).toBe(
      release.behaviour.kubeProxySNATNodeInternalIP,
    );
    expect(container(objects.daemonSet).image).toBe(`registry.k8s.io/kube-proxy:v1.${minor}.2`);
  });
});

describe("the kube-proxy ConfigMap", () => {
  it("holds kubeadm's marshalled KubeProxyConfiguration, without a final newline", () => {
    const { cfg, release } = addonConfig({
      cluster: { networking: { podSubnet: "10.244.0.0/16" } },
    });
    expect(data(kubeProxyConfigMap(cfg, release))["config.conf"]).toBe(KUBEADM_DEFAULT_CONFIG_CONF);
  });

  it("holds kubeadm's kubeconfig template, pointing at controlPlaneEndpoint", () => {
    const { cfg, release } = addonConfig({ cluster: { controlPlaneEndpoint: "cp.example.com" } });
    expect(data(kubeProxyConfigMap(cfg, release))["kubeconfig.conf"]).toBe(
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- cluster:",
        "    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "    server: https://cp.example.com:6443",
        "  name: default",
        "contexts:",
        "- context:",
        "    cluster: default",
        "    namespace: default",
        "    user: default",
        "  name: default",
        "current-context: default",
        "users:",
        "- name: default",
        "  user:",
        "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
      ].join("\n"),
    );
  });

  it("keeps the user's values, writes durations as Go does and drops unknown fields", () => {
    const { cfg, release } = addonConfig({
      kubeProxy: {
        apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
        kind: "KubeProxyConfiguration",
        mode: "ipvs",
        ipvs: { scheduler: "rr", syncPeriod: "60s", strictARP: true },
        conntrack: { maxPerCore: 0, tcpEstablishedTimeout: "24h" },
        featureGates: { SomeGate: true },
        notAField: "x",
      },
    });
    const text = data(kubeProxyConfigMap(cfg, release))["config.conf"]!;
    const [config] = parseYAMLDocuments(text, "config.conf") as Record<string, unknown>[];
    expect(config).toMatchObject({
      mode: "ipvs",
      ipvs: { scheduler: "rr", syncPeriod: "1m0s", strictARP: true, tcpTimeout: "0s" },
      conntrack: { maxPerCore: 0, tcpEstablishedTimeout: "24h0m0s", min: null },
      featureGates: { SomeGate: true },
      bindAddress: "0.0.0.0",
    });
    expect(config).not.toHaveProperty("notAField");
    expect(KUBEADM_DEFAULT_CONFIG_CONF).not.toContain("featureGates"); // omitempty when empty
  });

  it("carries the component-config hash kubeadm computes, unless the user supplied the config", () => {
    const generated = kubeProxyConfigMap(addonConfig().cfg, addonConfig().release);
    const files = data(generated);
    // ChecksumForConfigMap: SHA-256 over the values in key order (config.conf < kubeconfig.conf).
    const expected = createHash("sha256")
      .update(files["config.conf"]!)
      .update(files["kubeconfig.conf"]!)
      .digest("hex");
    expect(generated.metadata.annotations).toEqual({
      [COMPONENT_CONFIG_HASH_ANNOTATION]: `sha256:${expected}`,
    });

    const user = addonConfig({
      kubeProxy: { apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration" },
    });
    expect(user.cfg.kubeProxyUserSupplied).toBe(true);
    expect(kubeProxyConfigMap(user.cfg, user.release).metadata.annotations).toBeUndefined();
  });
});

describe("the kube-proxy DaemonSet", () => {
  it("passes the proxy variables of kubeadm's environment after NODE_NAME", () => {
    const { cfg } = addonConfig();
    const env = container(
      kubeProxyDaemonSet(cfg, {
        no_proxy: "10.0.0.0/8,.svc",
        HTTP_PROXY: "http://proxy:3128",
        https_proxy: "",
        PATH: "/usr/bin",
      }),
    ).env;
    expect(env).toEqual([
      { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
      { name: "HTTP_PROXY", value: "http://proxy:3128" },
      { name: "no_proxy", value: "10.0.0.0/8,.svc" },
    ]);
  });

  it.each([
    [
      { imageRepository: "registry.k8s.io", kubernetesVersion: "v1.35.2" },
      "registry.k8s.io/kube-proxy:v1.35.2",
    ],
    [
      { imageRepository: "mirror.example:5000/k8s", kubernetesVersion: "v1.36.0" },
      "mirror.example:5000/k8s/kube-proxy:v1.36.0",
    ],
    [
      { imageRepository: "registry.k8s.io", kubernetesVersion: "v1.35.2+build.1" },
      "registry.k8s.io/kube-proxy:v1.35.2_build.1",
    ],
  ])("image for %j is %s", (cluster, image) => {
    expect(kubeProxyImage(cluster)).toBe(image);
  });

  it("follows imageRepository through to the DaemonSet", () => {
    const { cfg } = addonConfig({ cluster: { imageRepository: "mirror.example/k8s" } });
    expect(container(kubeProxyDaemonSet(cfg, {})).image).toBe(
      "mirror.example/k8s/kube-proxy:v1.35.2",
    );
  });
});

it("is skipped when proxy.disabled is set", () => {
  expect(kubeProxyEnabled(addonConfig().cfg)).toBe(true);
  expect(kubeProxyEnabled(addonConfig({ cluster: { proxy: { disabled: true } } }).cfg)).toBe(false);
});
