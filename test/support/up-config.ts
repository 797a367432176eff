import { initConfigOf } from "../../src/cluster/init.js";
import { initDocuments } from "../../src/cluster/up/kubeadm-documents.js";
import { splitSkipPhases } from "../../src/cluster/up/skip-phases.js";
import type { ClusterSpec } from "../../src/config/cluster/types.js";
import { decodeConfigDocuments } from "../../src/config/load.js";
import { PLACEHOLDER_TOKEN } from "../../src/config/print.js";
import type { InitConfig } from "../../src/config/types.js";
import { releaseFor } from "../../src/config/versions.js";

/**
 * The configuration the first control plane's init runs with, built as `up` builds it: the
 * Cluster's kubeadm documents (decoded), up's settings on top, kubeadm's defaults, the addons
 * the Cluster's skipPhases turn off. What node preparation reads image names and kubelet
 * settings from.
 */
export function firstControlPlaneConfig(spec: ClusterSpec, kubernetesVersion: string): InitConfig {
  const user =
    spec.kubeadm.config ??
    (spec.kubeadm.documents
      ? decodeConfigDocuments(spec.kubeadm.documents, "the Cluster's kubeadm documents")
      : undefined);
  const skip = splitSkipPhases(spec.skipPhases ?? []);
  const node = {
    name: "cp-1",
    role: "control-plane" as const,
    host: "local",
    address: "10.0.0.10",
  };
  const documents = initDocuments(
    spec,
    user,
    node,
    { kubernetesVersion, extraCertSANs: [], initSkipPhases: skip.init },
    { token: PLACEHOLDER_TOKEN },
  );
  return initConfigOf(documents, {
    resolved: {
      version: kubernetesVersion,
      release: releaseFor(kubernetesVersion),
      source: "test",
    },
    nodeName: node.name,
    advertiseAddress: node.address,
    generateToken: () => PLACEHOLDER_TOKEN,
  });
}
