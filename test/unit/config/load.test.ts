import { describe, expect, it } from "vitest";
import { ConfigError, decodeConfigDocuments } from "../../../src/config/load.js";

const V4 = "apiVersion: kubeadm.k8s.io/v1beta4";
const V3 = "apiVersion: kubeadm.k8s.io/v1beta3";

function problems(text: string): string[] {
  try {
    decodeConfigDocuments(text, "config.yaml");
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error("expected the file to be refused");
}

const GOOD_V1BETA4 = `${V4}
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
  ttl: 2h
localAPIEndpoint:
  advertiseAddress: 192.0.2.10
  bindPort: 6443
nodeRegistration:
  name: cp-1
  taints: []
  kubeletExtraArgs:
  - name: node-ip
    value: 192.0.2.10
timeouts:
  controlPlaneComponentHealthCheck: 5m
---
${V4}
kind: ClusterConfiguration
kubernetesVersion: v1.35.2
controlPlaneEndpoint: cp.example.com
networking:
  podSubnet: 10.244.0.0/16
apiServer:
  certSANs: [cp.example.com]
  extraArgs:
  - {name: audit-log-path, value: /var/log/audit.log}
  - {name: audit-log-path, value: /var/log/audit2.log}
featureGates:
  RootlessControlPlane: false
etcd:
  local:
    dataDir: /data/etcd
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
someFutureField: {x: 1}
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
---
${V4}
kind: ResetConfiguration
force: true
`;

describe("decodeConfigDocuments: good files", () => {
  it("routes every v1beta4 document and keeps component configs as given", () => {
    const docs = decodeConfigDocuments(GOOD_V1BETA4, "config.yaml");
    expect(docs.init).toEqual({
      bootstrapTokens: [{ token: "abcdef.0123456789abcdef", ttl: "2h0m0s" }],
      localAPIEndpoint: { advertiseAddress: "192.0.2.10", bindPort: 6443 },
      nodeRegistration: {
        name: "cp-1",
        taints: [],
        kubeletExtraArgs: [{ name: "node-ip", value: "192.0.2.10" }],
      },
      timeouts: { controlPlaneComponentHealthCheck: "5m0s" },
    });
    expect(docs.cluster?.apiServer?.extraArgs).toHaveLength(2); // v1beta4 allows repeats
    expect(docs.cluster?.etcd).toEqual({ local: { dataDir: "/data/etcd" } });
    expect(docs.cluster?.featureGates).toEqual({ RootlessControlPlane: false });
    expect(docs.kubelet).toEqual({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      cgroupDriver: "cgroupfs",
      someFutureField: { x: 1 },
    });
    expect(docs.kubeProxy?.mode).toBe("nftables");
    expect(docs.ignoredKinds).toEqual(["ResetConfiguration"]);
    expect(docs.join).toBeUndefined();
    expect(docs.warnings).toBeUndefined();
  });

  it("treats null as absent (taints: null means kubeadm's default taint)", () => {
    const docs = decodeConfigDocuments(
      `${V4}\nkind: InitConfiguration\nnodeRegistration:\n  taints: null\n  name: ~\n`,
      "c.yaml",
    );
    expect(docs.init).toEqual({ nodeRegistration: {} });
  });

  it("decodes a JoinConfiguration", () => {
    const docs = decodeConfigDocuments(
      `${V4}\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: 10.0.0.1:6443\n    token: abcdef.0123456789abcdef\n    caCertHashes: [sha256:${"a".repeat(64)}]\ncontrolPlane:\n  certificateKey: ${"b".repeat(64)}\n`,
      "join.yaml",
    );
    expect(docs.join?.discovery?.bootstrapToken?.apiServerEndpoint).toBe("10.0.0.1:6443");
    expect(docs.join?.controlPlane?.certificateKey).toHaveLength(64);
  });
});

describe("decodeConfigDocuments: v1beta3 is converted", () => {
  const v3 = `${V3}
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
    node-ip: 192.0.2.10
    cgroup-driver: systemd
---
${V3}
kind: ClusterConfiguration
apiServer:
  timeoutForControlPlane: 7m
  extraArgs:
    b-flag: "2"
    a-flag: "1"
controllerManager:
  extraArgs: {bind-address: 0.0.0.0}
etcd:
  local:
    extraArgs: {listen-metrics-urls: "http://0.0.0.0:2381"}
---
${V3}
kind: JoinConfiguration
discovery:
  timeout: 2m
  file:
    kubeConfigPath: /etc/kubernetes/discovery.conf
`;

  it("sorts extraArgs maps into lists and moves timeouts", () => {
    const docs = decodeConfigDocuments(v3, "old.yaml");
    expect(docs.init?.nodeRegistration).toEqual({
      kubeletExtraArgs: [
        { name: "cgroup-driver", value: "systemd" },
        { name: "node-ip", value: "192.0.2.10" },
      ],
      imagePullSerial: true,
    });
    expect(docs.init?.timeouts).toEqual({ controlPlaneComponentHealthCheck: "7m0s" });
    expect(docs.cluster?.apiServer).toEqual({
      extraArgs: [
        { name: "a-flag", value: "1" },
        { name: "b-flag", value: "2" },
      ],
    });
    expect(docs.cluster?.controllerManager?.extraArgs).toEqual([
      { name: "bind-address", value: "0.0.0.0" },
    ]);
    expect(docs.cluster?.etcd?.local?.extraArgs).toEqual([
      { name: "listen-metrics-urls", value: "http://0.0.0.0:2381" },
    ]);
    expect(docs.join?.timeouts).toEqual({ discovery: "2m0s" });
    expect(docs.join?.discovery).toEqual({
      file: { kubeConfigPath: "/etc/kubernetes/discovery.conf" },
    });
    expect(docs.warnings).toHaveLength(3);
    expect(docs.warnings?.[0]).toContain("deprecated API version kubeadm.k8s.io/v1beta3");
  });

  it("keeps a control-plane timeout given only in a v1beta3 ClusterConfiguration", () => {
    const docs = decodeConfigDocuments(
      `${V3}\nkind: ClusterConfiguration\napiServer:\n  timeoutForControlPlane: 3m\n`,
      "c.yaml",
    );
    expect(docs.init?.timeouts?.controlPlaneComponentHealthCheck).toBe("3m0s");
  });

  it("refuses v1beta4-only fields in a v1beta3 document", () => {
    expect(problems(`${V3}\nkind: ClusterConfiguration\nencryptionAlgorithm: RSA-2048\n`)).toEqual([
      'config.yaml: ClusterConfiguration: unknown field "encryptionAlgorithm"',
    ]);
  });
});

describe("decodeConfigDocuments: each bad input gives one sentence", () => {
  it.each([
    [
      "unknown field, with its path",
      `${V4}\nkind: ClusterConfiguration\nnetworking:\n  podSubent: 10.244.0.0/16\n`,
      ['config.yaml: ClusterConfiguration: unknown field "networking.podSubent"'],
    ],
    [
      "unknown field inside a list item",
      `${V4}\nkind: InitConfiguration\nbootstrapTokens:\n- tokn: x\n`,
      ['config.yaml: InitConfiguration: unknown field "bootstrapTokens[0].tokn"'],
    ],
    [
      "metadata is not a kubeadm field",
      `${V4}\nkind: InitConfiguration\nmetadata:\n  name: x\n`,
      ['config.yaml: InitConfiguration: unknown field "metadata"'],
    ],
    [
      "type error on an integer",
      `${V4}\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: "6443"\n`,
      [
        'config.yaml: InitConfiguration: field "localAPIEndpoint.bindPort" must be an integer, got string "6443"',
      ],
    ],
    [
      "type error on a boolean written as a string",
      `${V4}\nkind: InitConfiguration\ndryRun: "true"\n`,
      ['config.yaml: InitConfiguration: field "dryRun" must be true or false, got string "true"'],
    ],
    [
      "a mapping where a list belongs",
      `${V4}\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n    audit-log-path: /x\n`,
      [
        'config.yaml: ClusterConfiguration: field "apiServer.extraArgs" must be a list, got a mapping',
      ],
    ],
    [
      "a duration that is not one",
      `${V4}\nkind: InitConfiguration\ntimeouts:\n  kubeletHealthCheck: 4 minutes\n`,
      [
        'config.yaml: InitConfiguration: field "timeouts.kubeletHealthCheck": "4 minutes" is not a valid duration (examples: "24h0m0s", "90s")',
      ],
    ],
    [
      "a duration written as a number",
      `${V4}\nkind: InitConfiguration\nbootstrapTokens:\n- ttl: 0\n`,
      [
        'config.yaml: InitConfiguration: field "bootstrapTokens[0].ttl" must be a duration string such as "24h0m0s", got number 0',
      ],
    ],
    [
      "unknown kind",
      `${V4}\nkind: InitConfig\n`,
      ['config.yaml: unknown kind "InitConfig" for apiVersion "kubeadm.k8s.io/v1beta4"'],
    ],
    [
      "unknown apiVersion of kubeadm",
      `apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n`,
      [
        expect.stringMatching(
          /^config\.yaml: apiVersion "kubeadm\.k8s\.io\/v1beta2" \(kind "ClusterConfiguration"\) is not supported/,
        ),
      ],
    ],
    [
      "unknown document",
      `apiVersion: v1\nkind: ConfigMap\n`,
      [
        expect.stringMatching(
          /^config\.yaml: unknown document with apiVersion "v1" and kind "ConfigMap"/,
        ),
      ],
    ],
    [
      "component config of the wrong version",
      `apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n`,
      [
        'config.yaml: KubeletConfiguration must have apiVersion "kubelet.config.k8s.io/v1beta1", not "kubelet.config.k8s.io/v1"',
      ],
    ],
    [
      "duplicate kinds",
      `${V4}\nkind: ClusterConfiguration\n---\n${V3}\nkind: ClusterConfiguration\n`,
      ["config.yaml: kind ClusterConfiguration appears more than once (documents 1 and 2)"],
    ],
    [
      "missing apiVersion",
      `kind: ClusterConfiguration\n`,
      ["config.yaml: document 1 has no apiVersion; every document needs apiVersion and kind"],
    ],
    [
      "missing both",
      `networking: {}\n`,
      [
        "config.yaml: document 1 has no apiVersion and no kind; every document needs apiVersion and kind",
      ],
    ],
    [
      "a list, not a document",
      `- a\n- b\n`,
      ["config.yaml: document 1 is a list, not a mapping with apiVersion and kind"],
    ],
    ["an empty file", ``, ["config.yaml: the file holds no YAML document"]],
  ])("%s", (_name, text, expected) => {
    expect(problems(text)).toEqual(expected);
  });

  it("reports every problem of a file at once", () => {
    const found = problems(
      `${V4}\nkind: ClusterConfiguration\nnetworking:\n  podSubent: x\nclusterNam: y\n---\nkind: Foo\n`,
    );
    expect(found).toHaveLength(3);
  });

  it("names the file and line of a YAML syntax error", () => {
    expect(() => decodeConfigDocuments(`${V4}\nkind: [\n`, "config.yaml")).toThrow(
      /^config\.yaml is not valid YAML at line 3/,
    );
  });
});
