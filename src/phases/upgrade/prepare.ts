import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix, resolve } from "node:path";
import { parseGoDuration } from "../../config/duration.js";
import { ConfigError } from "../../config/load.js";
import { ADMIN_KUBECONFIG, KUBELET_KUBECONFIG, MANIFESTS_DIR } from "../../config/paths.js";
import {
  applyTargetVersion,
  checkUpgradeMixedArguments,
  fromFlagOrConfig,
  loadUpgradeConfiguration,
  type DefaultedUpgradeConfiguration,
} from "../../config/upgrade-config.js";
import type { ResolvedVersion } from "../../config/release.js";
import type { InitConfig } from "../../config/types.js";
import { storedKubernetesVersion } from "../../config/versions.js";
import { resolveKubernetesVersion } from "../../node/release-version.js";
import { NodeClusterAccess } from "../../kube/access.js";
import { DryRunKubeClient } from "../../kube/dry-run.js";
import type { ClusterAccess, KubeClient } from "../../kube/types.js";
import { clusterConfigurationYAML } from "../../manifests/upload-config.js";
import { proxyEnvVars } from "../../manifests/static-pod.js";
import { detectAdvertiseAddress } from "../../node/address.js";
import { validateIgnorePreflightErrors } from "../../node/preflight/checks.js";
import { KeyPool } from "../../pki/keys.js";
import { kubeconfigFile } from "../../pki/paths.js";
import { OverlayDryRunHost, wouldRunLine } from "../../remote/dry-run.js";
import type { Host } from "../../remote/host.js";
import { LocalHost } from "../../remote/local.js";
import { routeThrough } from "../../remote/route.js";
import type { Reporter } from "../../workflow/reporter.js";
import { Runner } from "../../workflow/runner.js";
import {
  fetchClusterConfig,
  type ClusterStoredConfig,
  KUBEADM_CONFIG_MAP,
  KubeadmConfigNotFound,
  readNodeFiles,
  upgradeInitConfig,
} from "./cluster-config.js";
import { KUBEADM_UPGRADE_TIMING, type UpgradeData, type UpgradeTiming } from "./data.js";
import { ReadThroughDryRunClient, singleClientAccess } from "./dry-run.js";
import { dryRunUpgradeEtcd, realUpgradeEtcd } from "./etcd-access.js";
import { applyPhases, nodePhases } from "./index.js";
import { KUBEADM_TMP_DIR } from "./paths.js";

// Everything between an edge (CLI flags, a cluster-level rehearsal) and the `upgrade apply` /
// `upgrade node` workflows, as kubeadm's newApplyData and newNodeData (cmd/upgrade/apply.go,
// node.go, v1.35): the UpgradeConfiguration (file or defaults), each setting from the flag the
// user set else the file, the client of --kubeconfig, the cluster's configuration read from
// kube-system/kubeadm-config with the target version for apply, then the phase data.

/** Flags the user set (undefined: not given; kubeadm's ValueFromFlagsOrConfig then reads the file). */
export interface UpgradeFlags {
  kubeconfig?: string;
  dryRun?: boolean;
  etcdUpgrade?: boolean;
  certificateRenewal?: boolean;
  patches?: string;
  skipPhases?: string[];
  ignorePreflightErrors?: string[];
  /** apply only. */
  yes?: boolean;
  force?: boolean;
  allowExperimentalUpgrades?: boolean;
  allowRCUpgrades?: boolean;
  printConfig?: boolean;
}

/** kubeadm's flag names, for the "can not mix '--config' with arguments" rule. */
const FLAG_NAMES: Record<keyof UpgradeFlags, string> = {
  kubeconfig: "kubeconfig",
  dryRun: "dry-run",
  etcdUpgrade: "etcd-upgrade",
  certificateRenewal: "certificate-renewal",
  patches: "patches",
  skipPhases: "skip-phases",
  ignorePreflightErrors: "ignore-preflight-errors",
  yes: "yes",
  force: "force",
  allowExperimentalUpgrades: "allow-experimental-upgrades",
  allowRCUpgrades: "allow-release-candidate-upgrades",
  printConfig: "print-config",
};

