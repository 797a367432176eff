import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upgradeTargetVersion } from "../../../src/config/cluster/version.js";
import { defaultInitConfig } from "../../../src/config/defaults.js";
import type { ResolvedVersion } from "../../../src/config/release.js";
import {
  DEFAULT_CI_BASE_URL,
  DEFAULT_CI_IMAGE_REPOSITORY,
  isCIVersion,
  releaseFor,
  storedKubernetesVersion,
  versionRequest,
} from "../../../src/config/versions.js";
import { kubeProxyImage } from "../../../src/manifests/addons/kube-proxy.js";
import { controlPlaneImages } from "../../../src/manifests/images.js";
import { clusterConfigurationYAML } from "../../../src/manifests/upload-config.js";
import { imageName, versionOfImageTag } from "../../../src/manifests/static-pod.js";
import { releaseArtifacts } from "../../../src/node/artifacts/catalog.js";
import { resolveKubernetesVersion } from "../../../src/node/release-version.js";

// Upgrades to Kubernetes' CI builds ("ci/…"), as kubeadm handles them: util/version.go
// (KubernetesIsCIVersion, splitVersion, kubeCIBucketURL, KubernetesVersionToImageTag),
// util/config/common.go NormalizeKubernetesVersion (CIImageRepository only over the default
// imageRepository; CIKubernetesVersion "ci/<resolved>"), phases/uploadconfig UploadConfiguration
// (kubeadm-config records CIKubernetesVersion), constants DefaultCIImageRepository.

const BUILD = "v1.36.0-alpha.2.34+0123456789abcd";

describe("which versions are CI builds", () => {
  // kubeadm's util/version_test.go TestKubernetesIsCIVersion (its current regex has no ci-cross).
  it.each([
    ["", false],
    ["v1.0.0", false],
    ["release/v1.0.0", false],
    ["ci/latest-1", true],
    ["ci/v1.9.0-alpha.1.123+acbcbfd53bfa0a", true],
    ["ci/", false],
  ])("%j → %s", (text, expected) => {
    expect(isCIVersion(text)).toBe(expected);
  });

  it("takes a build and a label as upgrade targets only", () => {
    expect(versionRequest(`ci/${BUILD}`, { allowCI: true })).toEqual({
      resolved: {
        version: BUILD,
        release: releaseFor("v1.36.0"),
        source: `ci/${BUILD} as given`,
        ciBuild: true,
      },
    });
    expect(versionRequest("ci/latest-1.36", { allowCI: true })).toEqual({
      label: "latest-1.36",
      ciBuild: true,
    });
    expect(() => versionRequest("ci/latest-1.36")).toThrow(
      'Kubernetes version "ci/latest-1.36": a CI build (ci/...) can only be an upgrade target (kubeforge upgrade --to, upgrade apply); build the cluster at a release first',
    );
    expect(() => versionRequest("ci/k8s-master", { allowCI: true })).toThrow(
      'Kubernetes version "ci/k8s-master" is neither a CI build',
    );
  });

  it("is accepted by --to and upgrade-to as given, and refused naming the flag when malformed", () => {
    expect(upgradeTargetVersion(" ci/latest-1.36 ", "--to")).toBe("ci/latest-1.36");
    expect(upgradeTargetVersion("1.36", "--to")).toBe("stable-1.36");
    expect(() => upgradeTargetVersion("ci/v1.36", "upgrade-to")).toThrow(
      /^upgrade-to: Kubernetes version "ci\/v1\.36" is neither a CI build/,
    );
  });

  it("reads kubeadm-config's record of one back", () => {
    expect(storedKubernetesVersion(`ci/${BUILD}`)).toMatchObject({ version: BUILD, ciBuild: true });
    expect(storedKubernetesVersion("v1.36.3")).not.toHaveProperty("ciBuild");
    expect(() => storedKubernetesVersion("ci/latest")).toThrow(
      'kube-system/kubeadm-config records no exact Kubernetes version ("ci/latest")',
    );
  });
});

