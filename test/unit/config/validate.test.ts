import { describe, expect, it } from "vitest";
import { defaultInitConfig } from "../../../src/config/defaults.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import type { InitConfig, JoinConfiguration } from "../../../src/config/types.js";
import {
  certificateValidityWarnings,
  hostPortProblem,
  subnetOverlapWarnings,
  validateConfigDocuments,
  validateInitConfig,
  validateJoinConfiguration,
} from "../../../src/config/validate.js";
import { releaseFor } from "../../../src/config/versions.js";

function base(): InitConfig {
  return defaultInitConfig(
    { ignoredKinds: [], cluster: { networking: { podSubnet: "10.244.0.0/16" } } },
    {
      resolved: { version: "v1.35.2", release: releaseFor("v1.35.2"), source: "test" },
      nodeName: "cp-1",
      advertiseAddress: "192.0.2.10",
      generateToken: () => "abcdef.0123456789abcdef",
    },
  );
}

const SECRET = "abcdef.0123456789zzzz";

describe("validateInitConfig", () => {
  it("accepts kubeadm's defaults", () => {
    expect(validateInitConfig(base())).toEqual([]);
  });

  it.each<[string, (c: InitConfig) => void, string]>([
    [
      "advertise address not an IP",
      (c) => (c.init.localAPIEndpoint.advertiseAddress = "10.0.0"),
      'InitConfiguration.localAPIEndpoint.advertiseAddress: "10.0.0" is not a valid IP address',
    ],
    [
      "loopback advertise address",
      (c) => (c.init.localAPIEndpoint.advertiseAddress = "127.0.0.1"),
      'InitConfiguration.localAPIEndpoint.advertiseAddress: "127.0.0.1" cannot be the API server\'s advertise address',
    ],
    [
      "bind port out of range",
      (c) => (c.init.localAPIEndpoint.bindPort = 70000),
      "InitConfiguration.localAPIEndpoint.bindPort: 70000 is not a port number between 1 and 65535",
    ],
    [
      "service subnet not a CIDR",
      (c) => (c.cluster.networking.serviceSubnet = "10.96.0.0"),
      'ClusterConfiguration.networking.serviceSubnet: "10.96.0.0" is not a CIDR',
    ],
    [
      "a blank in a CIDR list (kubeadm splits without trimming)",
      (c) => (c.cluster.networking.podSubnet = "10.244.0.0/16, fd00::/56"),
      'ClusterConfiguration.networking.podSubnet: "10.244.0.0/16, fd00::/56" is not a CIDR',
    ],
    [
      "three service CIDRs",
      (c) => (c.cluster.networking.serviceSubnet = "10.96.0.0/16,fd00::/112,10.97.0.0/16"),
      "must be one CIDR, or two CIDRs (one IPv4, one IPv6) for dual-stack",
    ],
    [
      "two CIDRs of one family",
      (c) => (c.cluster.networking.podSubnet = "10.244.0.0/16,10.245.0.0/16"),
      "must be one CIDR, or two CIDRs (one IPv4, one IPv6) for dual-stack",
    ],
    [
      "service subnet too large (kubeadm: mask >= 12)",
      (c) => (c.cluster.networking.serviceSubnet = "172.0.0.0/8"),
      "ClusterConfiguration.networking.serviceSubnet: 172.0.0.0/8 is too large; for IPv4 the mask must be /12 or longer",
    ],
    [
      "IPv6 service subnet too large (mask >= 108)",
      (c) => {
        c.cluster.networking.serviceSubnet = "fd00::/107";
        c.init.localAPIEndpoint.advertiseAddress = "fd00::2";
      },
      "for IPv6 the mask must be /108 or longer",
    ],
    [
      "service subnet too small for the DNS IP",
      (c) => (c.cluster.networking.serviceSubnet = "10.96.0.0/29"),
      "ClusterConfiguration.networking.serviceSubnet: 10.96.0.0/29 is too small; it needs at least 10 addresses",
    ],
    [
      "pod subnet smaller than a node range",
      (c) => (c.cluster.networking.podSubnet = "10.244.0.0/25"),
      "ClusterConfiguration.networking.podSubnet: 10.244.0.0/25 is smaller than one node's range (/24)",
    ],
    [
      "pod subnet too far from the node mask",
      (c) => (c.cluster.networking.podSubnet = "100.0.0.0/7"),
      "differ by more than 16 bits",
    ],
    [
      "dnsDomain",
      (c) => (c.cluster.networking.dnsDomain = "Cluster_Local"),
      'ClusterConfiguration.networking.dnsDomain: "Cluster_Local" is not a valid DNS domain',
    ],
    [
      "controlPlaneEndpoint host",
      (c) => (c.cluster.controlPlaneEndpoint = "cp_1:6443"),
      'ClusterConfiguration.controlPlaneEndpoint: "cp_1:6443" is not a valid endpoint',
    ],
    [
      "controlPlaneEndpoint port",
      (c) => (c.cluster.controlPlaneEndpoint = "cp.example.com:0"),
      "port 0 must be a number between 1 and 65535",
    ],
    [
      "certSANs",
      (c) => (c.cluster.apiServer.certSANs = ["ok.example.com", "*.*.bad.example.com"]),
      'ClusterConfiguration.apiServer.certSANs: "*.*.bad.example.com" is not a valid IP address, DNS name or wildcard DNS name',
    ],
    [
      "node name",
      (c) => (c.init.nodeRegistration.name = "CP_1"),
      'InitConfiguration.nodeRegistration.name: "CP_1" is not a valid node name',
    ],
    [
      "token format, without echoing it",
      (c) => (c.init.bootstrapTokens[0]!.token = SECRET),
      'InitConfiguration.bootstrapTokens[0].token: the bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}"',
    ],
    [
      "token usage",
      (c) => (c.init.bootstrapTokens[0]!.usages = ["authentication", "bogus"]),
      'InitConfiguration.bootstrapTokens[0].usages: "bogus" is not a bootstrap token usage',
    ],
    [
      "token group pattern",
      (c) => (c.init.bootstrapTokens[0]!.groups = ["system:nodes"]),
      'InitConfiguration.bootstrapTokens[0].groups: "system:nodes" must match',
    ],
    [
      "token groups without authentication",
      (c) => (c.init.bootstrapTokens[0]!.usages = ["signing"]),
      'InitConfiguration.bootstrapTokens[0].groups: token groups need the "authentication" usage',
    ],
    [
      "token ttl and expires",
      (c) => (c.init.bootstrapTokens[0]!.expires = "2030-01-01T00:00:00Z"),
      "InitConfiguration.bootstrapTokens[0]: ttl and expires are mutually exclusive",
    ],
    [
      "negative ttl",
      (c) => (c.init.bootstrapTokens[0]!.ttl = "-1h"),
      'InitConfiguration.bootstrapTokens[0].ttl: "-1h" must not be negative',
    ],
    [
      "certificate key, without echoing it",
      (c) => (c.init.certificateKey = "00ff"),
      "InitConfiguration.certificateKey: the certificate key must be 64 hexadecimal characters (a 32-byte AES key)",
    ],
    [
      "encryption algorithm",
      (c) => ((c.cluster as { encryptionAlgorithm: string }).encryptionAlgorithm = "RSA-1024"),
      'ClusterConfiguration.encryptionAlgorithm: "RSA-1024" is not supported',
    ],
    [
      "taint effect",
      (c) => (c.init.nodeRegistration.taints = [{ key: "a", effect: "Never" as "NoSchedule" }]),
      'InitConfiguration.nodeRegistration.taints[0].effect: "Never" is not a taint effect',
    ],
    [
      "taint key",
      (c) => (c.init.nodeRegistration.taints = [{ key: "bad key", effect: "NoSchedule" }]),
      'InitConfiguration.nodeRegistration.taints[0].key: "bad key" is not a valid taint key',
    ],
    [
      "extraVolumes pathType",
      (c) =>
        (c.cluster.apiServer.extraVolumes = [
          { name: "v", hostPath: "/x", mountPath: "/x", pathType: "Dir" as "Directory" },
        ]),
      'ClusterConfiguration.apiServer.extraVolumes[0].pathType: "Dir" is not a host path type',
    ],
    [
      "extraArgs without a name",
      (c) => (c.cluster.scheduler.extraArgs = [{ name: "", value: "x" }]),
      "ClusterConfiguration.scheduler.extraArgs[0]: the argument has no name",
    ],
    [
      "image pull policy",
      (c) => (c.init.nodeRegistration.imagePullPolicy = "Sometimes" as "Always"),
      'InitConfiguration.nodeRegistration.imagePullPolicy: "Sometimes" is not a pull policy',
    ],
    [
      "CRI socket scheme",
      (c) => (c.init.nodeRegistration.criSocket = "tcp://10.0.0.1:1234"),
      'InitConfiguration.nodeRegistration.criSocket: "tcp://10.0.0.1:1234" must be a unix:// URL',
    ],
    [
      "unknown feature gate",
      (c) => (c.cluster.featureGates = { Bogus: true }),
      "ClusterConfiguration.featureGates: Bogus is not a kubeadm feature gate for Kubernetes v1.35",
    ],
    [
      "ignore all plus names",
      (c) => (c.init.nodeRegistration.ignorePreflightErrors = ["all", "swap"]),
      'InitConfiguration.nodeRegistration.ignorePreflightErrors: do not name individual checks when "all" is used',
    ],
    [
      "etcd local and external",
      (c) =>
        (c.cluster.etcd = {
          local: { dataDir: "/var/lib/etcd" },
          external: { endpoints: ["https://e:2379"] },
        }),
      "ClusterConfiguration.etcd: local and external are mutually exclusive",
    ],
    [
      "external etcd over http with certs",
      (c) =>
        (c.cluster.etcd = {
          external: {
            endpoints: ["http://10.0.0.5:2379"],
            caFile: "/ca.crt",
            certFile: "/c.crt",
            keyFile: "/c.key",
          },
        }),
      'ClusterConfiguration.etcd.external.endpoints: "http://10.0.0.5:2379" must use https when certificate files are set',
    ],
    [
      "external etcd cert without key",
      (c) =>
        (c.cluster.etcd = {
          external: { endpoints: ["https://10.0.0.5:2379"], caFile: "/ca.crt", certFile: "/c.crt" },
        }),
      "ClusterConfiguration.etcd.external: set both certFile and keyFile, or neither",
    ],
    [
      "external etcd relative path",
      (c) =>
        (c.cluster.etcd = { external: { endpoints: ["https://10.0.0.5:2379"], caFile: "ca.crt" } }),
      'ClusterConfiguration.etcd.external.caFile: "ca.crt" is not an absolute path',
    ],
    [
      "local etcd relative data dir",
      (c) => (c.cluster.etcd = { local: { dataDir: "etcd" } }),
      'ClusterConfiguration.etcd.local.dataDir: "etcd" is not an absolute path',
    ],
    [
      "image repository",
      (c) => (c.cluster.imageRepository = "Registry.Example.com/UPPER"),
      'ClusterConfiguration.imageRepository: "Registry.Example.com/UPPER" is not a valid image repository',
    ],
    [
      "certificates dir",
      (c) => (c.cluster.certificatesDir = "pki"),
      'ClusterConfiguration.certificatesDir: "pki" is not an absolute path',
    ],
    [
      "unsupported Kubernetes version lists the range",
      (c) => (c.cluster.kubernetesVersion = "v1.30.2"),
      "ClusterConfiguration.kubernetesVersion: Kubernetes version v1.30.2 is not supported: kubeforge supports v1.33 to v1.37",
    ],
    [
      "timeouts",
      (c) => (c.init.timeouts.kubeletHealthCheck = "-4m0s"),
      'InitConfiguration.timeouts.kubeletHealthCheck: "-4m0s" must not be negative',
    ],
    [
      "IPv6 advertise address with an IPv4-only service range",
      (c) => (c.init.localAPIEndpoint.advertiseAddress = "fd00::2"),
      'InitConfiguration.localAPIEndpoint.advertiseAddress: IPv6 address "fd00::2" does not match the IPv4 primary range',
    ],
    [
      // kube-apiserver validatePublicIPServiceClusterIPRangeIPFamilies compares the advertise
      // address with the primary (first) service range only.
      "IPv6 advertise address in a dual-stack cluster whose first service range is IPv4",
      (c) => {
        c.init.localAPIEndpoint.advertiseAddress = "fd00::2";
        c.cluster.networking.serviceSubnet = "10.96.0.0/16,fd00:10:96::/112";
        c.cluster.networking.podSubnet = "10.244.0.0/16,fd00:10:244::/56";
      },
      'InitConfiguration.localAPIEndpoint.advertiseAddress: IPv6 address "fd00::2" does not match the IPv4 primary range of networking.serviceSubnet "10.96.0.0/16,fd00:10:96::/112"',
    ],
  ])("%s", (_name, mutate, message) => {
    const cfg = base();
    mutate(cfg);
    const found = validateInitConfig(cfg);
    expect(found).toEqual([expect.stringContaining(message)]);
    expect(found.join("\n")).not.toContain(SECRET);
  });

  it("accepts IPv6 and dual-stack networks", () => {
    const cfg = base();
    cfg.init.localAPIEndpoint.advertiseAddress = "fd00::2";
    cfg.cluster.networking.serviceSubnet = "fd00:10:96::/112,10.96.0.0/16";
    cfg.cluster.networking.podSubnet = "fd00:10:244::/56,10.244.0.0/16";
    cfg.cluster.controlPlaneEndpoint = "[fd00::100]:6443";
    cfg.cluster.apiServer.certSANs = ["fd00::100", "*.example.com", "10.0.0.1"];
    expect(validateInitConfig(cfg)).toEqual([]);
  });

  it("returns all problems, not just the first", () => {
    const cfg = base();
    cfg.init.localAPIEndpoint.advertiseAddress = "not-an-ip";
    cfg.cluster.networking.podSubnet = "10.244.0.0/33";
    cfg.init.bootstrapTokens[0]!.token = "bad";
    cfg.cluster.clusterName = "kubernetes";
    cfg.cluster.kubernetesVersion = "v1.99.0";
    cfg.init.nodeRegistration.name = "";
    expect(validateInitConfig(cfg)).toHaveLength(5);
  });
});

