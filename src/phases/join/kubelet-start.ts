import { extraArgsKeepOrder } from "../../config/patch-level.js";
import { localAPIEndpointURL } from "../../kubeconfig/endpoints.js";
import { renderKubeConfig } from "../../kubeconfig/build.js";
import { withServer } from "../../kubeconfig/bootstrap.js";
import { getIfExists } from "../../kube/idempotency.js";
import type { KubeObject } from "../../kube/types.js";
import {
  kubeletHostname,
  nodeLocalCRISocket,
  pauseImage,
  renderInstanceConfig,
  renderKubeletFlagsEnv,
} from "../../manifests/kubelet.js";
import { getInitSystem } from "../../node/init-system.js";
import { CERT_FILE_MODE, KUBECONFIG_FILE_MODE } from "../../pki/paths.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import {
  CONFIG_PATH,
  FLAGS_ENV_PATH,
  INSTANCE_CONFIG_PATH,
  kubeletConfigText,
  tryStartKubelet,
  tryStopKubelet,
  writeKubeletFile,
} from "../kubelet.js";
import { loadPatches } from "../init/control-plane.js";
import type { JoinData } from "./data.js";
import {
  BOOTSTRAP_KUBECONFIG_PATH,
  kubeletLocalMode,
  removeBootstrapKubeconfig,
  skipWaitInDryRun,
  waitForKubeletBootstrap,
} from "./kubelet-wait-bootstrap.js";

// kubeadm's cmd/phases/join/kubelet.go runKubeletStartJoinPhase: bootstrap-kubelet.conf and the
// cluster CA for the kubelet's TLS bootstrap, a refusal when a Ready Node of this name exists,
// the kubelet's configuration downloaded from the cluster, its flags (a worker registers its
// taints itself), and a kubelet restart.

function isReady(node: KubeObject | undefined): boolean {
  const conditions = (node?.status as { conditions?: { type: string; status: string }[] })
    ?.conditions;
  return (conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

export const joinKubeletStartPhase: Phase<JoinData> = {
  name: "kubelet-start",
  short: "Write kubelet settings, certificates and (re)start the kubelet",
  run: async (data, ctx) => {
    // With ControlPlaneKubeletLocalMode kubelet-wait-bootstrap waits and removes
    // bootstrap-kubelet.conf. Without it this phase waits itself, and kubeadm defers the removal
    // to the phase's end, so the token leaves the node even when the phase fails.
    const localMode = await kubeletLocalMode(data);
    if (localMode) return startKubelet(data, ctx, localMode);
    if (data.dryRun) {
      await startKubelet(data, ctx, localMode);
      skipWaitInDryRun(data, ctx);
      return;
    }
    try {
      await startKubelet(data, ctx, localMode);
      await waitForKubeletBootstrap(data, ctx);
    } finally {
      await removeBootstrapKubeconfig(data, ctx);
    }
  },
};

async function startKubelet(data: JoinData, ctx: PhaseContext, localMode: boolean): Promise<void> {
  const { host } = data;
  const join = data.cfg.join;
  const { cfg, release } = await data.clusterConfig();
  const discovered = await data.tlsBootstrap();
  // ControlPlaneKubeletLocalMode: a joining control plane's kubelet talks to its own API server.
  const tlsBootstrap =
    localMode && join.controlPlane
      ? withServer(discovered.tlsBootstrap, localAPIEndpointURL(join.controlPlane.localAPIEndpoint))
      : discovered.tlsBootstrap;
  await host.writeFile(
    BOOTSTRAP_KUBECONFIG_PATH,
    renderKubeConfig(tlsBootstrap, { preferences: release.behaviour.kubeconfigPreferences }),
    KUBECONFIG_FILE_MODE,
  );
  if (!(await host.exists(join.caCertPath)) && discovered.caPEM.length > 0) {
    await host.writeFile(join.caCertPath, discovered.caPEM, CERT_FILE_MODE);
  }

  // A new Node under the name of a Ready one (a control plane, say) would break it.
  const nodeName = join.nodeRegistration.name;
  const bootstrapClient = await data.bootstrapClient();
  const node = await getIfExists(
    bootstrapClient,
    { apiVersion: "v1", kind: "Node", name: nodeName },
    { timeoutMs: 10_000, failFast: () => true },
  ).catch((e: unknown) => {
    throw new Error(`cannot get Node "${nodeName}": ${(e as Error).message}`, { cause: e });
  });
  if (isReady(node)) {
    throw new Error(
      `a Node with name "${nodeName}" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node`,
    );
  }

  const init = await getInitSystem(host);
  await tryStopKubelet(init, ctx.log);
  if (nodeLocalCRISocket(cfg, release)) {
    ctx.log.info(`Writing kubelet configuration to file "${INSTANCE_CONFIG_PATH}"`);
    await writeKubeletFile(
      host,
      INSTANCE_CONFIG_PATH,
      renderInstanceConfig(join.nodeRegistration.criSocket),
    );
  }
  const patches = await loadPatches(data, ctx);
  ctx.log.info(`Writing kubelet configuration to file "${CONFIG_PATH}"`);
  await writeKubeletFile(
    host,
    CONFIG_PATH,
    await kubeletConfigText({ host, cfg, release }, ctx, patches, init),
  );
  ctx.log.info(`Writing kubelet environment file with flags to file "${FLAGS_ENV_PATH}"`);
  await writeKubeletFile(
    host,
    FLAGS_ENV_PATH,
    renderKubeletFlagsEnv({
      nodeRegistration: join.nodeRegistration,
      hostname: kubeletHostname(await host.hostname()),
      pauseImage: release.behaviour.podInfraContainerImageFlag
        ? pauseImage(cfg.cluster.imageRepository, release)
        : undefined,
      nodeLocalCRISocket: nodeLocalCRISocket(cfg, release),
      // A control plane gets its taints from mark-control-plane.
      registerTaintsUsingFlags: join.controlPlane === undefined,
      keepExtraArgsOrder: extraArgsKeepOrder(cfg.cluster.kubernetesVersion, release),
    }),
  );
  ctx.log.info("Starting the kubelet");
  await tryStartKubelet(init, ctx.log);
}
