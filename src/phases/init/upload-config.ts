import {
  annotateCRISocket,
  createOrMutate,
  createOrUpdate,
  createOrUpdateAll,
} from "../../kube/idempotency.js";
import { nodeLocalCRISocket } from "../../manifests/kubelet.js";
import { allOrFirstError } from "../../remote/fleet.js";
import { kubeadmConfigRBAC, kubeletConfigRBAC } from "../../manifests/rbac.js";
import {
  KUBEADM_CONFIG_CONFIGMAP,
  KUBELET_CONFIG_CONFIGMAP,
  kubeadmConfigConfigMap,
  kubeletConfigConfigMap,
  mutateKubeadmConfigConfigMap,
} from "../../manifests/upload-config.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { adminClient, apiCallOptions } from "./clients.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/uploadconfig.go over phases/uploadconfig (kubeadm-config) and
// phases/kubelet/config.go (kubelet-config), each with the Role and RoleBinding that let joining
// nodes read it.

async function uploadKubeadmConfig(data: InitData, ctx: PhaseContext): Promise<void> {
  const client = await adminClient(data);
  const opts = apiCallOptions(data);
  ctx.log.info(
    `[upload-config] Storing the configuration used in ConfigMap "${KUBEADM_CONFIG_CONFIGMAP}" in the "kube-system" Namespace`,
  );
  const cluster = data.cfg.cluster;
  // The RBAC rules only name the ConfigMap: both are written at once (the ConfigMap's failure
  // first, as kubeadm would stop there).
  await allOrFirstError([
    createOrMutate(
      client,
      kubeadmConfigConfigMap(cluster),
      (existing) => mutateKubeadmConfigConfigMap(existing, cluster),
      opts,
    ),
    createOrUpdateAll(client, kubeadmConfigRBAC(), opts),
  ]);
}

async function uploadKubeletConfig(data: InitData, ctx: PhaseContext): Promise<void> {
  const { cfg, release } = data;
  const client = await adminClient(data);
  const opts = apiCallOptions(data);
  ctx.log.info(
    `[kubelet] Creating a ConfigMap "${KUBELET_CONFIG_CONFIGMAP}" in namespace kube-system with the configuration for the kubelets in the cluster`,
  );
  await allOrFirstError([
    createOrUpdate(
      client,
      kubeletConfigConfigMap(cfg.kubelet, cfg.kubeletUserSupplied, release),
      opts,
    ),
    createOrUpdateAll(client, kubeletConfigRBAC(), opts),
  ]);

  // Without NodeLocalCRISocket the node's CRI socket lives in a Node annotation
  // (phases/patchnode AnnotateCRISocket), read back by upgrade and reset.
  if (!nodeLocalCRISocket(cfg, release)) {
    const { name, criSocket } = cfg.init.nodeRegistration;
    ctx.log.info(`[upload-config] Preserving the CRISocket information for the control-plane node`);
    await annotateCRISocket(client, name, criSocket, opts, (l) => ctx.log.info(l));
  }
}

export const uploadConfigPhase: Phase<InitData> = {
  name: "upload-config",
  short: "Upload the kubeadm and kubelet configuration to a ConfigMap",
  phases: [
    {
      name: "kubeadm",
      short: "Upload the kubeadm ClusterConfiguration to a ConfigMap",
      run: uploadKubeadmConfig,
    },
    {
      name: "kubelet",
      short: "Upload the kubelet component config to a ConfigMap",
      run: uploadKubeletConfig,
    },
  ],
};
