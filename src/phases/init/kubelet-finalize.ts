import { posix } from "node:path";
import { KUBELET_KUBECONFIG, KUBERNETES_DIR } from "../../config/paths.js";
import { renderKubeConfig } from "../../kubeconfig/build.js";
import { parseKubeConfig } from "../../kubeconfig/parse.js";
import { NODES_USER_PREFIX } from "../../kubeconfig/specs.js";
import { KUBELET_DIR } from "../../manifests/kubelet.js";
import { getInitSystem } from "../../node/init-system.js";
import { KUBECONFIG_FILE_MODE } from "../../pki/paths.js";
import type { Logger, Phase } from "../../workflow/phase.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/kubeletfinalize.go: once the kubelet has rotated its client
// certificate into /var/lib/kubelet/pki, kubelet.conf stops embedding the certificate kubeadm
// issued and points at the rotating pair instead; then the kubelet restarts.

const KUBELET_CONFIG_PATH = posix.join(KUBERNETES_DIR, KUBELET_KUBECONFIG);

/** The kubelet's certificate folder: its --cert-dir extra argument, else /var/lib/kubelet/pki. */
function kubeletPKIDir(data: InitData): string {
  const certDir = data.cfg.init.nodeRegistration.kubeletExtraArgs.findLast(
    (a) => a.name === "cert-dir",
  );
  return certDir?.value ?? posix.join(KUBELET_DIR, "pki");
}

async function enableClientCertRotation(data: InitData, logger: Logger) {
  const log = (line: string) => logger.info(line);
  const { host, cfg } = data;
  const pemPath = posix.join(kubeletPKIDir(data), "kubelet-client-current.pem");
  if (!(await host.exists(pemPath))) {
    // kubeadm: "Assuming that kubelet client certificate rotation is disabled".
    log(`[kubelet-finalize] ${pemPath} does not exist: client certificate rotation is disabled`);
    return;
  }
  log(
    `[kubelet-finalize] Updating "${KUBELET_CONFIG_PATH}" to point to a rotatable kubelet client certificate and key`,
  );
  const config = parseKubeConfig(await host.readFile(KUBELET_CONFIG_PATH), KUBELET_CONFIG_PATH);
  const userName = `${NODES_USER_PREFIX}${cfg.init.nodeRegistration.name}`;
  const entry = config.users.find((u) => u.name === userName);
  if (!entry) {
    throw new Error(
      `the file "${KUBELET_CONFIG_PATH}" does not contain authentication for user "${cfg.init.nodeRegistration.name}"`,
    );
  }
  const { "client-certificate-data": _cert, "client-key-data": _key, ...rest } = entry.user;
  entry.user = { ...rest, "client-certificate": pemPath, "client-key": pemPath };
  await host.writeFile(
    KUBELET_CONFIG_PATH,
    renderKubeConfig(config, {
      preferences: data.release.behaviour.kubeconfigPreferences,
    }),
    KUBECONFIG_FILE_MODE,
  );

  log("[kubelet-finalize] Restarting the kubelet to enable client certificate rotation");
  const init = await getInitSystem(host);
  try {
    if (!init) throw new Error("no supported init system detected");
    await init.serviceRestart("kubelet");
  } catch (e) {
    // kubeadm's TryRestartKubelet only warns.
    logger.warn(`[kubelet-finalize] unable to restart the kubelet: ${(e as Error).message}`);
  }
}

export const kubeletFinalizePhase: Phase<InitData> = {
  name: "kubelet-finalize",
  short: "Updates settings relevant to the kubelet after TLS bootstrap",
  phases: [
    {
      name: "enable-client-cert-rotation",
      short: "Enable kubelet client certificate rotation",
      run: (data, ctx) => enableClientCertRotation(data, ctx.log),
    },
  ],
};
