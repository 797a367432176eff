import { posix } from "node:path";
import type { ComponentConfig } from "../../config/types.js";
import {
  KUBELET_CONFIG_FILE,
  KUBELET_DIR,
  KUBELET_FLAGS_ENV_FILE,
  KUBELET_INSTANCE_CONFIG_FILE,
  initKubeletFlagsEnv,
  nodeLocalCRISocket,
  renderInstanceConfig,
  renderKubeletConfig,
  withResolvConf,
} from "../../manifests/kubelet.js";
import { applyPatches, createPatchFile, type PatchSet } from "../../manifests/patches.js";
import { getInitSystem, NO_INIT_SYSTEM_DETECTED, type InitSystem } from "../../node/init-system.js";
import type { Host } from "../../remote/host.js";
import type { Logger, Phase, PhaseContext } from "../../workflow/phase.js";
import { loadPatches } from "./control-plane.js";
import type { InitData } from "./data.js";

// The "kubelet-start" phase of `kubeforge init`: kubeadm's cmd/phases/init/kubelet.go with
// phases/kubelet/flags.go and config.go. The kubelet is stopped while its files change and
// restarted afterwards; neither failing is an error (the wait phase catches a dead kubelet).

/** kubeadm creates /var/lib/kubelet 0700 and writes its files 0644. */
export const KUBELET_DIR_MODE = 0o700;
export const KUBELET_FILE_MODE = 0o644;

const FLAGS_ENV_PATH = posix.join(KUBELET_DIR, KUBELET_FLAGS_ENV_FILE);
const INSTANCE_CONFIG_PATH = posix.join(KUBELET_DIR, KUBELET_INSTANCE_CONFIG_FILE);
const CONFIG_PATH = posix.join(KUBELET_DIR, KUBELET_CONFIG_FILE);

async function writeKubeletFile(host: Host, path: string, text: string): Promise<void> {
  await host.mkdirp(KUBELET_DIR, KUBELET_DIR_MODE);
  try {
    await host.writeFile(path, text, KUBELET_FILE_MODE);
  } catch (e) {
    throw new Error(`failed to write ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/** kubeadm's isServiceActive("systemd-resolved"), false (with a warning) when it cannot tell. */
async function systemdResolvedActive(init: InitSystem | undefined, log: Logger): Promise<boolean> {
  if (!init) {
    log.warn(`cannot determine if systemd-resolved is active: ${NO_INIT_SYSTEM_DETECTED}`);
    return false;
  }
  return init.serviceIsActive("systemd-resolved");
}

/**
 * config.yaml as kubeadm's WriteConfigToDisk builds it: the defaulted KubeletConfiguration,
 * the resolv.conf rule, the user's kubeletconfiguration patches, then (NodeLocalCRISocket)
 * instance-config.yaml read back from the node and merged in as a strategic patch.
 */
async function kubeletConfigText(
  data: InitData,
  ctx: PhaseContext,
  patches: PatchSet | undefined,
  init: InitSystem | undefined,
): Promise<string> {
  const log = (l: string) => ctx.log.info(l);
  let config: ComponentConfig = withResolvConf(
    data.cfg.kubelet,
    await systemdResolvedActive(init, ctx.log),
    (m) => ctx.log.warn(m),
  );
  config = applyPatches("kubeletconfiguration", config, patches, log);
  if (nodeLocalCRISocket(data.cfg, data.release)) {
    let text: string;
    try {
      text = (await data.host.readFile(INSTANCE_CONFIG_PATH)).toString("utf8");
    } catch (e) {
      throw new Error(
        `could not read patch file "${INSTANCE_CONFIG_PATH}": ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    const instance = createPatchFile(
      INSTANCE_CONFIG_PATH,
      "kubeletconfiguration",
      "strategic",
      text,
    );
    config = applyPatches(
      "kubeletconfiguration",
      config,
      { dir: KUBELET_DIR, files: [instance], ignored: [] },
      log,
    );
  }
  return renderKubeletConfig(config);
}

/** kubeadm's TryStopKubelet: a failure is only a warning. */
async function tryStopKubelet(init: InitSystem | undefined, log: Logger): Promise<void> {
  if (!init) {
    log.info(
      "No supported init system detected, won't make sure the kubelet not running for a short period of time while setting up configuration for it.",
    );
    return;
  }
  if (!(await init.serviceExists("kubelet"))) {
    log.info(
      "Couldn't detect a kubelet service, can't make sure the kubelet not running for a short period of time while setting up configuration for it.",
    );
  }
  try {
    await init.serviceStop("kubelet");
  } catch (e) {
    log.warn(`unable to stop the kubelet service momentarily: [${(e as Error).message}]`);
  }
}

/** kubeadm's TryStartKubelet: daemon-reload and restart; a failure is only a warning. */
async function tryStartKubelet(init: InitSystem | undefined, log: Logger): Promise<void> {
  if (!init) {
    log.info("No supported init system detected, won't make sure the kubelet is running properly.");
    return;
  }
  if (!(await init.serviceExists("kubelet"))) {
    log.info("Couldn't detect a kubelet service, can't make sure the kubelet is running properly.");
  }
  try {
    await init.serviceRestart("kubelet");
  } catch (e) {
    log.warn(`unable to start the kubelet service: [${(e as Error).message}]`);
    log.info("Please ensure kubelet is reloaded and running manually.");
  }
}

export const kubeletStartPhase: Phase<InitData> = {
  name: "kubelet-start",
  short: "Write kubelet settings and (re)start the kubelet",
  run: async (data, ctx) => {
    const { host, cfg, release } = data;
    const init = await getInitSystem(host);
    // Keep the kubelet from acting on half-written files.
    await tryStopKubelet(init, ctx.log);

    ctx.log.info(`Writing kubelet environment file with flags to file "${FLAGS_ENV_PATH}"`);
    await writeKubeletFile(
      host,
      FLAGS_ENV_PATH,
      initKubeletFlagsEnv(cfg, release, await host.hostname()),
    );

    if (nodeLocalCRISocket(cfg, release)) {
      ctx.log.info(`Writing kubelet configuration to file "${INSTANCE_CONFIG_PATH}"`);
      await writeKubeletFile(
        host,
        INSTANCE_CONFIG_PATH,
        renderInstanceConfig(cfg.init.nodeRegistration.criSocket),
      );
    }

    const patches = await loadPatches(data, ctx);
    const configText = await kubeletConfigText(data, ctx, patches, init);
    ctx.log.info(`Writing kubelet configuration to file "${CONFIG_PATH}"`);
    await writeKubeletFile(host, CONFIG_PATH, configText);

    ctx.log.info("Starting the kubelet");
    await tryStartKubelet(init, ctx.log);
  },
};
