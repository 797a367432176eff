import { ADMIN_KUBECONFIG } from "../../config/paths.js";
import {
  checkUpgradeMixedArguments,
  fromFlagOrConfig,
  loadUpgradeConfiguration,
  type DefaultedUpgradeConfiguration,
} from "../../config/upgrade-config.js";
import {
  computeAvailableUpgrades,
  genUpgradePlan,
  printUpgradePlan,
  type ComponentConfigVersionState,
  type PlanInputs,
} from "../../config/upgrade-plan.js";
import { parseSemantic } from "../../config/upgrade-policy.js";
import { releaseFor, storedKubernetesVersion } from "../../config/versions.js";
import { resolveKubernetesVersion } from "../../node/release-version.js";
import { NodeClusterAccess } from "../../kube/access.js";
import type { ClusterAccess, KubeClient } from "../../kube/types.js";
import { runChecks, validateIgnorePreflightErrors } from "../../node/preflight/checks.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import { kubeconfigFile } from "../../pki/paths.js";
import type { Host } from "../../remote/host.js";
import type { Reporter } from "../../workflow/reporter.js";
import {
  fetchClusterConfig,
  KUBEADM_CONFIG_MAP,
  KubeadmConfigNotFound,
  readNodeFiles,
  upgradeInitConfig,
  type ClusterStoredConfig,
} from "./cluster-config.js";
import { KUBEADM_UPGRADE_TIMING, type UpgradeTiming } from "./data.js";
import { checkClusterHealth, type HealthInput } from "./health.js";
import {
  clusterVersion,
  componentVersions,
  deployedDNSVersion,
  kubeletVersions,
} from "./versions.js";
import type { InitConfig } from "../../config/types.js";
import { clusterConfigurationYAML } from "../../manifests/upload-config.js";

// `kubeforge upgrade plan [version]` (kubeadm's cmd/upgrade/plan.go runPlan over common.go
// enforceRequirements and phases/upgrade/compute.go GetAvailableUpgrades, v1.35): the root
// check, the cluster's configuration, the health checks, then the versions on offer — a patch
// of the cluster's minor and the next stable release, or the one version given — printed as
// kubeadm's tables or as an output.kubeadm.k8s.io/v1alpha3 UpgradePlan. `upgrade diff` shares
// the first half (planContext).

export interface PlanFlags {
  kubeconfig?: string;
  allowExperimentalUpgrades?: boolean;
  allowRCUpgrades?: boolean;
  ignorePreflightErrors?: string[];
  printConfig?: boolean;
}

export interface PlanRequest {
  /** plan's [version] argument. */
  version?: string;
  config?: { text: string; source: string };
  flags: PlanFlags;
  /** kubeadm flag names the user set (for the --config mixing rule). */
  given: string[];
  host: Host;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  cluster?: ClusterAccess;
  timing?: Partial<UpgradeTiming>;
}

/** What plan and diff know once the requirements are enforced. */
export interface PlanContext {
  client: KubeClient;
  stored: ClusterStoredConfig;
  /** The cluster's configuration for this node (kubernetesVersion: the stored one). */
  cfg: InitConfig;
  upgradeConfig: DefaultedUpgradeConfiguration;
  host: Host;
}

/**
 * enforceRequirements of plan (never a dry run); for diff (runDiff) only the configuration,
 * read under its own log prefix.
 */
