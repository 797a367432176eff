import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import {
  checksumForConfigMap,
  clusterConfigurationDocument,
  clusterConfigurationYAML,
  kubeadmConfigConfigMap,
  kubeletConfigConfigMap,
  mutateKubeadmConfigConfigMap,
  signConfigMap,
  verifyConfigMapSignature,
} from "../../../../src/manifests/upload-config.js";
import { releaseFor } from "../../../../src/config/versions.js";
import { marshalKubeletConfiguration } from "../../../../src/manifests/kubelet.js";
import { baseInitConfig } from "../../../support/init-fixtures.js";
import { kubectlReadYAML } from "./kubectl.js";
import { opensslSha256 } from "./tools.js";
import { expectValidObject } from "./valid.js";

const HASH = "kubeadm.kubernetes.io/component-config.hash";

describe("the uploaded ClusterConfiguration", () => {
  it("is kubeadm's document for its dry-run fixture's configuration", () => {
    // kubeadm: util/apiclient dry-run fixture getKubeadmConfigMap, whose hand-written text puts
    // controllerManager before controlPlaneEndpoint. kubeadm's marshalling (sigs.k8s.io/yaml
    // over goyaml.v2's key sort: 'P' < 'l') puts controlPlaneEndpoint first, as a real v1.28
    // cluster's kubeadm-config shows; that is the order expected here.
    const cfg = baseInitConfig({}, (c) => {
      c.cluster.certificateValidityPeriod = "100h";
      c.cluster.controllerManager.extraArgs = [{ name: "cluster-signing-duration", value: "24h" }];
      c.cluster.controlPlaneEndpoint = "192.168.0.101:6443";
      c.cluster.networking.podSubnet = "192.168.0.0/16";
    });
    expect(clusterConfigurationYAML(cfg.cluster)).toBe(`apiServer: {}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 100h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
controlPlaneEndpoint: 192.168.0.101:6443
controllerManager:
  extraArgs:
  - name: cluster-signing-duration
    value: 24h
dns: {}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
networking:
  dnsDomain: cluster.local
  podSubnet: 192.168.0.0/16
  serviceSubnet: 10.96.0.0/12
proxy: {}
scheduler: {}
`);
  });

  it("keeps only v1beta4 fields, with kubeadm's omitempty rules", async () => {
    const cfg = baseInitConfig({}, (c) => {
      c.cluster.etcd = { external: { endpoints: ["https://10.0.0.9:2379"], caFile: "" } };
      c.cluster.apiServer.certSANs = ["api.example.com"];
      c.cluster.apiServer.extraArgs = [{ name: "v", value: "" }];
      c.cluster.apiServer.extraVolumes = [
        { name: "audit", hostPath: "/var/log/a", mountPath: "/a", readOnly: false },
        {
          name: "on",
          hostPath: "/yes",
          mountPath: "/0644",
          readOnly: true,
          pathType: "DirectoryOrCreate",
        },
      ];
      c.cluster.scheduler.extraEnvs = [
        { name: "A", value: "" },
        { name: "B", value: "on" },
      ];
      c.cluster.dns = { imageTag: "v1.12.0", disabled: false };
      c.cluster.proxy = { disabled: true };
      c.cluster.featureGates = {
        WaitForAllControlPlaneComponents: true,
        ControlPlaneKubeletLocalMode: false,
      };
      // Internal fields the v1beta4 type does not have never leak.
      (c.cluster as unknown as Record<string, unknown>)["componentConfigs"] = { kubelet: {} };
    });
    const doc = clusterConfigurationDocument(cfg.cluster);
    expect(doc["etcd"]).toEqual({
      external: { endpoints: ["https://10.0.0.9:2379"], caFile: "", certFile: "", keyFile: "" },
    });
    expect(doc["apiServer"]).toEqual({
      extraArgs: [{ name: "v", value: "" }],
      extraVolumes: [
        { name: "audit", hostPath: "/var/log/a", mountPath: "/a" },
        {
          name: "on",
          hostPath: "/yes",
          mountPath: "/0644",
          readOnly: true,
          pathType: "DirectoryOrCreate",
        },
      ],
      certSANs: ["api.example.com"],
    });
    expect(doc["scheduler"]).toEqual({ extraEnvs: [{ name: "A" }, { name: "B", value: "on" }] });
    expect(doc["dns"]).toEqual({ imageTag: "v1.12.0" });
    expect(doc["proxy"]).toEqual({ disabled: true });
    expect(doc["componentConfigs"]).toBeUndefined();
    expect(Object.keys(doc).sort()).toEqual(
      [
        "apiServer",
        "apiVersion",
        "caCertificateValidityPeriod",
        "certificateValidityPeriod",
        "certificatesDir",
        "clusterName",
        "controllerManager",
        "dns",
        "encryptionAlgorithm",
        "etcd",
        "featureGates",
        "imageRepository",
        "kind",
        "kubernetesVersion",
        "networking",
        "proxy",
        "scheduler",
      ].sort(),
    );
    // Kubernetes' YAML reader sees the same document ("on", "0644", "" survive).
    expect(await kubectlReadYAML(clusterConfigurationYAML(cfg.cluster))).toEqual(doc);
  });

  it("is stored under ClusterConfiguration in kube-system/kubeadm-config", async () => {
    const cfg = baseInitConfig();
    const cm = kubeadmConfigConfigMap(cfg.cluster);
    expect(cm.metadata).toEqual({ name: "kubeadm-config", namespace: "kube-system" });
    expect(cm["data"]).toEqual({ ClusterConfiguration: clusterConfigurationYAML(cfg.cluster) });
    await expectValidObject(cm);
  });

  it("replaces only its key of an existing kubeadm-config (CreateOrMutate)", () => {
    const cfg = baseInitConfig();
    const existing: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kubeadm-config", namespace: "kube-system", resourceVersion: "42" },
      data: { ClusterConfiguration: "old", ClusterStatus: "kept" },
    };
    const out = mutateKubeadmConfigConfigMap(existing, cfg.cluster);
    expect(out.metadata.resourceVersion).toBe("42");
    expect(out["data"]).toEqual({
      ClusterConfiguration: clusterConfigurationYAML(cfg.cluster),
      ClusterStatus: "kept",
    });
    expect((existing["data"] as Record<string, string>)["ClusterConfiguration"]).toBe("old");
  });
});

