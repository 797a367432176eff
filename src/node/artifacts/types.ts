// Release artifacts a node needs besides the container runtime (the issue 6 contracts).

export type ArtifactName = "kubelet" | "kubectl" | "crictl" | "cni-plugins";

/** One downloadable release file and where its published SHA-256 lives. */
export interface Artifact {
  name: ArtifactName;
  version: string;
  /** Go arch: amd64 | arm64 */
  arch: string;
  url: string;
  /** published .sha256 file */
  checksumUrl: string;
  format: "binary" | "tar.gz";
}

/** Base URLs of the three release locations (tests point them at a local server). */
export interface ArtifactSources {
  kubernetes: string;
  /** A CI build's kubelet and kubectl: <kubernetesCI>/<version>/bin/linux/<arch>/. */
  kubernetesCI: string;
  crictl: string;
  cniPlugins: string;
}