export function givenUpgradeFlags(flags: UpgradeFlags): string[] {
  return (Object.keys(FLAG_NAMES) as (keyof UpgradeFlags)[])
    .filter((k) => flags[k] !== undefined)
    .map((k) => FLAG_NAMES[k]);
}

export interface UpgradeRequest {
  command: "apply" | "node";
  /** apply's [version] argument. */
  version?: string;
  /** The `--config` file (an UpgradeConfiguration). */
  config?: { text: string; source: string };
  flags: UpgradeFlags;
  /** The machine (its rootfs already applied). */
  host: Host;
  /** Where a dry run writes; a new temporary folder when absent. */
  dryRunDir?: string;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  /** The command's standard output: dry-run API objects, --print-config, the closing message. */
  stdout: (text: string) => void;
  /** The interactive confirmation of apply (kubeadm reads a line from stdin). */
  confirm?: (question: string) => Promise<boolean>;
  /** How the --kubeconfig client is made; default: read through the host, connect along its route. */
  cluster?: ClusterAccess;
  now?: () => Date;
  /** Waits scaled down (tests); kubeadm's values otherwise. */
  timing?: Partial<UpgradeTiming>;
}

export interface PreparedUpgrade {
  data: UpgradeData;
  runner: Runner<UpgradeData>;
  skipPhases: string[];
  dryRunDir: string | undefined;
  upgradeConfig: DefaultedUpgradeConfiguration;
}

function proxyEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(proxyEnvVars(env).map((v) => [v.name, v.value ?? ""]));
}

function once<T>(compute: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= compute().catch((e: unknown) => {
      value = undefined;
      throw e;
    });
    return value;
  };
}

/** kubeadm's printConfiguration: the ClusterConfiguration, each line tab-indented. */
function printConfiguration(data: UpgradeData, out: (text: string) => void): void {
  const yaml = clusterConfigurationYAML(data.cfg.cluster);
  out(
    `[upgrade/config] Configuration used:\n${yaml
      .replace(/\n$/, "")
      .split("\n")
      .map((l) => `\t${l}\n`)
      .join("")}`,
  );
}

/** The settings of a run: each from the flag the user set, else the UpgradeConfiguration. */
interface UpgradeSettings {
  ucfg: DefaultedUpgradeConfiguration;
  section: DefaultedUpgradeConfiguration["apply"] | DefaultedUpgradeConfiguration["node"];
  /** apply's target as given (argument or file); "" for node. */
  targetSpec: string;
  ignoreList: string[];
  dryRun: boolean;
  etcdUpgrade: boolean;
  renewCerts: boolean;
  force: boolean;
  allowExperimentalUpgrades: boolean;
  allowRCUpgrades: boolean;
  printConfig: boolean;
  patchesDir: string | undefined;
  skipPhases: string[];
}

/** Flags and config: kubeadm's ValueFromFlagsOrConfig for every setting. */
function upgradeSettings(request: UpgradeRequest): UpgradeSettings {
  const { flags, command } = request;
  if (request.config) checkUpgradeMixedArguments(givenUpgradeFlags(flags));
  const loaded = loadUpgradeConfiguration(request.config);
  for (const w of loaded.warnings) request.reporter.warn(w);
  const ucfg = loaded.cfg;
  const section = command === "apply" ? ucfg.apply : ucfg.node;
  const applyOnly = (flag: boolean | undefined, file: boolean) =>
    command === "apply" && fromFlagOrConfig(flag, file);
  return {
    ucfg,
    section,
    // apply's [version]: mandatory unless the file names one; the argument wins.
    targetSpec:
      command === "apply" ? applyTargetVersion(request.version, ucfg.apply.kubernetesVersion) : "",
    ignoreList: [
      ...validateIgnorePreflightErrors(
        flags.ignorePreflightErrors ?? [],
        section.ignorePreflightErrors,
      ),
    ],
    dryRun: fromFlagOrConfig(flags.dryRun, section.dryRun),
    etcdUpgrade: fromFlagOrConfig(flags.etcdUpgrade, section.etcdUpgrade),
    renewCerts: fromFlagOrConfig(flags.certificateRenewal, section.certificateRenewal),
    force: applyOnly(flags.force, ucfg.apply.forceUpgrade),
    allowExperimentalUpgrades: applyOnly(
      flags.allowExperimentalUpgrades,
      ucfg.apply.allowExperimentalUpgrades,
    ),
    allowRCUpgrades: applyOnly(flags.allowRCUpgrades, ucfg.apply.allowRCUpgrades),
    printConfig: applyOnly(flags.printConfig, ucfg.apply.printConfig),
    patchesDir: flags.patches ?? section.patchesDirectory,
    // kubeadm: "If the flag for skipping phases was empty, use the values from config".
    skipPhases:
      flags.skipPhases && flags.skipPhases.length > 0 ? flags.skipPhases : section.skipPhases,
  };
}

