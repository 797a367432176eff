import { posix } from "node:path";
import { parseGoDuration } from "../../config/duration.js";
import { KUBELET_KUBECONFIG, KUBERNETES_DIR } from "../../config/paths.js";
import { parseYAMLDocuments } from "../../config/yaml.js";
import { waitForKubelet } from "../../kube/health.js";
import { annotateCRISocket } from "../../kube/idempotency.js";
import { poll } from "../../kube/poll.js";
import { featureGateEnabled, nodeLocalCRISocket } from "../../manifests/kubelet.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { kubeletHealthzURL } from "../init/wait-control-plane.js";
import { CONFIG_PATH } from "../kubelet.js";
import { BOOTSTRAP_KUBELET_KUBECONFIG } from "../../node/preflight/join-checks.js";
import type { JoinData } from "./data.js";

// kubeadm's runKubeletWaitBootstrapPhase (cmd/phases/join/kubelet.go): the kubelet's healthz,
// then kubelet.conf written by its TLS bootstrap and usable; bootstrap-kubelet.conf is removed
// however the wait ends, so the token leaves the node. With ControlPlaneKubeletLocalMode (on in every release
// kubeforge supports) this is its own phase; otherwise kubelet-start would run it.

export const BOOTSTRAP_KUBECONFIG_PATH = posix.join(KUBERNETES_DIR, BOOTSTRAP_KUBELET_KUBECONFIG);
export const CONTROL_PLANE_KUBELET_LOCAL_MODE = "ControlPlaneKubeletLocalMode";
const KUBELET_CONFIG_PATH = posix.join(KUBERNETES_DIR, KUBELET_KUBECONFIG);
/** kubeadm's TLSBootstrapRetryInterval. */
const TLS_BOOTSTRAP_RETRY_INTERVAL_MS = 5_000;

/** Whether the cluster runs with ControlPlaneKubeletLocalMode (then this phase does the wait). */
export async function kubeletLocalMode(data: JoinData): Promise<boolean> {
  const { cfg, release } = await data.clusterConfig();
  return featureGateEnabled(cfg.cluster.featureGates, release, CONTROL_PLANE_KUBELET_LOCAL_MODE);
}

/**
 * Removes bootstrap-kubelet.conf and the bootstrap token in it. kubeadm defers this os.Remove, so
 * the token leaves the node however the join ends, and ignores its error; kubeforge warns.
 */
export async function removeBootstrapKubeconfig(data: JoinData, ctx: PhaseContext): Promise<void> {
  try {
    await data.host.remove(BOOTSTRAP_KUBECONFIG_PATH);
  } catch (e) {
    ctx.log.warn(`could not remove ${BOOTSTRAP_KUBECONFIG_PATH}: ${(e as Error).message}`);
  }
}

/** kubeadm's runKubeletWaitBootstrapPhase: bootstrap-kubelet.conf goes whether the wait succeeds or not. */
export async function waitForKubeletBootstrap(data: JoinData, ctx: PhaseContext): Promise<void> {
  try {
    await waitForBootstrappedKubelet(data, ctx);
  } finally {
    await removeBootstrapKubeconfig(data, ctx);
  }
}

async function waitForBootstrappedKubelet(data: JoinData, ctx: PhaseContext): Promise<void> {
  const { host } = data;
  const join = data.cfg.join;
  const { cfg, release } = await data.clusterConfig();
  const log = (line: string) => ctx.log.info(line);
  // The written config.yaml carries the user's kubeletconfiguration patches (healthz port...).
  const written = parseYAMLDocuments(
    (await host.readFile(CONFIG_PATH)).toString("utf8"),
    CONFIG_PATH,
  )[0] as Record<string, unknown>;
  const url = kubeletHealthzURL(written);
  if (url) {
    await waitForKubelet(data.api, {
      url,
      timeoutMs: parseGoDuration(join.timeouts.kubeletHealthCheck),
      log,
    });
  }
  log("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap");
  const client = await poll(() => data.api.clientFor(KUBELET_CONFIG_PATH), {
    timeoutMs: parseGoDuration(join.timeouts.tlsBootstrap),
    intervalMs: TLS_BOOTSTRAP_RETRY_INTERVAL_MS,
    what: `the kubelet to write a usable ${KUBELET_CONFIG_PATH} (TLS bootstrap); check 'systemctl status kubelet' and 'journalctl -xeu kubelet'`,
  });

  if (!nodeLocalCRISocket(cfg, release)) {
    const { name, criSocket } = join.nodeRegistration;
    await annotateCRISocket(
      client,
      name,
      criSocket,
      { timeoutMs: parseGoDuration(join.timeouts.kubernetesAPICall) },
      log,
    );
  }
}

/**
 * A dry run neither waits nor removes bootstrap-kubelet.conf, which stays in the dry-run folder
 * (kubeadm's runKubeletWaitBootstrapPhase returns before its deferred removal when dry-running,
 * kubernetes/kubernetes#129956). kubeadm's phase itself branches on dry-run here.
 */
export function skipWaitInDryRun(data: JoinData, ctx: PhaseContext): boolean {
  if (!data.dryRun) return false;
  ctx.log.info("Would wait for the kubelet to be bootstrapped");
  return true;
}

/** Listed in kubeadm's help since the gate went beta (v1.33, kubernetes/kubernetes#129716). */
export const kubeletWaitBootstrapPhase: Phase<JoinData> = {
  name: "kubelet-wait-bootstrap",
  short: "Wait for the kubelet to bootstrap itself",
  // Without ControlPlaneKubeletLocalMode, kubelet-start waits itself.
  run: async (data, ctx) => {
    if (!(await kubeletLocalMode(data)) || skipWaitInDryRun(data, ctx)) return;
    await waitForKubeletBootstrap(data, ctx);
  },
};
