import { describe, expect, it } from "vitest";
import { addonMismatches, expectedAddonImages } from "../../../../src/cluster/upgrade/addons.js";

// What kubeadm's target installs for CoreDNS and kube-proxy, and the sentence naming an addon
// that is not there. Expected images: kubeadm v1.35 cmd/kubeadm/app/constants/constants.go
// (CoreDNSVersion "v1.13.1"; CoreDNS under "<registry.k8s.io>/coredns", images.GetDNSImage) and
// kube-proxy tagged with the Kubernetes version (images.GetKubernetesImage).

const cluster = { imageRepository: "registry.k8s.io", dns: {}, proxy: {} };

describe("expectedAddonImages", () => {
  it("names kubeadm v1.35's CoreDNS and kube-proxy images", () => {
    expect(expectedAddonImages(cluster, "v1.35.0")).toEqual([
      {
        addon: "CoreDNS",
        kind: "Deployment",
        name: "coredns",
        expected: "registry.k8s.io/coredns/coredns:v1.13.1",
      },
      {
        addon: "kube-proxy",
        kind: "DaemonSet",
        name: "kube-proxy",
        expected: "registry.k8s.io/kube-proxy:v1.35.0",
      },
    ]);
  });

  it("honours a custom repository and CoreDNS tag, and leaves disabled addons out", () => {
    const custom = {
      imageRepository: "mirror.example/k8s",
      dns: { imageTag: "v1.99.0" },
      proxy: { disabled: true },
    };
    expect(expectedAddonImages(custom, "v1.35.2").map((a) => a.expected)).toEqual([
      "mirror.example/k8s/coredns:v1.99.0",
    ]);
  });
});

describe("addonMismatches", () => {
  const wanted = expectedAddonImages(cluster, "v1.35.0");

  it("is empty when both run the target's images", () => {
    const running = new Map(wanted.map((a) => [a.name, a.expected]));
    expect(addonMismatches(wanted, running, "v1.35.0")).toEqual([]);
  });

  it("names each addon left behind or missing, with what it runs and what kubeadm installs", () => {
    const running = new Map<string, string | undefined>([
      ["coredns", "registry.k8s.io/coredns/coredns:v1.12.1"],
    ]);
    expect(addonMismatches(wanted, running, "v1.35.0")).toEqual([
      "the addon CoreDNS (kube-system/coredns) runs registry.k8s.io/coredns/coredns:v1.12.1, not registry.k8s.io/coredns/coredns:v1.13.1 that kubeadm v1.35.0 installs",
      "the addon kube-proxy (kube-system/kube-proxy) is missing; kubeadm v1.35.0 installs registry.k8s.io/kube-proxy:v1.35.0",
    ]);
  });
});
