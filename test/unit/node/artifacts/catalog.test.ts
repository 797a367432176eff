import { describe, expect, it } from "vitest";
import {
  cniPluginsVersion,
  crictlVersion,
  goArch,
  OFFICIAL_SOURCES,
  releaseArtifacts,
} from "../../../../src/node/artifacts/catalog.js";

describe("goArch", () => {
  it.each([
    ["x64", "amd64"],
    ["arm64", "arm64"],
  ])("maps Node's %s to Go's %s", (node, go) => {
    expect(goArch(node)).toBe(go);
  });

  it.each(["arm", "ia32", "ppc64", "s390x", "riscv64", "amd64", ""])(
    "refuses %j, naming it and the supported ones",
    (arch) => {
      expect(() => goArch(arch)).toThrow(
        new RegExp(`architecture "${arch}" is not supported: .*amd64.*arm64`),
      );
    },
  );
});

describe("releaseArtifacts", () => {
  it("lists the official URLs of the install-kubeadm page for amd64", () => {
    expect(releaseArtifacts("v1.35.2", "x64")).toEqual([
      {
        name: "kubelet",
        version: "v1.35.2",
        arch: "amd64",
        url: "https://dl.k8s.io/release/v1.35.2/bin/linux/amd64/kubelet",
        checksumUrl: "https://dl.k8s.io/release/v1.35.2/bin/linux/amd64/kubelet.sha256",
        format: "binary",
      },
      {
        name: "kubectl",
        version: "v1.35.2",
        arch: "amd64",
        url: "https://dl.k8s.io/release/v1.35.2/bin/linux/amd64/kubectl",
        checksumUrl: "https://dl.k8s.io/release/v1.35.2/bin/linux/amd64/kubectl.sha256",
        format: "binary",
      },
      {
        name: "crictl",
        version: "v1.35.0",
        arch: "amd64",
        url: "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.35.0/crictl-v1.35.0-linux-amd64.tar.gz",
        checksumUrl:
          "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.35.0/crictl-v1.35.0-linux-amd64.tar.gz.sha256",
        format: "tar.gz",
      },
      {
        name: "cni-plugins",
        version: "v1.8.0",
        arch: "amd64",
        url: "https://github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz",
        checksumUrl:
          "https://github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz.sha256",
        format: "tar.gz",
      },
    ]);
  });

  it("uses arm64 in every URL for an arm64 node, and accepts a version without its v", () => {
    const urls = releaseArtifacts("1.34.1", "arm64").map((a) => a.url);
    expect(urls).toEqual([
      "https://dl.k8s.io/release/v1.34.1/bin/linux/arm64/kubelet",
      "https://dl.k8s.io/release/v1.34.1/bin/linux/arm64/kubectl",
      "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.34.0/crictl-v1.34.0-linux-arm64.tar.gz",
      "https://github.com/containernetworking/plugins/releases/download/v1.7.1/cni-plugins-linux-arm64-v1.7.1.tgz",
    ]);
  });

  it("puts every artifact under the given base URLs (trailing slashes ignored), the others stay official", () => {
    const a = releaseArtifacts("v1.36.0", "x64", { kubernetes: "https://mirror.test/k8s/" });
    expect(a.map((x) => x.url)).toEqual([
      "https://mirror.test/k8s/v1.36.0/bin/linux/amd64/kubelet",
      "https://mirror.test/k8s/v1.36.0/bin/linux/amd64/kubectl",
      `${OFFICIAL_SOURCES.crictl}/v1.36.0/crictl-v1.36.0-linux-amd64.tar.gz`,
      `${OFFICIAL_SOURCES.cniPlugins}/v1.9.1/cni-plugins-linux-amd64-v1.9.1.tgz`,
    ]);
    for (const x of a) expect(x.checksumUrl).toBe(`${x.url}.sha256`);
  });

  it("refuses labels, unsupported minors and unsupported architectures before building a URL", () => {
    expect(() => releaseArtifacts("stable", "x64")).toThrow(
      /"stable" is not an exact Kubernetes version/,
    );
    expect(() => releaseArtifacts("v1.29.3", "x64")).toThrow(/v1\.29\.3 is not supported/);
    expect(() => releaseArtifacts("v1.35.0", "s390x")).toThrow(/architecture "s390x"/);
  });
});

describe("companion versions", () => {
  it.each([
    ["v1.33.5", "v1.33.0", "v1.6.2"],
    ["v1.34.0", "v1.34.0", "v1.7.1"],
    ["v1.35.9", "v1.35.0", "v1.8.0"],
    ["v1.36.3", "v1.36.0", "v1.9.1"],
    ["v1.37.1", "v1.37.0", "v1.9.1"],
  ])("Kubernetes %s: crictl %s (same minor), CNI plugins %s", (k8s, crictl, cni) => {
    expect(crictlVersion(k8s)).toBe(crictl);
    expect(cniPluginsVersion(k8s)).toBe(cni);
  });
});