export async function planContext(
  request: PlanRequest,
  opts: { healthChecks: boolean; prefix: "upgrade/config" | "upgrade/diff" },
): Promise<PlanContext> {
  const { reporter, host } = request;
  const info = (l: string) => reporter.info(l);
  const warn = (l: string) => reporter.warn(l);
  if (request.config) checkUpgradeMixedArguments(request.given);
  const loaded = loadUpgradeConfiguration(request.config);
  for (const w of loaded.warnings) warn(w);
  const ignorePreflightErrors = validateIgnorePreflightErrors(
    request.flags.ignorePreflightErrors ?? [],
    loaded.cfg.plan.ignorePreflightErrors,
  );
  const out = { info, warn };
  const access = request.cluster ?? new NodeClusterAccess(host);
  const kubeconfigPath = request.flags.kubeconfig ?? kubeconfigFile(ADMIN_KUBECONFIG);
  const files = readNodeFiles(host, true);
  let client: KubeClient;
  try {
    client = await access.clientFor(kubeconfigPath);
  } catch (e) {
    throw new Error(
      `couldn't create a Kubernetes client from file "${kubeconfigPath}": ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (opts.healthChecks) {
    info("[preflight] Running pre-flight checks.");
    await runChecks([isPrivilegedUserCheck(host)], ignorePreflightErrors, out);
  }
  let stored: ClusterStoredConfig;
  try {
    stored = await fetchClusterConfig(client, opts.prefix, info);
  } catch (e) {
    if (e instanceof KubeadmConfigNotFound) {
      info(
        `[upgrade/config] In order to upgrade, a ConfigMap called "${KUBEADM_CONFIG_MAP}" in the "kube-system" namespace must exist.`,
      );
      info(
        `[upgrade/config] Use 'kubeadm init phase upload-config --config your-config.yaml' to re-upload it.`,
      );
    }
    throw new Error(`[upgrade/init config] FATAL: ${(e as Error).message}`, { cause: e });
  }
  const cfg = await upgradeInitConfig({
    client,
    host,
    files,
    stored,
    resolved: storedKubernetesVersion(stored.kubernetesVersion),
    detectedAddress: () => Promise.resolve(""),
    timeouts: loaded.cfg.timeouts,
    imagePullPolicy: "IfNotPresent",
    imagePullSerial: true,
    ignorePreflightErrors: [...ignorePreflightErrors],
    warn,
  });
  if (opts.healthChecks) {
    const health: HealthInput = {
      host,
      cfg,
      release: releaseFor(cfg.cluster.kubernetesVersion),
      dryRun: false,
      ignorePreflightErrors,
      timing: { ...KUBEADM_UPGRADE_TIMING, ...request.timing },
      client: () => Promise.resolve(client),
    };
    try {
      await checkClusterHealth(health, out, { info, warn });
    } catch (e) {
      throw new Error(`[upgrade/health] FATAL: ${(e as Error).message}`, { cause: e });
    }
  }
  return { client, stored, cfg, upgradeConfig: loaded.cfg, host };
}

/** kubeadm's printConfiguration: the ClusterConfiguration, each line tab-indented. */
export function configurationUsed(cfg: InitConfig): string {
  return `[upgrade/config] Configuration used:\n${clusterConfigurationYAML(cfg.cluster)
    .replace(/\n$/, "")
    .split("\n")
    .map((l) => `\t${l}\n`)
    .join("")}`;
}

/** The semver of a "v1.35.0" string as Go's version.String() prints it: "1.35.0". */
function bare(version: string): string {
  return parseSemantic(version)?.version ?? version.replace(/^v/, "");
}

/** componentconfigs.GetVersionStates: kube-proxy's, then the kubelet's (plan_test.go order). */
function configVersionStates(stored: ClusterStoredConfig): ComponentConfigVersionState[] {
  const state = (group: string, preferred: string, doc: { apiVersion?: string } | undefined) => ({
    group,
    currentVersion: doc?.apiVersion?.split("/")[1] ?? "",
    preferredVersion: preferred,
    manualUpgradeRequired: false,
  });
  return [
    state("kubeproxy.config.k8s.io", "v1alpha1", stored.docs.kubeProxy),
    state("kubelet.config.k8s.io", "v1beta1", stored.docs.kubelet),
  ];
}

/** The version a label or a given version names (kubeadm's VersionGetter.VersionFromCILabel). */
async function versionFromLabel(
  label: string,
  offline: string | undefined,
  env: NodeJS.ProcessEnv,
  warn: (l: string) => void,
): Promise<string> {
  if (offline)
    return (await resolveKubernetesVersion(offline, { env, warn, fetch, field: "version" }))
      .version;
  return (await resolveKubernetesVersion(label, { env, warn, fetch, field: "version" })).version;
}

export async function runUpgradePlan(
  request: PlanRequest,
  format: "text" | "json" | "yaml",
): Promise<void> {
  const { reporter, env } = request;
  const info = (l: string) => reporter.info(l);
  const warn = (l: string) => reporter.warn(l);
  const ctx = await planContext(request, { healthChecks: true, prefix: "upgrade/config" });
  const p = ctx.upgradeConfig.plan;
  if (fromFlagOrConfig(request.flags.printConfig, p.printConfig)) {
    request.stdout(configurationUsed(ctx.cfg));
  }
  // allowExperimentalUpgrades/allowRCUpgrades widen the labels kubeadm consults (latest-*);
  // kubeforge resolves only the stable labels and any version given [M].
  fromFlagOrConfig(request.flags.allowExperimentalUpgrades, p.allowExperimentalUpgrades);
  fromFlagOrConfig(request.flags.allowRCUpgrades, p.allowRCUpgrades);
  const offline = request.version ?? p.kubernetesVersion;

  info("[upgrade] Fetching available versions to upgrade to");
  const client = ctx.client;
  const clusterVer = await clusterVersion(client);
  info(`[upgrade/versions] Cluster version: ${bare(clusterVer)}`);
  // kubeforge acts as the kubeadm of the version it upgrades to: the stable release it
  // offers, or the version given [M].
  const stable = await versionFromLabel("stable", offline, env, warn);
  const kubeadmVersion = stable;
  info(`[upgrade/versions] kubeadm version: ${kubeadmVersion}`);
  info(`[upgrade/versions] Target version: ${stable}`);
  const cluster = parseSemantic(clusterVer)!;
  const stableSem = parseSemantic(stable)!;
  let patchVersion: string | undefined;
  // patchVersionBranchExists: the cluster's own minor still has a stable-1.<minor> label.
  if (stableSem.compare(cluster) >= 0) {
    const branch = `${cluster.major}.${cluster.minor}`;
    try {
      patchVersion = await versionFromLabel(`stable-${branch}`, offline, env, warn);
      info(`[upgrade/versions] Latest version in the v${branch} series: ${patchVersion}`);
    } catch (e) {
      info(`[upgrade/versions] WARNING: ${(e as Error).message}`);
    }
  }
  const [kubelets, apiservers, controllerManagers, schedulers, etcds, dns] = await Promise.all([
    kubeletVersions(client),
    componentVersions(client, "kube-apiserver"),
    componentVersions(client, "kube-controller-manager"),
    componentVersions(client, "kube-scheduler"),
    ctx.cfg.cluster.etcd.external ? Promise.resolve({}) : componentVersions(client, "etcd"),
    deployedDNSVersion(client),
  ]);
  const inputs: PlanInputs = {
    clusterVersion: clusterVer,
    kubeadmVersion,
    stableVersion: stable,
    patchVersion,
    before: {
      kubeAPIServerVersions: apiservers,
      kubeControllerManagerVersions: controllerManagers,
      kubeSchedulerVersions: schedulers,
      kubeletVersions: kubelets,
      etcdVersions: etcds,
      dnsVersion: dns,
    },
    etcdVersionFor: (v) => (ctx.cfg.cluster.etcd.external ? "" : releaseFor(v).etcdVersion),
    dnsVersionFor: (v) => (ctx.cfg.cluster.dns.disabled ? "" : releaseFor(v).coreDNSVersion),
  };
  const upgrades = computeAvailableUpgrades(inputs);
  const plan = genUpgradePlan(upgrades, configVersionStates(ctx.stored));
  // plan.go: "No upgrades available" returns before printing anything (klog V(1) only).
  if (upgrades.length === 0) return;
  request.stdout(printUpgradePlan(plan, format, "kubeforge"));
}
