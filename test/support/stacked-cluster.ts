import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { TEST_HOST_PREFLIGHT_IGNORES_FLAG } from "./preflight-ignores.js";
import type { CliResult, TestHost } from "./testbed.js";

// A stacked-etcd cluster on netns testbed hosts, made by the kubeforge CLI as a user would:
// `init --upload-certs` on the first control plane (its address as controlPlaneEndpoint), then
// `join` commands with the token, the CA pin and, for control planes, the certificate key.
// Only the preflight errors a testbed host cannot avoid are ignored (preflight-ignores.ts).

export interface StackedClusterSecrets {
  token: string;
  certificateKey: string;
}

/**
 * `kubeforge init` on `first`, with kubeadm's defaults — ControlPlaneKubeletLocalMode included:
 * a joining control plane's kubelet TLS-bootstraps against its own local API server, which sees
 * the bootstrap token Secret and the RBAC created through the first one because the simulated
 * API servers, like kube-apiservers, keep their objects in the one etcd cluster.
 */
export async function initFirstControlPlane(
  first: TestHost,
  secrets: StackedClusterSecrets,
): Promise<CliResult> {
  const config = join(first.workDir, "kubeadm.yaml");
  await writeFile(
    config,
    [
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: InitConfiguration",
      "bootstrapTokens:",
      `- token: ${secrets.token}`,
      `certificateKey: ${secrets.certificateKey}`,
      `localAPIEndpoint: {advertiseAddress: ${first.address}}`,
      `nodeRegistration: {name: ${first.name}}`,
      "---",
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: ClusterConfiguration",
      "kubernetesVersion: v1.35.0",
      `controlPlaneEndpoint: "${first.address}:6443"`,
      "",
    ].join("\n"),
  );
  return first.kubeforge([
    "init",
    "--config",
    config,
    "--rootfs",
    first.rootfs,
    "--ignore-preflight-errors",
    TEST_HOST_PREFLIGHT_IGNORES_FLAG,
    "--upload-certs",
  ]);
}

/** The `kubeforge join` arguments for `host`, against the cluster `first` initialised. */
export function joinArgs(
  first: TestHost,
  caCertHash: string,
  host: TestHost,
  secrets: StackedClusterSecrets,
  role: "control-plane" | "worker",
): string[] {
  return [
    "join",
    `${first.address}:6443`,
    "--token",
    secrets.token,
    "--discovery-token-ca-cert-hash",
    `sha256:${caCertHash}`,
    "--node-name",
    host.name,
    "--rootfs",
    host.rootfs,
    "--ignore-preflight-errors",
    TEST_HOST_PREFLIGHT_IGNORES_FLAG,
    ...(role === "control-plane"
      ? [
          "--control-plane",
          "--certificate-key",
          secrets.certificateKey,
          "--apiserver-advertise-address",
          host.address,
        ]
      : []),
  ];
}
