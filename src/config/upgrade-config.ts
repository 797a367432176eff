import { DEFAULT_TIMEOUTS } from "./defaults.js";
import { isFlagAllowedWithConfig } from "./flags.js";
import { ConfigError, decodeConfigDocuments } from "./load.js";
import type {
  ImagePullPolicy,
  Timeouts,
  UpgradeConfiguration,
  UpgradeDiffConfiguration,
  UpgradePlanConfiguration,
} from "./types.js";

// kubeadm's UpgradeConfiguration (apis/kubeadm/v1beta4/types.go, defaults.go
// SetDefaults_UpgradeConfiguration) and how `kubeadm upgrade apply|node|plan|diff` combine it with
// their flags (cmd/upgrade/apply.go newApplyData, node.go newNodeData, plan.go runPlan):
// a flag the user set wins (cmdutil.ValueFromFlagsOrConfig), then the file, then the default.
// Since v1beta4 `--config` takes only an UpgradeConfiguration; every other flag but the few
// kubeadm allows with it is refused ("can not mix '--config' with arguments").

/** v1beta4 SetDefaults_UpgradeConfiguration: renewal and etcd upgrade on, pulls as init. */
export interface DefaultedUpgradeConfiguration {
  apply: {
    kubernetesVersion?: string;
    allowExperimentalUpgrades: boolean;
    allowRCUpgrades: boolean;
    certificateRenewal: boolean;
    dryRun: boolean;
    etcdUpgrade: boolean;
    forceUpgrade: boolean;
    ignorePreflightErrors: string[];
    patchesDirectory?: string;
    printConfig: boolean;
    skipPhases: string[];
    imagePullPolicy: ImagePullPolicy;
    imagePullSerial: boolean;
  };
  node: {
    certificateRenewal: boolean;
    dryRun: boolean;
    etcdUpgrade: boolean;
    ignorePreflightErrors: string[];
    skipPhases: string[];
    patchesDirectory?: string;
    imagePullPolicy: ImagePullPolicy;
    imagePullSerial: boolean;
  };
  plan: Required<Omit<UpgradePlanConfiguration, "kubernetesVersion">> & {
    kubernetesVersion?: string;
  };
  diff: { kubernetesVersion?: string; contextLines: number };
  timeouts: Required<Timeouts>;
}

/** kubeadm's default number of diff context lines (UpgradeDiffConfiguration.contextLines). */
export const DEFAULT_DIFF_CONTEXT_LINES = 3;

const PULL_POLICIES: readonly ImagePullPolicy[] = ["Always", "IfNotPresent", "Never"];

function pullPolicy(value: string | undefined, field: string): ImagePullPolicy {
  if (value === undefined || value === "") return "IfNotPresent";
  if (!PULL_POLICIES.includes(value as ImagePullPolicy)) {
    throw new ConfigError([
      `UpgradeConfiguration.${field}: "${value}" is not one of ${PULL_POLICIES.join(", ")}`,
    ]);
  }
  return value as ImagePullPolicy;
}

function diffDefaults(
  d: UpgradeDiffConfiguration | undefined,
): DefaultedUpgradeConfiguration["diff"] {
  const contextLines = d?.contextLines ?? DEFAULT_DIFF_CONTEXT_LINES;
  if (contextLines < 0) {
    throw new ConfigError([`UpgradeConfiguration.diff.contextLines must not be negative`]);
  }
  return {
    ...(d?.kubernetesVersion ? { kubernetesVersion: d.kubernetesVersion } : {}),
    contextLines,
  };
}