/** How the run reaches the node and the cluster: for real, or through the dry-run views. */
interface UpgradeAccess {
  base: ClusterAccess;
  nodeHost: Host;
  client: () => Promise<KubeClient>;
  output: (text: string) => void;
  dryRunDir: string | undefined;
}

async function upgradeAccess(
  request: UpgradeRequest,
  kubeconfigPath: string,
  dryRun: boolean,
): Promise<UpgradeAccess> {
  const { host } = request;
  const info = (m: string) => request.reporter.info(m);
  const base = request.cluster ?? new NodeClusterAccess(host);
  const realClient = once(async () => {
    try {
      return await base.clientFor(kubeconfigPath);
    } catch (e) {
      throw new Error(
        `couldn't create a Kubernetes client from file "${kubeconfigPath}": ${(e as Error).message}`,
        { cause: e },
      );
    }
  });
  if (!dryRun) {
    return {
      base,
      nodeHost: host,
      client: realClient,
      output: request.stdout,
      dryRunDir: undefined,
    };
  }
  const dryRunDir = resolve(
    request.dryRunDir ?? (await mkdtemp(join(tmpdir(), "kubeforge-upgrade-dryrun-"))),
  );
  const recorder = new DryRunKubeClient(request.stdout, info);
  return {
    base,
    nodeHost: new OverlayDryRunHost(host, dryRunDir, (name, argv) =>
      info(wouldRunLine(name, argv)),
    ),
    client: once(async () => new ReadThroughDryRunClient(await realClient(), recorder)),
    output: (text) => {
      for (const line of text.replace(/\n$/, "").split("\n")) info(line);
    },
    dryRunDir,
  };
}

/** Cluster read: the ClusterConfiguration in kube-system/kubeadm-config, with kubeadm's messages. */
async function readStoredConfig(
  apiClient: KubeClient,
  command: UpgradeRequest["command"],
  info: (m: string) => void,
): Promise<ClusterStoredConfig> {
  let stored: ClusterStoredConfig;
  try {
    stored = await fetchClusterConfig(apiClient, "upgrade", info);
  } catch (e) {
    if (e instanceof KubeadmConfigNotFound && command === "apply") {
      info(
        `[upgrade] In order to upgrade, a ConfigMap called "${KUBEADM_CONFIG_MAP}" in the "kube-system" namespace must exist.`,
      );
      info(
        `[upgrade] Use 'kubeadm init phase upload-config --config your-config.yaml' to re-upload it.`,
      );
      throw new Error(`[upgrade] FATAL: ${e.message}`, { cause: e });
    }
    if (command === "node") {
      throw new Error(`unable to fetch the kubeadm-config ConfigMap: ${(e as Error).message}`, {
        cause: e,
      });
    }
    throw new Error(`[upgrade] FATAL: ${(e as Error).message}`, { cause: e });
  }
  if (command === "node" && !stored.kubernetesVersion) {
    throw new ConfigError([
      "kube-system/kubeadm-config: ClusterConfiguration.kubernetesVersion is empty",
    ]);
  }
  return stored;
}

/**
 * Target version. apply: the target (a label resolves as kubeadm's KubernetesReleaseVersion);
 * node: the version apply stored.
 */
async function targetVersion(
  request: UpgradeRequest,
  targetSpec: string,
  stored: ClusterStoredConfig,
): Promise<ResolvedVersion> {
  if (request.command === "apply") {
    return resolveKubernetesVersion(targetSpec, {
      warn: (m) => request.reporter.warn(m),
      env: request.env,
      fetch,
      field: "version",
      allowCI: true,
    });
  }
  return storedKubernetesVersion(stored.kubernetesVersion);
}

