import type { Phase } from "../../workflow/phase.js";
import { upgradeAddonPhase } from "./addons.js";
import { upgradeBootstrapTokenPhase } from "./bootstrap-token.js";
import { applyControlPlanePhase, nodeControlPlanePhase } from "./control-plane.js";
import type { UpgradeData } from "./data.js";
import { upgradeKubeconfigPhase } from "./kubeconfig.js";
import { upgradeKubeletConfigPhase } from "./kubelet-config.js";
import { upgradePostUpgradePhase } from "./post-upgrade.js";
import { applyPreflightPhase, nodePreflightPhase } from "./preflight.js";
import { upgradeUploadConfigPhase } from "./upload-config.js";

// kubeadm's upgrade phase trees, in the order of cmd/kubeadm/app/cmd/upgrade/apply.go and
// node.go (v1.35): `applyRunner.AppendPhase` / `nodeRunner.AppendPhase`. kubeconfig is hidden.

export function applyPhases(): Phase<UpgradeData>[] {
  return [
    applyPreflightPhase,
    applyControlPlanePhase,
    upgradeUploadConfigPhase,
    upgradeKubeconfigPhase,
    upgradeKubeletConfigPhase,
    upgradeBootstrapTokenPhase,
    upgradeAddonPhase,
    upgradePostUpgradePhase,
  ];
}

export function nodePhases(): Phase<UpgradeData>[] {
  return [
    nodePreflightPhase,
    nodeControlPlanePhase,
    upgradeKubeconfigPhase,
    upgradeKubeletConfigPhase,
    upgradeAddonPhase,
    upgradePostUpgradePhase,
  ];
}
