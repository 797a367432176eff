import { CRI_SOCKET_ANNOTATION } from "../../kube/idempotency.js";
import { isNotFound } from "../../kube/errors.js";
import { nodeLocalCRISocket } from "../../manifests/kubelet.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { uploadConfigPhase } from "../init/upload-config.js";
import { runInitPhase } from "../join/init-view.js";
import type { UpgradeData } from "./data.js";
import { upgradeInitView } from "./init-view.js";

// The upload-config phase of `upgrade apply` (cmd/phases/upgrade/apply/uploadconfig.go): the
// ClusterConfiguration — now carrying the target kubernetesVersion, which `upgrade node` reads
// on every other node — into kube-system/kubeadm-config, the kubelet configuration into
// kube-system/kubelet-config, each with its RBAC, exactly as `init` uploads them. With
// NodeLocalCRISocket the node's CRI socket lives in instance-config.yaml, so the legacy Node
// annotation is removed (RemoveCRISocketAnnotation; "remove once NodeLocalCRISocket is removed").

const initSubPhase = (name: string) => uploadConfigPhase.phases!.find((p) => p.name === name)!;

async function removeCRISocketAnnotation(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  if (!nodeLocalCRISocket(data.cfg, data.release)) return;
  const client = await data.client();
  const name = data.cfg.init.nodeRegistration.name;
  const ref = { apiVersion: "v1", kind: "Node", name };
  let node;
  try {
    node = await client.get(ref);
  } catch (e) {
    if (isNotFound(e)) return;
    throw e;
  }
  if (node.metadata.annotations?.[CRI_SOCKET_ANNOTATION] === undefined) return;
  ctx.log.info(`[upload-config] Removing the CRISocket information for the control-plane node`);
  await client.patch(
    ref,
    { metadata: { annotations: { [CRI_SOCKET_ANNOTATION]: null } } },
    "strategic",
  );
}

export const upgradeUploadConfigPhase: Phase<UpgradeData> = {
  name: "upload-config",
  short: "Upload the kubeadm and kubelet configurations to ConfigMaps",
  phases: [
    {
      name: "kubeadm",
      short: "Upload the kubeadm ClusterConfiguration to a ConfigMap",
      run: (data, ctx) => runInitPhase(initSubPhase("kubeadm"), upgradeInitView(data), ctx),
    },
    {
      name: "kubelet",
      short: "Upload the kubelet configuration to a ConfigMap",
      run: async (data, ctx) => {
        await runInitPhase(initSubPhase("kubelet"), upgradeInitView(data), ctx);
        await removeCRISocketAnnotation(data, ctx);
      },
    },
  ],
};
