import { posix } from "node:path";
import { readFileIfExists } from "../../remote/host.js";
import type { Phase } from "../../workflow/phase.js";
import { FLAGS_ENV_PATH, writeKubeletFile } from "../kubelet.js";
import type { UpgradeData } from "./data.js";
import { parseKubeletFlagsEnv, renderKubeletFlagsArgs } from "./kubelet-env.js";
import { createTempDir } from "./paths.js";

// The post-upgrade phase (cmd/phases/upgrade/postupgrade.go: "release specific post-upgrade
// tasks"). Observed in kubeadm v1.35.0 and v1.35.4 runs, on control planes and workers alike:
// kubeadm-flags.env is backed up to /etc/kubernetes/tmp/kubeadm-kubelet-env<random> and
// rewritten, dropping --pod-infra-container-image, a kubelet flag removed in v1.35
// (kubernetes/kubernetes#133779) that kubeadm stopped writing (#133778). kubeforge does this
// whenever the target release no longer writes the flag and the file still has it.

const FLAG = "pod-infra-container-image";

export const upgradePostUpgradePhase: Phase<UpgradeData> = {
  name: "post-upgrade",
  short: "Run post upgrade tasks",
  run: async (data, ctx) => {
    if (data.release.behaviour.podInfraContainerImageFlag) return;
    const text = await readFileIfExists(data.host, FLAGS_ENV_PATH);
    if (text === undefined) return;
    const args = parseKubeletFlagsEnv(text.toString("utf8"), FLAGS_ENV_PATH);
    if (!args.some((a) => a.name === FLAG)) return;
    const dir = await createTempDir(data.host, data.kubeletBackupParent, "kubeadm-kubelet-env");
    ctx.log.warn(
      `Using temporary directory ${dir} for kubelet env file. To override it set the environment variable KUBEADM_UPGRADE_DRYRUN_DIR`,
    );
    const backup = posix.join(dir, "kubeadm-flags.env");
    ctx.log.info(`[upgrade] Backing up kubelet env file to ${backup}`);
    await data.host.writeFile(backup, text, 0o644);
    ctx.log.info(
      `[kubelet-start] Writing kubelet environment file with flags to file "${FLAGS_ENV_PATH}"`,
    );
    await writeKubeletFile(
      data.host,
      FLAGS_ENV_PATH,
      renderKubeletFlagsArgs(args.filter((a) => a.name !== FLAG)),
    );
  },
};