describe("checksumForConfigMap (kubeadm's componentconfigs/checksums_test.go)", () => {
  const cm = (data?: Record<string, string>, binaryData?: Record<string, string>): KubeObject => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "le-config", namespace: "le-namespace", labels: { label1: "value1" } },
    ...(data ? { data } : {}),
    ...(binaryData ? { binaryData } : {}),
  });
  const baz = Buffer.from("baz").toString("base64");
  it.each([
    [
      "both data and binaryData",
      cm({ foo: "bar" }, { bar: baz }),
      "sha256:c8f8b724728a6d6684106e5e64e94ce811c9965d19dd44dd073cf86cf43bc238",
    ],
    [
      "keys have no effect",
      cm({ foo2: "bar" }, { bar2: baz }),
      "sha256:c8f8b724728a6d6684106e5e64e94ce811c9965d19dd44dd073cf86cf43bc238",
    ],
    [
      "without binaryData",
      cm({ foo: "bar" }),
      "sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9",
    ],
    [
      "without data",
      cm(undefined, { bar: baz }),
      "sha256:baa5a0964d3320fbc0c6a922140453c8513ea24ab8fd0577034804a967248096",
    ],
  ])("%s", (_name, configMap, want) => {
    expect(checksumForConfigMap(configMap)).toBe(want);
  });

  it("hashes the values in key order, as openssl computes over them", async () => {
    const configMap = cm({ b: "second\n", a: "first\n", "a.b": "third" });
    const want = await opensslSha256(Buffer.from("first\nthird" + "second\n"));
    expect(checksumForConfigMap(configMap)).toBe(`sha256:${want}`);
  });

  it("signs and verifies as SignConfigMap / VerifyConfigMapSignature", () => {
    const signed = signConfigMap({
      ...cm({ foo: "bar" }, { bar: baz }),
      metadata: { name: "x", annotations: { a: "1" } },
    });
    expect(signed.metadata.annotations).toEqual({
      a: "1",
      [HASH]: "sha256:c8f8b724728a6d6684106e5e64e94ce811c9965d19dd44dd073cf86cf43bc238",
    });
    expect(verifyConfigMapSignature(signed)).toBe(true);
    expect(verifyConfigMapSignature(cm({ foo: "bar" }))).toBe(false);
    signed.metadata.annotations![HASH] =
      "sha256:832cb34fc68fc370dd44dd91d5699c118ec49e46e5e6014866d6a827427b8f8c";
    expect(verifyConfigMapSignature(signed)).toBe(false);
  });
});

describe("kubelet-config", () => {
  it("carries the KubeletConfiguration under `kubelet`, signed over exactly those bytes", async () => {
    const cfg = baseInitConfig();
    const cm = kubeletConfigConfigMap(cfg.kubelet, false, releaseFor("v1.35.0"));
    expect(cm.metadata.name).toBe("kubelet-config");
    expect(cm.metadata.namespace).toBe("kube-system");
    const text = (cm["data"] as Record<string, string>)["kubelet"]!;
    expect(await kubectlReadYAML(text)).toEqual(
      marshalKubeletConfiguration(cfg.kubelet, releaseFor("v1.35.0")),
    );
    // kubeadm marshals the whole struct: the field without omitempty is there, empty.
    expect(text).toContain('\ncontainerRuntimeEndpoint: ""\n');
    const digest = await opensslSha256(Buffer.from(text));
    expect(cm.metadata.annotations).toEqual({ [HASH]: `sha256:${digest}` });
    await expectValidObject(cm);
  });

  it("has no hash annotation when the user supplied the KubeletConfiguration", async () => {
    const cm = kubeletConfigConfigMap(baseInitConfig().kubelet, true, releaseFor("v1.35.0"));
    expect(cm.metadata.annotations).toBeUndefined();
    await expectValidObject(cm);
  });
});