/** The waits: kubeadm's, timeouts.upgradeManifests from the configuration, a test's scaling. */
function upgradeTiming(cfg: InitConfig, request: UpgradeRequest): UpgradeTiming {
  return {
    ...KUBEADM_UPGRADE_TIMING,
    upgradeManifestsMs: parseGoDuration(
      cfg.init.timeouts.upgradeManifests,
      "timeouts.upgradeManifests",
    ),
    ...request.timing,
  };
}

export async function prepareUpgrade(request: UpgradeRequest): Promise<PreparedUpgrade> {
  const { reporter, host, flags, command } = request;
  const startedAt = new Date();
  const info = (m: string) => reporter.info(m);
  const s = upgradeSettings(request);

  // node: a control plane is a node with a kube-apiserver manifest; its default kubeconfig is
  // admin.conf, a worker's kubelet.conf.
  const isControlPlaneNode =
    command === "apply" || (await host.exists(posix.join(MANIFESTS_DIR, "kube-apiserver.yaml")));
  const kubeconfigPath =
    flags.kubeconfig ?? kubeconfigFile(isControlPlaneNode ? ADMIN_KUBECONFIG : KUBELET_KUBECONFIG);
  const files = readNodeFiles(host, isControlPlaneNode);
  const access = await upgradeAccess(request, kubeconfigPath, s.dryRun);

  // The cluster's configuration, as this node sees it.
  const apiClient = await access.client();
  const stored = await readStoredConfig(apiClient, command, info);
  const resolved = await targetVersion(request, s.targetSpec, stored);
  const cfg = await upgradeInitConfig({
    client: apiClient,
    host,
    files,
    stored,
    resolved,
    detectedAddress: () => detectAdvertiseAddress(host),
    timeouts: s.ucfg.timeouts,
    imagePullPolicy: s.section.imagePullPolicy,
    imagePullSerial: s.section.imagePullSerial,
    ignorePreflightErrors: s.ignoreList,
    warn: (m) => reporter.warn(m),
  });

  const etcd = s.dryRun
    ? dryRunUpgradeEtcd(info)
    : realUpgradeEtcd({
        host,
        certificatesDir: cfg.cluster.certificatesDir,
        route: routeThrough(host),
        etcdAPICallMs: parseGoDuration(cfg.init.timeouts.etcdAPICall),
        kubernetesAPICallMs: parseGoDuration(cfg.init.timeouts.kubernetesAPICall),
      });
  const confirm =
    request.confirm ??
    (() =>
      Promise.reject(
        new Error("won't proceed; the user didn't answer (Y|y) in order to continue"),
      ));

  const data: UpgradeData = {
    command,
    host: access.nodeHost,
    cfg,
    release: resolved.release,
    isControlPlaneNode,
    dryRun: s.dryRun,
    etcdUpgrade: s.etcdUpgrade,
    renewCerts: s.renewCerts,
    patchesDir: s.patchesDir,
    runnerFiles: new LocalHost(),
    ignorePreflightErrors: new Set(s.ignoreList),
    force: s.force,
    allowExperimentalUpgrades: s.allowExperimentalUpgrades,
    allowRCUpgrades: s.allowRCUpgrades,
    // SessionIsInteractive: not with -y, -f or --dry-run.
    sessionIsInteractive: command === "apply" && !(flags.yes === true || s.dryRun || s.force),
    kubeadmVersion: resolved.version,
    client: access.client,
    cluster: singleClientAccess(access.client, (url, opts) => access.base.probe(url, opts)),
    etcd,
    confirm,
    kubeletBackupParent: request.env.KUBEADM_UPGRADE_DRYRUN_DIR || KUBEADM_TMP_DIR,
    proxyEnv: proxyEnvironment(request.env),
    keys: new KeyPool(),
    timing: upgradeTiming(cfg, request),
    now: request.now ?? (() => startedAt),
    output: access.output,
  };
  if (s.printConfig) printConfiguration(data, request.stdout);
  return {
    data,
    runner: new Runner(command === "apply" ? applyPhases() : nodePhases(), reporter),
    skipPhases: s.skipPhases,
    dryRunDir: access.dryRunDir,
    upgradeConfig: s.ucfg,
  };
}
