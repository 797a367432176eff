import { formatGoDuration } from "../../config/duration.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import type { UpgradeData } from "./data.js";
import { dryRunStaticPodUpgrade, performStaticPodUpgrade } from "./static-pod-upgrade.js";

// The control-plane phase of `upgrade apply` (cmd/phases/upgrade/apply/controlplane.go) and of
// `upgrade node` (node/controlplane.go, which skips workers): the static Pod upgrade of this
// node, etcd first.

async function runControlPlane(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  if (!data.isControlPlaneNode) {
    ctx.log.info("[upgrade/control-plane] Skipping phase. Not a control plane node.");
    return;
  }
  const version = data.cfg.cluster.kubernetesVersion;
  if (data.dryRun) {
    ctx.log.info(
      `[dryrun] Would upgrade your static Pod-hosted control plane to version "${version}"`,
    );
    await dryRunStaticPodUpgrade(data, ctx);
    return;
  }
  const which = data.command === "apply" ? "control plane" : "control plane instance";
  ctx.log.info(
    `[upgrade/control-plane] Upgrading your static Pod-hosted ${which} to version "${version}" (timeout: ${formatGoDuration(data.timing.upgradeManifestsMs)})...`,
  );
  try {
    await performStaticPodUpgrade(data, ctx);
  } catch (e) {
    throw new Error(`couldn't complete the static pod upgrade: ${(e as Error).message}`, {
      cause: e,
    });
  }
  ctx.log.info(
    "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!",
  );
}

export const applyControlPlanePhase: Phase<UpgradeData> = {
  name: "control-plane",
  short: "Upgrade the control plane",
  run: runControlPlane,
};

export const nodeControlPlanePhase: Phase<UpgradeData> = {
  name: "control-plane",
  short: "Upgrade the control plane instance deployed on this node, if any",
  run: runControlPlane,
};
