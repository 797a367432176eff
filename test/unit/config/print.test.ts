import { describe, expect, it } from "vitest";
import { defaultInitConfig } from "../../../src/config/defaults.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import { initDefaultsYAML, joinDefaultsYAML } from "../../../src/config/print.js";
import {
  validateConfigDocuments,
  validateInitConfig,
  validateJoinConfiguration,
} from "../../../src/config/validate.js";
import { RELEASES, releaseFor } from "../../../src/config/versions.js";
import { parseYAMLDocuments } from "../../../src/config/yaml.js";
import { defaultComponentConfigDocuments } from "../../../src/manifests/component-config-defaults.js";

describe("config print init-defaults", () => {
  const text = initDefaultsYAML();

  it("prints kubeadm's two v1beta4 documents with its placeholders", () => {
    const [init, cluster] = text.split("---\n");
    expect(init).toContain(
      "apiVersion: kubeadm.k8s.io/v1beta4\nbootstrapTokens:\n- groups:\n  - system:bootstrappers:kubeadm:default-node-token\n  token: abcdef.0123456789abcdef\n  ttl: 24h0m0s\n  usages:\n  - signing\n  - authentication\nkind: InitConfiguration\n",
    );
    expect(init).toContain("localAPIEndpoint:\n  advertiseAddress: 1.2.3.4\n  bindPort: 6443\n");
    expect(init).toContain("  name: node\n  taints: null\n");
    expect(init).toContain("timeouts:\n  controlPlaneComponentHealthCheck: 4m0s\n");
    expect(cluster).toContain(
      "caCertificateValidityPeriod: 87600h0m0s\ncertificateValidityPeriod: 8760h0m0s\n",
    );
    // constants.CurrentKubernetesVersion (v1.N.0 of kubeadm's own minor) printed through
    // apimachinery's version.Version.String(), which has no "v".
    expect(cluster).toContain(`kubernetesVersion: 1.${RELEASES.at(-1)!.minor}.0\n`);
  });

  it("prints the .0 of the imitated kubeadm's own minor", () => {
    for (const minor of [33, 35, 37]) {
      const printed = initDefaultsYAML({ release: releaseFor(`v1.${minor}.4`) });
      expect(printed).toContain(`\nkubernetesVersion: 1.${minor}.0\n`);
    }
  });

  it("reads back through decodeConfigDocuments to the same objects (round trip)", () => {
    const docs = decodeConfigDocuments(text, "init-defaults.yaml");
    expect(docs.init).toEqual({
      bootstrapTokens: [
        {
          groups: ["system:bootstrappers:kubeadm:default-node-token"],
          token: "abcdef.0123456789abcdef",
          ttl: "24h0m0s",
          usages: ["signing", "authentication"],
        },
      ],
      localAPIEndpoint: { advertiseAddress: "1.2.3.4", bindPort: 6443 },
      nodeRegistration: {
        criSocket: "unix:///var/run/containerd/containerd.sock",
        imagePullPolicy: "IfNotPresent",
        imagePullSerial: true,
        name: "node",
      },
      timeouts: {
        controlPlaneComponentHealthCheck: "4m0s",
        discovery: "5m0s",
        etcdAPICall: "2m0s",
        kubeletHealthCheck: "4m0s",
        kubernetesAPICall: "1m0s",
        tlsBootstrap: "5m0s",
        upgradeManifests: "5m0s",
      },
    });
    expect(validateConfigDocuments(docs)).toEqual([]);
  });

  it("is a fixed point of defaulting: the printed values are the defaults", () => {
    const docs = decodeConfigDocuments(text, "init-defaults.yaml");
    const version = RELEASES.at(-1)!.knownPatch;
    const cfg = defaultInitConfig(docs, {
      resolved: { version, release: releaseFor(version), source: "test" },
      nodeName: "ignored",
      advertiseAddress: "192.0.2.99",
      generateToken: () => "zzzzzz.zzzzzzzzzzzzzzzz",
    });
    const fromNothing = defaultInitConfig(
      { ignoredKinds: [] },
      {
        resolved: { version, release: releaseFor(version), source: "test" },
        nodeName: "node",
        advertiseAddress: "1.2.3.4",
        generateToken: () => "abcdef.0123456789abcdef",
      },
    );
    expect(cfg).toEqual(fromNothing);
    expect(validateInitConfig(cfg)).toEqual([]);
  });
});

describe("config print join-defaults", () => {
  it("prints kubeadm's JoinConfiguration and reads back", () => {
    const text = joinDefaultsYAML();
    expect(text).toContain(
      "discovery:\n  bootstrapToken:\n    apiServerEndpoint: kube-apiserver:6443\n    token: abcdef.0123456789abcdef\n    unsafeSkipCAVerification: true\n  tlsBootstrapToken: abcdef.0123456789abcdef\n",
    );
    const docs = decodeConfigDocuments(text, "join-defaults.yaml");
    expect(docs.join?.caCertPath).toBe("/etc/kubernetes/pki/ca.crt");
    expect(docs.join?.timeouts?.discovery).toBe("5m0s");
    expect(validateJoinConfiguration(docs.join!)).toEqual([]);
  });

  it("uses the host name when given, lower-cased as kubeadm", () => {
    expect(joinDefaultsYAML({ nodeName: "Worker-7" })).toContain("  name: worker-7\n");
  });
});

describe("config print --component-configs", () => {
  const release = releaseFor("v1.35.0");

  it("appends the defaulted kubelet and kube-proxy documents in the order asked", () => {
    const docs = defaultComponentConfigDocuments(
      ["KubeProxyConfiguration", "KubeletConfiguration"],
      release,
    ).map((d) => parseYAMLDocuments(d, "component.yaml")[0] as Record<string, unknown>);
    expect(docs.map((d) => d.kind)).toEqual(["KubeProxyConfiguration", "KubeletConfiguration"]);
    // componentconfigs/kubeproxy.go Default: IPv4 bind address for the 1.2.3.4 placeholder.
    expect(docs[0]).toMatchObject({
      bindAddress: "0.0.0.0",
      clientConnection: { kubeconfig: "/var/lib/kube-proxy/kubeconfig.conf" },
    });
    // componentconfigs/kubelet.go Default over the default ClusterConfiguration.
    expect(docs[1]).toMatchObject({
      cgroupDriver: "systemd",
      clusterDNS: ["10.96.0.10"],
      clusterDomain: "cluster.local",
      staticPodPath: "/etc/kubernetes/manifests",
      rotateCertificates: true,
      authentication: { x509: { clientCAFile: "/etc/kubernetes/pki/ca.crt" } },
    });
  });

  it("prints a file config validate accepts strictly, component documents included", () => {
    const text = [
      initDefaultsYAML({ release }),
      ...defaultComponentConfigDocuments(
        ["KubeletConfiguration", "KubeProxyConfiguration"],
        release,
      ),
    ].join("---\n");
    const docs = decodeConfigDocuments(text, "defaults.yaml");
    expect(docs.kubelet?.kind).toBe("KubeletConfiguration");
    expect(docs.kubeProxy?.kind).toBe("KubeProxyConfiguration");
    expect(validateConfigDocuments(docs)).toEqual([]);
  });

  it("refuses another kind with kubeadm's message (cmd/config.go mapLegacyKindsToGroups)", () => {
    expect(() => defaultComponentConfigDocuments(["KubeletConfig"], release)).toThrow(
      /^--component-configs needs to contain some of \[KubeProxyConfiguration KubeletConfiguration\]/,
    );
  });
});
