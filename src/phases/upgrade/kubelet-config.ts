import { posix } from "node:path";
import { nodeLocalCRISocket, renderInstanceConfig } from "../../manifests/kubelet.js";
import { getInitSystem } from "../../node/init-system.js";
import { readFileIfExists } from "../../remote/host.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { loadPatches } from "../init/control-plane.js";
import {
  CONFIG_PATH,
  FLAGS_ENV_PATH,
  INSTANCE_CONFIG_PATH,
  kubeletConfigText,
  writeKubeletFile,
} from "../kubelet.js";
import type { UpgradeData } from "./data.js";
import { parseKubeletFlagsEnv, renderKubeletFlagsArgs } from "./kubelet-env.js";
import { createTimestampDir } from "./paths.js";

// The kubelet-config phase of `upgrade apply` and `upgrade node` (cmd/phases/upgrade/
// kubeletconfig.go over phases/upgrade/postupgrade.go WriteKubeletConfigFiles, v1.35): the
// node's /var/lib/kubelet/config.yaml is copied to /etc/kubernetes/tmp/kubeadm-kubelet-config-
// <date>/config.yaml, then rewritten from the cluster's kubelet configuration with the
// kubeletconfiguration patches, as init writes it. With NodeLocalCRISocket and no
// instance-config.yaml yet (a node made before the gate), the CRI endpoint moves out of
// kubeadm-flags.env into a new instance-config.yaml. The kubelet is not restarted: the new
// configuration takes effect when the new kubelet starts.

/**
 * The container runtime endpoint moved from kubeadm-flags.env into instance-config.yaml, which
 * `current` holds (undefined: missing). Returns instance-config.yaml's text from then on
 * (undefined without NodeLocalCRISocket).
 */
async function migrateInstanceConfig(
  data: UpgradeData,
  ctx: PhaseContext,
  current: Buffer | undefined,
): Promise<string | undefined> {
  if (!nodeLocalCRISocket(data.cfg, data.release)) return undefined;
  if (current !== undefined) return current.toString("utf8");
  const text = await readFileIfExists(data.host, FLAGS_ENV_PATH);
  let endpoint = data.cfg.init.nodeRegistration.criSocket;
  if (text === undefined) {
    if (!data.dryRun)
      throw new Error(
        `error reading kubeadm flags file: open ${FLAGS_ENV_PATH}: no such file or directory`,
      );
    ctx.log.info(
      `[dryrun] would read the flag --container-runtime-endpoint value from "kubeadm-flags.env", which is missing. Using default socket "${endpoint}" instead`,
    );
  } else {
    const args = parseKubeletFlagsEnv(text.toString("utf8"), FLAGS_ENV_PATH);
    const found = args.find((a) => a.name === "container-runtime-endpoint");
    if (found) {
      endpoint = found.value;
      ctx.log.info(
        `[kubelet-start] Writing kubelet environment file with flags to file "${FLAGS_ENV_PATH}"`,
      );
      await writeKubeletFile(
        data.host,
        FLAGS_ENV_PATH,
        renderKubeletFlagsArgs(args.filter((a) => a.name !== "container-runtime-endpoint")),
        folder(data),
      );
    }
  }
  ctx.log.info(`[kubelet-start] Writing kubelet configuration to file "${INSTANCE_CONFIG_PATH}"`);
  const instance = renderInstanceConfig(endpoint);
  await writeKubeletFile(data.host, INSTANCE_CONFIG_PATH, instance, folder(data));
  return instance;
}

/** The backup read config.yaml from /var/lib/kubelet (a dry run's reads prove nothing). */
const folder = (data: UpgradeData) => ({ folderExists: !data.dryRun });

async function backUpKubeletConfig(data: UpgradeData, ctx: PhaseContext): Promise<string> {
  // The file backed up is read while its folder is made (a dry run reads it and takes nothing).
  const current = Promise.all([data.host.stat(CONFIG_PATH), data.host.readFile(CONFIG_PATH)]);
  current.catch(() => {}); // taken below
  const dir = await createTimestampDir(
    data.host,
    data.kubeletBackupParent,
    "kubeadm-kubelet-config",
    data.now(),
  ).catch(async (e: unknown) => {
    await current.catch(() => {});
    throw e;
  });
  ctx.log.warn(
    `Using temporary directory ${dir} for kubelet config. To override it set the environment variable KUBEADM_UPGRADE_DRYRUN_DIR`,
  );
  const dest = posix.join(dir, "config.yaml");
  if (data.dryRun) {
    await current.catch(() => {});
    ctx.log.info(`[dryrun] Would back up kubelet config file to ${dest}`);
    return dir;
  }
  ctx.log.info(`[upgrade] Backing up kubelet config file to ${dest}`);
  try {
    const [st, text] = await current;
    await data.host.writeFile(dest, text, (st?.mode ?? 0o644) & 0o7777);
  } catch (e) {
    throw new Error(`error backing up the kubelet config file: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return dir;
}

async function runKubeletConfig(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  // Which init system runs the kubelet, and the instance configuration, are only read: asked
  // while the backup is made.
  const init = getInitSystem(data.host);
  init.catch(() => {});
  const instance = nodeLocalCRISocket(data.cfg, data.release)
    ? readFileIfExists(data.host, INSTANCE_CONFIG_PATH)
    : Promise.resolve(undefined);
  instance.catch(() => {}); // taken after the backup
  await backUpKubeletConfig(data, ctx);
  const instanceText = await migrateInstanceConfig(data, ctx, await instance);
  const text = await kubeletConfigText(
    data,
    ctx,
    await loadPatches(data, ctx),
    await init,
    instanceText,
  );
  ctx.log.info(`[kubelet-start] Writing kubelet configuration to file "${CONFIG_PATH}"`);
  try {
    await writeKubeletFile(data.host, CONFIG_PATH, text, folder(data));
  } catch (e) {
    throw new Error(`error writing kubelet configuration to file: ${(e as Error).message}`, {
      cause: e,
    });
  }
  ctx.log.info(
    "[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!",
  );
}

export const upgradeKubeletConfigPhase: Phase<UpgradeData> = {
  name: "kubelet-config",
  short: "Upgrade the kubelet configuration for this node",
  run: runKubeletConfig,
};
