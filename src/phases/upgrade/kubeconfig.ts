import { KUBELET_KUBECONFIG } from "../../config/paths.js";
import { controlPlaneEndpointURL, localAPIEndpointURL } from "../../kubeconfig/endpoints.js";
import { renderKubeConfig } from "../../kubeconfig/build.js";
import { parseKubeConfig } from "../../kubeconfig/parse.js";
import { getInitSystem } from "../../node/init-system.js";
import { KUBECONFIG_FILE_MODE, kubeconfigFile } from "../../pki/paths.js";
import { readFileIfExists } from "../../remote/host.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { tryStartKubelet } from "../kubelet.js";
import type { UpgradeData } from "./data.js";

// The hidden kubeconfig phase of `upgrade apply` and `upgrade node` (cmd/phases/upgrade/
// apply/kubeconfig.go, node/kubeconfig.go; phases/upgrade/postupgrade.go UpdateKubeletLocalMode,
// called unconditionally since ControlPlaneKubeletLocalMode went GA and was locked on in v1.35,
// kubernetes/kubernetes#134106): on a control plane whose kubelet.conf still names the
// controlPlaneEndpoint, the kubelet is pointed at this node's own API server and restarted.
// The comparison is kubeadm's, on the URLs as kubeadm builds them: a kubelet.conf naming
// anything else — kubeforge's node-local proxy https://127.0.0.1:7443 when that is not the
// controlPlaneEndpoint, or the local API server already — is left alone; when the proxy *is*
// the controlPlaneEndpoint, kubeadm (and so kubeforge) moves the control plane's kubelet to its
// local API server, which is where kubeadm's own init and join put it.

async function updateKubeletKubeconfigServer(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  const path = kubeconfigFile(KUBELET_KUBECONFIG);
  const text = await readFileIfExists(data.host, path);
  if (text === undefined) return; // kubeadm: "Could not mutate the Server URL" at V(2)
  const config = parseKubeConfig(text, path);
  const context = config.contexts.find((c) => c.name === config["current-context"])?.context;
  if (!context) {
    throw new Error(`cannot find cluster for active context in kubeconfig "${path}"`);
  }
  const cluster = config.clusters.find((c) => c.name === context.cluster)?.cluster;
  const local = localAPIEndpointURL(data.cfg.init.localAPIEndpoint);
  const endpoint = controlPlaneEndpointURL(
    data.cfg.cluster.controlPlaneEndpoint,
    data.cfg.init.localAPIEndpoint,
  );
  if (!cluster || cluster.server !== endpoint || endpoint === local) return;
  if (data.dryRun) {
    ctx.log.info(
      `[dryrun] Would change the Server URL from "${cluster.server}" to "${local}" in ${path} and try to restart kubelet`,
    );
    return;
  }
  cluster.server = local;
  await data.host.writeFile(
    path,
    renderKubeConfig(config, { preferences: data.release.behaviour.kubeconfigPreferences }),
    KUBECONFIG_FILE_MODE,
  );
  await tryStartKubelet(await getInitSystem(data.host), ctx.log);
}

export const upgradeKubeconfigPhase: Phase<UpgradeData> = {
  name: "kubeconfig",
  short: "Upgrade kubeconfig files for this node",
  hidden: true,
  run: async (data, ctx) => {
    if (!data.isControlPlaneNode) {
      ctx.log.info("[upgrade/kubeconfig] Skipping phase. Not a control plane node.");
      return;
    }
    try {
      await updateKubeletKubeconfigServer(data, ctx);
    } catch (e) {
      throw new Error(`failed to update kubelet local mode: ${(e as Error).message}`, { cause: e });
    }
    ctx.log.info(
      "[upgrade/kubeconfig] The kubeconfig files for this node were successfully upgraded!",
    );
  },
};
