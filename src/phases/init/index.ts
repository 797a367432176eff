import type { Phase } from "../../workflow/phase.js";
import { addonPhase } from "./addons.js";
import { bootstrapTokenPhase } from "./bootstrap-token.js";
import { certsPhase } from "./certs.js";
import { controlPlanePhase } from "./control-plane.js";
import type { InitData } from "./data.js";
import { etcdPhase } from "./etcd.js";
import { kubeconfigPhase } from "./kubeconfig.js";
import { kubeletFinalizePhase } from "./kubelet-finalize.js";
import { kubeletStartPhase } from "./kubelet-start.js";
import { markControlPlanePhase } from "./mark-control-plane.js";
import { preflightPhase } from "./preflight.js";
import { showJoinCommandPhase } from "./show-join-command.js";
import { uploadCertsPhase } from "./upload-certs.js";
import { uploadConfigPhase } from "./upload-config.js";
import { waitControlPlanePhase } from "./wait-control-plane.js";

// kubeadm's init phase tree, in the order of cmd/kubeadm/app/cmd/init.go (v1.35).

export function initPhases(): Phase<InitData>[] {
  return [
    preflightPhase,
    certsPhase,
    kubeconfigPhase,
    etcdPhase,
    controlPlanePhase,
    kubeletStartPhase,
    waitControlPlanePhase,
    uploadConfigPhase,
    uploadCertsPhase,
    markControlPlanePhase,
    bootstrapTokenPhase,
    kubeletFinalizePhase,
    addonPhase,
    showJoinCommandPhase,
  ];
}
