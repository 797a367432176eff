import { posix } from "node:path";
import type { Release } from "../config/release.js";
import type { ComponentConfig, InitConfig } from "../config/types.js";
import {
  KUBELET_CONFIG_FILE,
  KUBELET_DIR,
  KUBELET_FLAGS_ENV_FILE,
  KUBELET_INSTANCE_CONFIG_FILE,
  marshalKubeletConfiguration,
  nodeLocalCRISocket,
  renderKubeletConfig,
  withResolvConf,
} from "../manifests/kubelet.js";
import { applyPatches, createPatchFile, type PatchSet } from "../manifests/patches.js";
import { NO_INIT_SYSTEM_DETECTED, type InitSystem } from "../node/init-system.js";
import type { Host } from "../remote/host.js";
import type { Logger, PhaseContext } from "../workflow/phase.js";

// The kubelet's files and service, as both init's and join's kubelet-start write and restart
// them (kubeadm: phases/kubelet/flags.go, config.go, kubelet.go). The kubelet is stopped while
// its files change and restarted afterwards; neither failing is an error (a wait catches a dead
// kubelet).

/** What the kubelet's files are made from: the node, the cluster configuration, the release. */
export interface KubeletTarget {
  readonly host: Host;
  readonly cfg: InitConfig;
  readonly release: Release;
}

export const FLAGS_ENV_PATH = posix.join(KUBELET_DIR, KUBELET_FLAGS_ENV_FILE);
export const INSTANCE_CONFIG_PATH = posix.join(KUBELET_DIR, KUBELET_INSTANCE_CONFIG_FILE);
export const CONFIG_PATH = posix.join(KUBELET_DIR, KUBELET_CONFIG_FILE);

/** kubeadm creates /var/lib/kubelet 0700 and writes its files 0644. */
export const KUBELET_DIR_MODE = 0o700;
export const KUBELET_FILE_MODE = 0o644;

/** `folderExists`: the caller just read a file from /var/lib/kubelet, which is not made again. */
export async function writeKubeletFile(
  host: Host,
  path: string,
  text: string,
  opts: { folderExists?: boolean } = {},
): Promise<void> {
  if (!opts.folderExists) await host.mkdirp(KUBELET_DIR, KUBELET_DIR_MODE);
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

async function readInstanceConfig(host: Host): Promise<string> {
  try {
    return (await host.readFile(INSTANCE_CONFIG_PATH)).toString("utf8");
  } catch (e) {
    throw new Error(
      `could not read patch file "${INSTANCE_CONFIG_PATH}": ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
}

/**
 * config.yaml as kubeadm's WriteConfigToDisk builds it: the defaulted KubeletConfiguration
 * with the resolv.conf rule, marshalled whole, then the user's kubeletconfiguration patches,
 * then (NodeLocalCRISocket) instance-config.yaml read back from the node and merged in as a
 * strategic patch.
 */
export async function kubeletConfigText(
  data: KubeletTarget,
  ctx: PhaseContext,
  patches: PatchSet | undefined,
  init: InitSystem | undefined,
  /** instance-config.yaml's text when the caller has it already (else read from the node). */
  instanceConfig?: string,
): Promise<string> {
  const log = (l: string) => ctx.log.info(l);
  // Both only read: instance-config.yaml is read while systemd-resolved is asked about.
  let instanceText: Promise<string> | undefined;
  if (nodeLocalCRISocket(data.cfg, data.release)) {
    instanceText =
      instanceConfig !== undefined
        ? Promise.resolve(instanceConfig)
        : readInstanceConfig(data.host);
    instanceText.catch(() => {}); // taken below
  }
  let config: ComponentConfig = marshalKubeletConfiguration(
    withResolvConf(data.cfg.kubelet, await systemdResolvedActive(init, ctx.log), (m) =>
      ctx.log.warn(m),
    ),
    data.release,
  );
  config = applyPatches("kubeletconfiguration", config, patches, log);
  if (instanceText) {
    const text = await instanceText;
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
export async function tryStopKubelet(init: InitSystem | undefined, log: Logger): Promise<void> {
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
export async function tryStartKubelet(init: InitSystem | undefined, log: Logger): Promise<void> {
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
