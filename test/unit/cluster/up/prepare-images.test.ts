import { describe, expect, it } from "vitest";
import {
  artifactsOf,
  customKubeletOf,
  downloadPlan,
  kubeletAllowsSwap,
  kubeletCgroupDriver,
  type Downloads,
  nodeImages,
  sandboxImage,
} from "../../../../src/cluster/up/prepare.js";
import { defaultClusterSpec } from "../../../../src/config/cluster/defaults.js";
import type { ClusterNodeSpec, ClusterSpec } from "../../../../src/config/cluster/types.js";
import type { FetchedArtifact } from "../../../../src/node/artifacts/fetch.js";
import { releaseFor } from "../../../../src/config/versions.js";
import { firstControlPlaneConfig } from "../../../support/up-config.js";

const V = "v1.35.2";
const R = releaseFor(V);

/** The cluster's configuration as up's first control plane builds it from this Cluster. */
const cfg = (s: ClusterSpec, version = V) => firstControlPlaneConfig(s, version);

function spec(documents?: string, skipPhases?: string[]): ClusterSpec {
  const s = defaultClusterSpec();
  return {
    ...s,
    kubeadm: documents ? { documents } : {},
    ...(skipPhases ? { skipPhases } : {}),
  };
}

describe("nodeImages", () => {
  it("a control plane gets kubeadm's `config images list`, in its order", () => {
    // kubeadm images.GetControlPlaneImages with the default ClusterConfiguration.
    expect(nodeImages(cfg(spec()), "control-plane", R)).toEqual([
      `registry.k8s.io/kube-apiserver:${V}`,
      `registry.k8s.io/kube-controller-manager:${V}`,
      `registry.k8s.io/kube-scheduler:${V}`,
      `registry.k8s.io/kube-proxy:${V}`,
      `registry.k8s.io/coredns/coredns:${R.coreDNSVersion}`,
      `registry.k8s.io/pause:${R.pauseVersion}`,
      `registry.k8s.io/etcd:${R.etcdVersion}`,
    ]);
  });

  it("a worker gets pause, kube-proxy and CoreDNS", () => {
    expect(nodeImages(cfg(spec()), "worker", R)).toEqual([
      `registry.k8s.io/pause:${R.pauseVersion}`,
      `registry.k8s.io/kube-proxy:${V}`,
      `registry.k8s.io/coredns/coredns:${R.coreDNSVersion}`,
    ]);
  });

  it("follows the user's ClusterConfiguration: repositories, tags, disabled addons, external etcd", () => {
    const docs = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
imageRepository: mirror.example.com/k8s
dns: {imageTag: v9.9.9}
proxy: {disabled: true}
etcd: {external: {endpoints: ["https://10.0.0.1:2379"], caFile: /ca, certFile: /c, keyFile: /k}}
`;
    expect(nodeImages(cfg(spec(docs), "v1.35.2+build.1"), "control-plane", R)).toEqual([
      "mirror.example.com/k8s/kube-apiserver:v1.35.2_build.1",
      "mirror.example.com/k8s/kube-controller-manager:v1.35.2_build.1",
      "mirror.example.com/k8s/kube-scheduler:v1.35.2_build.1",
      // A custom repository gets no "/coredns" suffix (kubeadm GetDNSImage).
      "mirror.example.com/k8s/coredns:v9.9.9",
      `mirror.example.com/k8s/pause:${R.pauseVersion}`,
    ]);
    expect(sandboxImage(cfg(spec(docs)), R)).toBe(`mirror.example.com/k8s/pause:${R.pauseVersion}`);
  });

  it.each([
    [["addon/kube-proxy"], ["kube-proxy"]],
    [["addon/coredns"], ["coredns"]],
    [["addon"], ["kube-proxy", "coredns"]],
  ])(
    "skipping %j leaves out %j (kubeadm init disables the addon: manageSkippedAddons)",
    (skip, gone) => {
      const images = nodeImages(cfg(spec(undefined, skip)), "worker", R);
      for (const name of gone) expect(images.join(" ")).not.toContain(`/${name}:`);
      expect(images).toContain(`registry.k8s.io/pause:${R.pauseVersion}`);
    },
  );

  it("reads InitConfiguration.skipPhases too", () => {
    const docs =
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nskipPhases: [addon/coredns]\n";
    expect(nodeImages(cfg(spec(docs)), "control-plane", R).join(" ")).not.toContain("coredns");
  });
});

describe("kubeletCgroupDriver", () => {
  it("is systemd by default (kubeadm's default) and the KubeletConfiguration's when set", () => {
    expect(kubeletCgroupDriver(cfg(spec()))).toBe("systemd");
    expect(
      kubeletCgroupDriver(
        cfg(
          spec(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n",
          ),
        ),
      ),
    ).toBe("cgroupfs");
  });
});

describe("kubeletAllowsSwap", () => {
  const kubelet = (body: string) =>
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${body}`;

  it("only a KubeletConfiguration with failSwapOn: false keeps swap on", () => {
    expect(kubeletAllowsSwap(cfg(spec()))).toBe(false);
    expect(kubeletAllowsSwap(cfg(spec(kubelet("cgroupDriver: systemd\n"))))).toBe(false);
    expect(kubeletAllowsSwap(cfg(spec(kubelet("failSwapOn: true\n"))))).toBe(false);
    expect(
      kubeletAllowsSwap(
        cfg(spec(kubelet("failSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\n"))),
      ),
    ).toBe(true);
  });
});

describe("a custom kubelet on one node, the released one on another", () => {
  const cp: ClusterNodeSpec = { name: "cp", role: "control-plane", host: "ssh://root@10.0.0.1" };
  const w: ClusterNodeSpec = {
    name: "w",
    role: "worker",
    host: "ssh://root@10.0.0.2",
    kubeletBinary: "/ws/kubelet",
  };
  const artifact = (name: string, version: string, from: string): FetchedArtifact => ({
    name,
    version,
    arch: "amd64",
    path: from,
    files: [{ from, to: `/usr/local/bin/${name}`, mode: 0o755 }],
    sha256: "0".repeat(64),
    source: from,
  });
  const official = [
    artifact("kubelet", V, "/cache/kubelet"),
    artifact("kubectl", V, "/cache/kubectl"),
  ];
  const custom = artifact("kubelet", "custom", "/ws/kubelet");
  const s = { ...spec(), nodes: [cp, w] };

  it("downloads the released kubelet too, and the custom one once", () => {
    const plan = downloadPlan(s, [
      { node: cp, arch: "x64" },
      { node: w, arch: "x64" },
    ]);
    expect([...plan.arches]).toEqual([["amd64", { nodeArch: "x64", needsKubelet: true }]]);
    expect(plan.sources).toEqual(["/ws/kubelet"]);
    // Every node bringing its own: the released kubelet is not downloaded.
    expect(downloadPlan(s, [{ node: w, arch: "x64" }]).arches.get("amd64")!.needsKubelet).toBe(
      false,
    );
  });

  it("installs the custom kubelet last on its node (it replaces the released one), only there", () => {
    const downloads: Downloads = {
      official: new Map([["amd64", official]]),
      custom: new Map([["/ws/kubelet", custom]]),
    };
    expect(artifactsOf(s, downloads, cp, "x64")).toEqual(official);
    expect(artifactsOf(s, downloads, w, "x64")).toEqual([...official, custom]);
  });

  it("a node's own kubeletBinary wins over the Cluster's", () => {
    const withClusterWide = { ...s, kubeletBinary: "/ws/cluster-kubelet" };
    expect(customKubeletOf(withClusterWide, cp)).toBe("/ws/cluster-kubelet");
    expect(customKubeletOf(withClusterWide, w)).toBe("/ws/kubelet");
  });
});