/** The UpgradeConfiguration with kubeadm's defaults (an absent file means all defaults). */
export function defaultUpgradeConfiguration(
  given: UpgradeConfiguration = {},
): DefaultedUpgradeConfiguration {
  const a = given.apply ?? {};
  const n = given.node ?? {};
  const p = given.plan ?? {};
  return {
    apply: {
      ...(a.kubernetesVersion ? { kubernetesVersion: a.kubernetesVersion } : {}),
      allowExperimentalUpgrades: a.allowExperimentalUpgrades ?? false,
      allowRCUpgrades: a.allowRCUpgrades ?? false,
      certificateRenewal: a.certificateRenewal ?? true,
      dryRun: a.dryRun ?? false,
      etcdUpgrade: a.etcdUpgrade ?? true,
      forceUpgrade: a.forceUpgrade ?? false,
      ignorePreflightErrors: a.ignorePreflightErrors ?? [],
      ...(a.patches?.directory ? { patchesDirectory: a.patches.directory } : {}),
      printConfig: a.printConfig ?? false,
      skipPhases: a.skipPhases ?? [],
      imagePullPolicy: pullPolicy(a.imagePullPolicy, "apply.imagePullPolicy"),
      imagePullSerial: a.imagePullSerial ?? true,
    },
    node: {
      certificateRenewal: n.certificateRenewal ?? true,
      dryRun: n.dryRun ?? false,
      etcdUpgrade: n.etcdUpgrade ?? true,
      ignorePreflightErrors: n.ignorePreflightErrors ?? [],
      skipPhases: n.skipPhases ?? [],
      ...(n.patches?.directory ? { patchesDirectory: n.patches.directory } : {}),
      imagePullPolicy: pullPolicy(n.imagePullPolicy, "node.imagePullPolicy"),
      imagePullSerial: n.imagePullSerial ?? true,
    },
    plan: {
      ...(p.kubernetesVersion ? { kubernetesVersion: p.kubernetesVersion } : {}),
      allowExperimentalUpgrades: p.allowExperimentalUpgrades ?? false,
      allowRCUpgrades: p.allowRCUpgrades ?? false,
      dryRun: p.dryRun ?? false,
      ignorePreflightErrors: p.ignorePreflightErrors ?? [],
      printConfig: p.printConfig ?? false,
    },
    diff: diffDefaults(given.diff),
    timeouts: { ...DEFAULT_TIMEOUTS, ...given.timeouts },
  };
}

/** The UpgradeConfiguration of a `--config` file, defaulted, and what loading had to say. */
export interface LoadedUpgradeConfiguration {
  cfg: DefaultedUpgradeConfiguration;
  warnings: string[];
}

/**
 * Reads `--config` as kubeadm's LoadOrDefaultUpgradeConfiguration: no file means the defaults;
 * a file must hold an UpgradeConfiguration, strictly decoded. Other documents are reported and
 * ignored: upgrade reconfigures nothing (edit the kubeadm-config, kubelet-config and kube-proxy
 * ConfigMaps instead).
 */
export function loadUpgradeConfiguration(
  file: { text: string; source: string } | undefined,
): LoadedUpgradeConfiguration {
  if (!file) return { cfg: defaultUpgradeConfiguration(), warnings: [] };
  const docs = decodeConfigDocuments(file.text, file.source);
  if (!docs.upgrade) {
    throw new ConfigError([
      `${file.source}: no UpgradeConfiguration (kubeadm.k8s.io/v1beta4) found; since v1beta4 "upgrade --config" reads only that kind`,
    ]);
  }
  const ignored = [
    docs.init ? "InitConfiguration" : undefined,
    docs.cluster ? "ClusterConfiguration" : undefined,
    docs.join ? "JoinConfiguration" : undefined,
    docs.kubelet ? "KubeletConfiguration" : undefined,
    docs.kubeProxy ? "KubeProxyConfiguration" : undefined,
    ...docs.ignoredKinds.filter((k) => k !== "UpgradeConfiguration"),
  ].filter((k): k is string => k !== undefined);
  const warnings = [...(docs.warnings ?? [])];
  if (ignored.length > 0) {
    warnings.push(
      `[config] upgrade reads only the UpgradeConfiguration; ignored: ${ignored.join(", ")} (upgrade does not reconfigure the cluster: edit the kubeadm-config, kubelet-config and kube-proxy ConfigMaps)`,
    );
  }
  return { cfg: defaultUpgradeConfiguration(docs.upgrade), warnings };
}

/**
 * kubeadm's ValidateMixedArguments for the upgrade commands: with --config, only the flags kubeadm
 * allows beside it may be given (kubeforge's own --rootfs and --dry-run-dir count as allowed).
 * `given` are flag names without dashes.
 */
export function checkUpgradeMixedArguments(given: readonly string[]): void {
  const invalid = [...new Set(given)]
    .filter((f) => f !== "config" && f !== "dry-run-dir" && !isFlagAllowedWithConfig(f))
    .sort();
  if (invalid.length > 0) {
    throw new Error(
      `can not mix '--config' with arguments [${invalid.join(" ")}]: put these settings in the UpgradeConfiguration instead`,
    );
  }
}

/** cmdutil.ValueFromFlagsOrConfig: the flag when the user set it, else the file's value. */
export function fromFlagOrConfig<T>(flag: T | undefined, config: T): T {
  return flag === undefined ? config : flag;
}

/**
 * The target of `upgrade apply`: the argument, else apply.kubernetesVersion; neither is
 * kubeadm's "missing one or more required arguments" (cmdutil.ValidateExactArgNumber).
 */
export function applyTargetVersion(
  arg: string | undefined,
  configured: string | undefined,
): string {
  const version = arg ?? configured;
  if (!version) {
    throw new Error(
      "missing one or more required arguments. Required arguments: [version] (or set apply.kubernetesVersion in the UpgradeConfiguration)",
    );
  }
  return version;
}