describe("kubeadm's own test cases (validation_test.go)", () => {
  // TestValidateCertSANs
  it.each<[string[], boolean]>([
    [[], true],
    [["my-hostname"], true],
    [["my-hostname2", "my.other.subdomain"], true],
    [["my-hostname", "my.other.subdomain", "10.0.0.10"], true],
    [["my-hostname", "my_other.subdomain", "10.0.0.10"], false],
    [["my-hostname3", "my-other.subdomain", "10.0.0.10", "10.0.0.11"], true],
    [["my-hostname4", "my.other-subdomain", "10.0.0.10"], true],
    [["my-host", "*.my.other-subdomain", "10.0.0.10"], true],
    [["my-host", "*.*.my.other-subdomain", "10.0.0.10"], false],
  ])("certSANs %j valid=%s", (sans, valid) => {
    const cfg = base();
    cfg.cluster.apiServer.certSANs = sans;
    expect(validateInitConfig(cfg).length === 0).toBe(valid);
  });

  // TestValidateHostPort / ParseHostPort
  it.each<[string, boolean]>([
    ["cp.example.com", true],
    ["cp.example.com:6443", true],
    ["10.0.0.1:6443", true],
    ["[::1]:6443", true],
    ["::1", true],
    ["[::1]", false], // Go's SplitHostPort wants a port after brackets
    ["cp.example.com:65536", false],
    ["cp_example:6443", false],
  ])("host:port %s valid=%s", (text, valid) => {
    expect(hostPortProblem(text) === undefined).toBe(valid);
  });
});

