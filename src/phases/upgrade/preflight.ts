import { checkPatches } from "../init/control-plane.js";
import {
  enforceVersionPolicies,
  minimumControlPlaneVersion,
  parseSemantic,
  versionPolicyVerdict,
} from "../../config/upgrade-policy.js";
import { type Check, runChecks, type PreflightOutput } from "../../node/preflight/checks.js";
import {
  asksRuntimeConfig,
  connectCRI,
  containerRuntimeVersionChecks,
  type CRIConnection,
} from "../../node/preflight/cri.js";
import { imagePullInput, runPullImagesCheck } from "../../node/preflight/image-pull.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import type { UpgradeData } from "./data.js";
import { checkClusterHealth } from "./health.js";
import { clusterVersion, kubeletVersions } from "./versions.js";

// The preflight phases of `upgrade apply` (cmd/phases/upgrade/apply/preflight.go) and `upgrade
// node` (cmd/phases/upgrade/node/preflight.go), v1.35. apply: the root check and
// ContainerRuntimeVersion (RunUpgradeChecks, quoted in kubernetes/kubernetes#135090), the cluster
// health checks, the version skew policy, the confirmation, then the control-plane images of
// the target pulled. node: the root check and ContainerRuntimeVersion, and on a control plane
// the image pull only — no
// health checks and no policy (it has no version of its own: it reads kubeadm-config).

const output = (ctx: PhaseContext): PreflightOutput => ({
  info: (l) => ctx.log.info(l),
  warn: (l) => ctx.log.warn(l),
});

/**
 * kubeadm's checks of both upgrades: the root check, then RunUpgradeChecks, whose
 * ContainerRuntimeVersion (1.35+) is kubeforge's too (kubeadm's upgrade runs also list
 * SystemVerification{isUpgrade}, which kubeforge leaves out).
 */
function upgradeChecks(data: UpgradeData, cri: CRIConnection): Check[] {
  const socket = data.cfg.init.nodeRegistration.criSocket;
  const kubeadm = { version: data.kubeadmVersion, release: data.release };
  return [
    isPrivilegedUserCheck(data.host),
    ...containerRuntimeVersionChecks(data.host, socket, cri, kubeadm),
  ];
}

/**
 * The questions the image pull at the end of preflight asks the runtime first: on a control
 * plane, not in a dry run, not with pull policy Never; with IfNotPresent (the default) whether
 * every image is there.
 */
function pullQuestions(data: UpgradeData): { images: readonly string[] } | undefined {
  if (data.dryRun || !data.isControlPlaneNode) return undefined;
  const pull = imagePullInput(
    data.cfg.cluster,
    data.release,
    data.cfg.init.nodeRegistration,
    data.host,
  );
  if (pull.policy === "Never") return undefined;
  return { images: pull.policy === "IfNotPresent" ? pull.images : [] };
}

/**
 * The runtime's answer, asked once: the checks and the image pull both read it. The pull's
 * questions to the runtime are asked beside it: the checks between only read the cluster.
 */
const runtimeConnection = (data: UpgradeData) => {
  const imagePull = pullQuestions(data);
  return connectCRI(
    data.host,
    data.cfg.init.nodeRegistration.criSocket,
    {},
    {
      runtimeConfig: asksRuntimeConfig({ version: data.kubeadmVersion, release: data.release }),
      ...(imagePull ? { imagePull } : {}),
    },
  );
};

/** The pull at the end of preflight, in kubeadm's upgrade words. */
async function pullImages(data: UpgradeData, ctx: PhaseContext, cri: CRIConnection): Promise<void> {
  if (data.dryRun) {
    ctx.log.info("[dryrun] Would pull the required images (like 'kubeadm config images pull')");
    return;
  }
  ctx.log.info("[upgrade/preflight] Pulling images required for setting up a Kubernetes cluster");
  ctx.log.info(
    "[upgrade/preflight] This might take a minute or two, depending on the speed of your internet connection",
  );
  ctx.log.info(
    "[upgrade/preflight] You can also perform this action beforehand using 'kubeadm config images pull'",
  );
  const nr = data.cfg.init.nodeRegistration;
  await runPullImagesCheck(
    imagePullInput(data.cfg.cluster, data.release, nr, data.host),
    data.ignorePreflightErrors,
    output(ctx),
    cri,
  );
}

/** apply's enforceVersionPolicies, with the versions read from the cluster. */
async function versionPolicy(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  const target = data.cfg.cluster.kubernetesVersion;
  if (!parseSemantic(target)) {
    throw new Error(`unable to parse normalized version "${target}" as a semantic version`);
  }
  ctx.log.info(`[upgrade/preflight] You have chosen to upgrade the cluster version to "${target}"`);
  const client = await data.client();
  const cluster = await clusterVersion(client).catch((e: unknown) => e as Error);
  const kubelets = await kubeletVersions(client).catch(
    (e: unknown) => new Error(`couldn't list all nodes in cluster: ${(e as Error).message}`),
  );
  if (!(cluster instanceof Error)) ctx.log.info(`[upgrade/versions] Cluster version: ${cluster}`);
  ctx.log.info(`[upgrade/versions] kubeadm version: ${data.kubeadmVersion}`);
  const errs = enforceVersionPolicies(
    {
      cluster,
      kubeadm: data.kubeadmVersion,
      kubelets: kubelets instanceof Error ? kubelets : new Map(Object.entries(kubelets)),
    },
    target,
    {
      allowExperimentalUpgrades: data.allowExperimentalUpgrades,
      allowRCUpgrades: data.allowRCUpgrades,
      minimumControlPlaneVersion: minimumControlPlaneVersion(data.kubeadmVersion),
    },
  );
  versionPolicyVerdict(errs, data.force, (l) => ctx.log.info(l));
}

async function runApplyPreflight(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  ctx.log.info("[upgrade/preflight] Running preflight checks");
  await checkPatches(data);
  const cri = await runtimeConnection(data);
  await runChecks(upgradeChecks(data, cri), data.ignorePreflightErrors, output(ctx));
  await checkClusterHealth(data, output(ctx), ctx.log);
  await versionPolicy(data, ctx);
  if (data.sessionIsInteractive && !(await data.confirm("Are you sure you want to proceed?"))) {
    throw new Error("won't proceed; the user didn't answer (Y|y) in order to continue");
  }
  await pullImages(data, ctx, cri);
}

async function runNodePreflight(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  ctx.log.info("[upgrade/preflight] Running pre-flight checks");
  await checkPatches(data);
  const cri = await runtimeConnection(data);
  await runChecks(upgradeChecks(data, cri), data.ignorePreflightErrors, output(ctx));
  if (!data.isControlPlaneNode) {
    ctx.log.info("[upgrade/preflight] Skipping prepull. Not a control plane node.");
    return;
  }
  await pullImages(data, ctx, cri);
}

export const applyPreflightPhase: Phase<UpgradeData> = {
  name: "preflight",
  short: "Run preflight checks before upgrade",
  run: runApplyPreflight,
};

export const nodePreflightPhase: Phase<UpgradeData> = {
  name: "preflight",
  short: "Run upgrade node pre-flight checks",
  run: runNodePreflight,
};