describe("resolving a CI label", () => {
  let server: Server;
  let base: string;
  const requests: string[] = [];
  let answers: Record<string, string> = {};

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push(req.url ?? "");
      const body = answers[req.url ?? ""];
      if (body === undefined) return void res.writeHead(404).end("not found");
      res.writeHead(200, { "content-type": "text/plain" }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ci`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const resolve = (spec: string) =>
    resolveKubernetesVersion(spec, {
      env: { KUBEFORGE_CI_BASE_URL: `${base}/` },
      fetch: globalThis.fetch,
      field: "--to",
      allowCI: true,
    });

  it("reads <base>/<label>.txt of the CI bucket", async () => {
    answers = { "/ci/latest-1.36.txt": `${BUILD}\n` };
    requests.length = 0;
    await expect(resolve("ci/latest-1.36")).resolves.toEqual({
      version: BUILD,
      release: releaseFor("v1.36.0"),
      source: `ci/latest-1.36 via ${base}/latest-1.36.txt`,
      ciBuild: true,
    });
    expect(requests).toEqual(["/ci/latest-1.36.txt"]);
    // kubeadm's own bucket when nothing overrides it.
    expect(DEFAULT_CI_BASE_URL).toBe("https://storage.googleapis.com/k8s-release-dev/ci");
  });

  it("has no offline answer: an unreachable label fails naming the URL", async () => {
    answers = {};
    await expect(resolve("ci/latest-1.36")).rejects.toThrow(
      `--to: could not fetch ci/latest-1.36 from ${base}/latest-1.36.txt (HTTP status 404); a CI build has no offline answer`,
    );
  });

  it("refuses a build newer than the newest minor kubeforge supports", async () => {
    answers = { "/ci/latest.txt": "v1.38.0-alpha.0.12+fedcba9876543210\n" };
    await expect(resolve("ci/latest")).rejects.toThrow(
      "--to: ci/latest is v1.38.0-alpha.0.12+fedcba9876543210, newer than the newest version kubeforge supports (v1.37)",
    );
  });

  it("refuses a CI label where a release is needed, before going online", async () => {
    requests.length = 0;
    await expect(
      resolveKubernetesVersion("ci/latest", { env: {}, fetch: globalThis.fetch }),
    ).rejects.toThrow("can only be an upgrade target");
    expect(requests).toEqual([]);
  });
});

describe("a CI build's configuration, images and binaries", () => {
  const resolved: ResolvedVersion = {
    version: BUILD,
    release: releaseFor(BUILD),
    source: "test",
    ciBuild: true,
  };
  const config = (imageRepository?: string) =>
    defaultInitConfig(
      {
        ignoredKinds: [],
        ...(imageRepository ? { cluster: { imageRepository } } : {}),
      },
      {
        resolved,
        nodeName: "cp-1",
        advertiseAddress: "10.0.0.4",
        generateToken: () => "abcdef.0123456789abcdef",
      },
    );

  it("takes the control plane and kube-proxy from the CI registry, the rest from imageRepository", () => {
    const cfg = config();
    expect(DEFAULT_CI_IMAGE_REPOSITORY).toBe("gcr.io/k8s-staging-ci-images");
    expect(cfg.cluster.ciImageRepository).toBe("gcr.io/k8s-staging-ci-images");
    expect(cfg.cluster.ciKubernetesVersion).toBe(`ci/${BUILD}`);
    const tag = "v1.36.0-alpha.2.34_0123456789abcd";
    expect(controlPlaneImages(cfg.cluster, resolved.release)).toEqual([
      `gcr.io/k8s-staging-ci-images/kube-apiserver:${tag}`,
      `gcr.io/k8s-staging-ci-images/kube-controller-manager:${tag}`,
      `gcr.io/k8s-staging-ci-images/kube-scheduler:${tag}`,
      `gcr.io/k8s-staging-ci-images/kube-proxy:${tag}`,
      `registry.k8s.io/coredns/coredns:${resolved.release.coreDNSVersion}`,
      `registry.k8s.io/pause:${resolved.release.pauseVersion}`,
      `registry.k8s.io/etcd:${resolved.release.etcdVersion}`,
    ]);
  });

  it("keeps a user's imageRepository for everything (NormalizeKubernetesVersion)", () => {
    const cfg = config("mirror.example.com/k8s");
    expect(cfg.cluster.ciImageRepository).toBeUndefined();
    expect(kubeProxyImage(cfg.cluster)).toBe(
      "mirror.example.com/k8s/kube-proxy:v1.36.0-alpha.2.34_0123456789abcd",
    );
  });

  it('is recorded in kubeadm-config as "ci/<version>"', () => {
    expect(clusterConfigurationYAML(config().cluster)).toContain(
      `kubernetesVersion: ci/${BUILD}\n`,
    );
  });

  // kubeadm's util/version_test.go TestKubernetesVersionToImageTag, and back.
  it("writes the build's '+' as '_' in a tag, and reads it back", () => {
    expect(imageName("r", "x", "v1.8.0-alpha.2.1231+afabd012389d53a")).toBe(
      "r/x:v1.8.0-alpha.2.1231_afabd012389d53a",
    );
    expect(versionOfImageTag("v1.8.0-alpha.2.1231_afabd012389d53a")).toBe(
      "v1.8.0-alpha.2.1231+afabd012389d53a",
    );
    expect(versionOfImageTag("v1.36.3")).toBe("v1.36.3");
  });

  it("downloads its kubelet and kubectl from the CI bucket", () => {
    const [kubelet, kubectl, crictl] = releaseArtifacts(BUILD, "x64", {}, { ciBuild: true });
    expect(kubelet!.url).toBe(
      `https://storage.googleapis.com/k8s-release-dev/ci/${BUILD}/bin/linux/amd64/kubelet`,
    );
    expect(kubelet!.checksumUrl).toBe(`${kubelet!.url}.sha256`);
    expect(kubectl!.url).toContain("/k8s-release-dev/ci/");
    expect(crictl!.url).toContain("cri-tools/releases/download/v1.36.0/");
    const mirrored = releaseArtifacts(
      BUILD,
      "arm64",
      { kubernetesCI: "https://m/ci/" },
      {
        ciBuild: true,
      },
    );
    expect(mirrored[0]!.url).toBe(`https://m/ci/${BUILD}/bin/linux/arm64/kubelet`);
  });
});
