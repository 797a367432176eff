import { OFFICIAL_SOURCES } from "../../config/release-sources.js";
import { releaseFor } from "../../config/versions.js";
import type { Artifact, ArtifactName, ArtifactSources } from "./types.js";

// Where the node binaries come from: config/release-sources.ts (the Cluster's defaults name
// the same locations).

export { OFFICIAL_SOURCES };

/** Node folders the artifacts install into (install-kubeadm.md: DOWNLOAD_DIR, CNI DEST). */
export const INSTALL_DIRS: Record<ArtifactName, string> = {
  kubelet: "/usr/local/bin",
  kubectl: "/usr/local/bin",
  crictl: "/usr/local/bin",
  "cni-plugins": "/opt/cni/bin",
};

/**
 * CNI plugins release per Kubernetes minor: the versions upstream Kubernetes pins per minor
 * (build/dependencies.yaml "cni"), as kops lists them in kubernetes/kops#18705 (2026-08):
 * v1.6.2 up to 1.33, v1.7.1 for 1.34, v1.8.0 for 1.35, v1.9.1 for 1.36.
 * [M] 1.37: assumed unchanged from 1.36 (v1.9.1) until confirmed.
 */
const CNI_PLUGINS_VERSIONS: Record<number, string> = {
  33: "v1.6.2",
  34: "v1.7.1",
  35: "v1.8.0",
  36: "v1.9.1",
  37: "v1.9.1",
};

/** Node's process.arch names → Go's (the release file names use Go's). */
const GO_ARCH: Record<string, string> = { x64: "amd64", arm64: "arm64" };

/** The Go architecture name of a node; throws naming an architecture kubeforge has no binaries for. */
export function goArch(nodeArch: string): string {
  const arch = GO_ARCH[nodeArch];
  if (!arch) {
    throw new Error(
      `architecture "${nodeArch}" is not supported: kubeforge installs Kubernetes binaries for x64 (amd64) and arm64 nodes only`,
    );
  }
  return arch;
}

/** crictl's minor follows Kubernetes' (cri-tools README "Compatibility matrix"): v1.<minor>.0. */
export function crictlVersion(kubernetesVersion: string): string {
  return `v1.${releaseFor(kubernetesVersion).minor}.0`;
}

export function cniPluginsVersion(kubernetesVersion: string): string {
  const minor = releaseFor(kubernetesVersion).minor;
  const version = CNI_PLUGINS_VERSIONS[minor];
  if (!version) throw new Error(`no CNI plugins version is known for Kubernetes v1.${minor}`);
  return version;
}

function base(url: string): string {
  return url.replace(/\/+$/, "");
}

/** An exact version as release URLs spell it: "1.35.2" → "v1.35.2". */
function exactVersion(kubernetesVersion: string): string {
  const v = kubernetesVersion.trim();
  if (!/^v?\d+\.\d+\.\d+([-+][-\w.+]*)?$/.test(v)) {
    throw new Error(
      `"${kubernetesVersion}" is not an exact Kubernetes version (like v1.35.2): release binaries need one`,
    );
  }
  return v.startsWith("v") ? v : `v${v}`;
}

/**
 * kubelet, kubectl, crictl and the CNI plugins for one Kubernetes version and node architecture;
 * a CI build's kubelet and kubectl from the CI bucket.
 */
export function releaseArtifacts(
  kubernetesVersion: string,
  nodeArch: string,
  sources: Partial<ArtifactSources> = {},
  opts: { ciBuild?: boolean } = {},
): Artifact[] {
  const version = exactVersion(kubernetesVersion);
  releaseFor(version); // a version outside the table is refused before any URL is built
  const arch = goArch(nodeArch);
  const src = { ...OFFICIAL_SOURCES, ...sources };
  const bucket = opts.ciBuild === true ? src.kubernetesCI : src.kubernetes;
  const k8s = (name: "kubelet" | "kubectl"): Artifact => {
    const url = `${base(bucket)}/${version}/bin/linux/${arch}/${name}`;
    return { name, version, arch, url, checksumUrl: `${url}.sha256`, format: "binary" };
  };
  const crictl = crictlVersion(version);
  const crictlUrl = `${base(src.crictl)}/${crictl}/crictl-${crictl}-linux-${arch}.tar.gz`;
  const cni = cniPluginsVersion(version);
  const cniUrl = `${base(src.cniPlugins)}/${cni}/cni-plugins-linux-${arch}-${cni}.tgz`;
  return [
    k8s("kubelet"),
    k8s("kubectl"),
    {
      name: "crictl",
      version: crictl,
      arch,
      url: crictlUrl,
      checksumUrl: `${crictlUrl}.sha256`,
      format: "tar.gz",
    },
    {
      name: "cni-plugins",
      version: cni,
      arch,
      url: cniUrl,
      checksumUrl: `${cniUrl}.sha256`,
      format: "tar.gz",
    },
  ];
}