describe("validateJoinConfiguration", () => {
  const hash = `sha256:${"a".repeat(64)}`;
  const good: JoinConfiguration = {
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: "10.0.0.1:6443",
        token: "abcdef.0123456789abcdef",
        caCertHashes: [hash],
      },
    },
  };

  it("accepts token discovery with a CA pin, and file discovery", () => {
    expect(validateJoinConfiguration(good)).toEqual([]);
    expect(
      validateJoinConfiguration({
        discovery: { file: { kubeConfigPath: "https://example.com/cluster-info" } },
      }),
    ).toEqual([]);
    expect(
      validateJoinConfiguration({
        discovery: { file: { kubeConfigPath: "/etc/kubernetes/discovery.conf" } },
      }),
    ).toEqual([]);
  });

  it.each<[string, JoinConfiguration, string]>([
    ["no discovery", {}, "JoinConfiguration.discovery: set bootstrapToken or file"],
    [
      "both discoveries",
      { discovery: { ...good.discovery, file: { kubeConfigPath: "/x.conf" } } },
      "JoinConfiguration.discovery: bootstrapToken and file cannot both be set",
    ],
    [
      "no CA pin",
      {
        discovery: {
          bootstrapToken: { apiServerEndpoint: "10.0.0.1:6443", token: "abcdef.0123456789abcdef" },
        },
      },
      "JoinConfiguration.discovery.bootstrapToken.caCertHashes: token discovery without caCertHashes is unsafe",
    ],
    [
      "bad pin",
      {
        discovery: {
          bootstrapToken: { ...good.discovery!.bootstrapToken, caCertHashes: ["md5:abc"] },
        },
      },
      'JoinConfiguration.discovery.bootstrapToken.caCertHashes: "md5:abc" is not of the form "sha256:<64 hex digits>"',
    ],
    [
      "endpoint without port",
      {
        discovery: {
          bootstrapToken: { ...good.discovery!.bootstrapToken, apiServerEndpoint: "10.0.0.1" },
        },
      },
      'JoinConfiguration.discovery.bootstrapToken.apiServerEndpoint: "10.0.0.1" must be host:port',
    ],
    [
      "bad token",
      { discovery: { bootstrapToken: { ...good.discovery!.bootstrapToken, token: "x" } } },
      "JoinConfiguration.discovery.bootstrapToken.token: the bootstrap token is not of the form",
    ],
    [
      "http discovery URL",
      { discovery: { file: { kubeConfigPath: "http://example.com/ci" } } },
      'JoinConfiguration.discovery.file.kubeConfigPath: "http://example.com/ci": only https URLs and file paths are accepted',
    ],
    [
      "control-plane certificate key",
      { ...good, controlPlane: { certificateKey: "xyz" } },
      "JoinConfiguration.controlPlane.certificateKey: the certificate key must be 64 hexadecimal characters",
    ],
    [
      "caCertPath",
      { ...good, caCertPath: "ca.pem" },
      'JoinConfiguration.caCertPath: "ca.pem" must be an absolute path to a .crt file',
    ],
  ])("%s", (_name, join, message) => {
    expect(validateJoinConfiguration(join)).toEqual([expect.stringContaining(message)]);
  });

  it("allows skipping CA verification explicitly", () => {
    expect(
      validateJoinConfiguration({
        discovery: {
          bootstrapToken: {
            apiServerEndpoint: "[fd00::1]:6443",
            token: "abcdef.0123456789abcdef",
            unsafeSkipCAVerification: true,
          },
        },
      }),
    ).toEqual([]);
  });
});

describe("validateConfigDocuments (before defaulting)", () => {
  const decode = (t: string) => decodeConfigDocuments(t, "c.yaml");

  it("accepts a partial file whose missing fields kubeadm defaults", () => {
    expect(
      validateConfigDocuments(
        decode("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"),
      ),
    ).toEqual([]);
    expect(
      validateConfigDocuments(
        decode(
          "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: stable-1.36\nnetworking:\n  podSubnet: 10.244.0.0/16\n",
        ),
      ),
    ).toEqual([]);
  });

  it("checks every document and the version range", () => {
    const found = validateConfigDocuments(
      decode(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 300.1.1.1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.32.0
networking:
  podSubnet: 10.96.0.0/16
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery: {}
`),
    );
    expect(found).toEqual([
      "ClusterConfiguration.kubernetesVersion: Kubernetes version v1.32.0 is not supported: kubeforge supports v1.33 to v1.37",
      'InitConfiguration.localAPIEndpoint.advertiseAddress: "300.1.1.1" is not a valid IP address',
      "JoinConfiguration.discovery: set bootstrapToken or file",
    ]);
  });

  it("knows which feature gates the named version has", () => {
    expect(
      validateConfigDocuments(
        decode(
          "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.1\nfeatureGates:\n  NodeLocalCRISocket: true\n",
        ),
      ),
    ).toEqual([
      "ClusterConfiguration.featureGates: NodeLocalCRISocket graduated and is no longer a feature gate in Kubernetes v1.37; remove it",
    ]);
  });
});

describe("certificateValidityWarnings (kubeadm only warns)", () => {
  it("warns above the defaults and when leaves outlive the CA", () => {
    expect(
      certificateValidityWarnings({
        certificateValidityPeriod: "8760h0m0s",
        caCertificateValidityPeriod: "87600h0m0s",
      }),
    ).toEqual([]);
    expect(
      certificateValidityWarnings({
        certificateValidityPeriod: "9000h0m0s",
        caCertificateValidityPeriod: "8000h0m0s",
      }),
    ).toHaveLength(2);
  });
});

describe("overlapping pod and service ranges: kubeadm's ValidateNetworking has no such check", () => {
  const overlapping: [string, string, string[]][] = [
    [
      "fd00:10:244::/56",
      "fd00:10:244::/112",
      [
        'networking.podSubnet "fd00:10:244::/56" overlaps with networking.serviceSubnet "fd00:10:244::/112": Pod and Service addresses may collide',
      ],
    ],
    [
      "10.96.0.0/16",
      "10.96.0.0/12",
      [
        'networking.podSubnet "10.96.0.0/16" overlaps with networking.serviceSubnet "10.96.0.0/12": Pod and Service addresses may collide',
      ],
    ],
    [
      "10.244.0.0/16,fd00:10:244::/56",
      "10.96.0.0/12,fd00:10:244:0:1::/112",
      [
        'networking.podSubnet "fd00:10:244::/56" overlaps with networking.serviceSubnet "fd00:10:244:0:1::/112": Pod and Service addresses may collide',
      ],
    ],
    ["10.244.0.0/16", "10.96.0.0/12", []],
  ];

  it.each(overlapping)("pods %s, services %s: valid, warned %j", (pods, services, warnings) => {
    const c = base();
    c.cluster.networking.podSubnet = pods;
    c.cluster.networking.serviceSubnet = services;
    if (services.startsWith("fd")) c.init.localAPIEndpoint.advertiseAddress = "fd00::10";
    expect(validateInitConfig(c)).toEqual([]);
    expect(subnetOverlapWarnings(c.cluster.networking)).toEqual(warnings);
  });

  it("an absent service subnet is kubeadm's default 10.96.0.0/12", () => {
    expect(subnetOverlapWarnings({ podSubnet: "10.96.0.0/16" })).toHaveLength(1);
    expect(subnetOverlapWarnings({ podSubnet: "10.244.0.0/16" })).toEqual([]);
  });
});
