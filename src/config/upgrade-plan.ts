import semver from "semver";
import { parseSemantic } from "./upgrade-policy.js";
import { toYAML } from "./yaml.js";

// `kubeadm upgrade plan`: which upgrades are available (phases/upgrade/compute.go
// GetAvailableUpgrades, v1alpha3 era: versions per node) and how they are printed
// (cmd/upgrade/plan.go genUpgradePlan, upgradePlanTextPrinter; output API
// output.kubeadm.k8s.io/v1alpha3 UpgradePlan). Pure: versions in, text out.

export const UPGRADE_PLAN_API_VERSION = "output.kubeadm.k8s.io/v1alpha3";

/** version → node names (kubeadm's map[string][]string). */
export type VersionsByNode = Record<string, string[]>;

/** compute.go ClusterState. */
export interface ClusterState {
  /** The API server version, as semver prints it ("1.35.0": no "v"). */
  kubeVersion: string;
  kubeAPIServerVersions?: VersionsByNode;
  kubeControllerManagerVersions?: VersionsByNode;
  kubeSchedulerVersions?: VersionsByNode;
  kubeletVersions?: VersionsByNode;
  etcdVersions?: VersionsByNode;
  /** After: the etcd version kubeadm deploys for the target. */
  etcdVersion?: string;
  dnsVersion: string;
  kubeadmVersion: string;
}

/** compute.go Upgrade. */
export interface Upgrade {
  description: string;
  before: ClusterState;
  after: ClusterState;
}

export interface ComponentUpgradePlan {
  name: string;
  currentVersion: string;
  newVersion: string;
  nodeName?: string;
}

export interface AvailableUpgrade {
  description: string;
  components: ComponentUpgradePlan[];
}

export interface ComponentConfigVersionState {
  group: string;
  currentVersion: string;
  preferredVersion: string;
  manualUpgradeRequired: boolean;
}

export interface UpgradePlan {
  kind: "UpgradePlan";
  apiVersion: typeof UPGRADE_PLAN_API_VERSION;
  availableUpgrades?: AvailableUpgrade[];
  configVersions: ComponentConfigVersionState[];
}

/** Upgrade.CanUpgradeKubelets. */
export function canUpgradeKubelets(up: Upgrade): boolean {
  const versions = Object.keys(up.before.kubeletVersions ?? {});
  if (versions.length > 1) return true;
  if (versions.length === 0) return false;
  return !versions.includes(up.after.kubeVersion);
}

/** sortedSliceFromStringStringArrayMap: Go's sort.Strings (byte order). */
function sortedKeys(map: VersionsByNode | undefined): string[] {
  return Object.keys(map ?? {}).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function perNode(
  name: string,
  map: VersionsByNode | undefined,
  newVersion: string,
): ComponentUpgradePlan[] {
  return sortedKeys(map).flatMap((old) =>
    (map![old] ?? []).map((nodeName) => ({ name, currentVersion: old, newVersion, nodeName })),
  );
}

/** plan.go genAvailableUpgrade. */
export function genAvailableUpgrade(up: Upgrade): AvailableUpgrade {
  const target = up.after.kubeVersion;
  const components: ComponentUpgradePlan[] = [];
  if (canUpgradeKubelets(up))
    components.push(...perNode("kubelet", up.before.kubeletVersions, target));
  components.push(
    ...perNode("kube-apiserver", up.before.kubeAPIServerVersions, target),
    ...perNode("kube-controller-manager", up.before.kubeControllerManagerVersions, target),
    ...perNode("kube-scheduler", up.before.kubeSchedulerVersions, target),
    { name: "kube-proxy", currentVersion: up.before.kubeVersion, newVersion: target },
  );
  if (up.before.dnsVersion !== "" || up.after.dnsVersion !== "") {
    components.push({
      name: "CoreDNS",
      currentVersion: up.before.dnsVersion,
      newVersion: up.after.dnsVersion,
    });
  }
  if (up.before.kubeadmVersion !== "" || up.after.kubeadmVersion !== "") {
    components.push({
      name: "kubeadm",
      currentVersion: up.before.kubeadmVersion,
      newVersion: up.after.kubeadmVersion,
    });
  }
  components.push(...perNode("etcd", up.before.etcdVersions, up.after.etcdVersion ?? ""));
  return { description: up.description, components };
}

/** plan.go genUpgradePlan. */
export function genUpgradePlan(
  upgrades: readonly Upgrade[],
  configVersions: ComponentConfigVersionState[],
): UpgradePlan {
  // Key order is the Go struct's: kind, apiVersion, availableUpgrades, configVersions.
  return {
    kind: "UpgradePlan",
    apiVersion: UPGRADE_PLAN_API_VERSION,
    ...(upgrades.length > 0 ? { availableUpgrades: upgrades.map(genAvailableUpgrade) } : {}),
    configVersions,
  };
}

/**
 * Go's text/tabwriter as kubeadm uses it (minwidth 10, tabwidth 4, padding 3, padchar ' ',
 * flags 0): every cell but a row's last is padded to max(10, widest + 3).
 */
export function tabulate(rows: readonly string[][]): string {
  const columns = Math.max(0, ...rows.map((r) => r.length - 1));
  const widths: number[] = [];
  for (let c = 0; c < columns; c++) {
    const widest = Math.max(0, ...rows.filter((r) => r.length - 1 > c).map((r) => r[c]!.length));
    widths.push(Math.max(10, widest + 3));
  }
  return rows
    .map((r) => r.map((cell, c) => (c < r.length - 1 ? cell.padEnd(widths[c]!) : cell)).join(""))
    .map((line) => `${line}\n`)
    .join("");
}

const SEPARATOR = "_____________________________________________________________________\n\n";
const HEADER = ["COMPONENT", "NODE", "CURRENT", "TARGET"];

function unstableVersionFlag(version: string): string {
  const v = parseSemantic(version);
  const pre = v ? v.prerelease.join(".") : "";
  if (pre === "") return "";
  return pre.startsWith("rc")
    ? " --allow-release-candidate-upgrades"
    : " --allow-experimental-upgrades";
}

/** upgradePlanTextPrinter.printAvailableUpgrade. */
function printAvailableUpgrade(au: AvailableUpgrade, command: string): string {
  const row = (c: ComponentUpgradePlan) => [
    c.name,
    c.nodeName ?? "",
    c.currentVersion,
    c.newVersion,
  ];
  const kubeVersion = au.components.find((c) => c.name === "kube-apiserver")?.newVersion ?? "";
  const kubeadm = au.components.find((c) => c.name === "kubeadm");
  let out =
    "Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':\n";
  out += tabulate([HEADER, ...au.components.filter((c) => c.name === "kubelet").map(row)]);
  out += `\nUpgrade to the latest ${au.description}:\n\n`;
  out += tabulate([
    HEADER,
    ...au.components.filter((c) => c.name !== "kubelet" && c.name !== "kubeadm").map(row),
  ]);
  out += "\nYou can now apply the upgrade by executing the following command:\n\n";
  out += `\t${command} upgrade apply ${kubeVersion}${unstableVersionFlag(kubeVersion)}\n\n`;
  if (kubeadm && kubeadm.currentVersion !== kubeadm.newVersion) {
    out += `Note: Before you can perform this upgrade, you have to update kubeadm to ${kubeadm.newVersion}.\n\n`;
  }
  return out + SEPARATOR;
}

/** upgradePlanTextPrinter.printComponentConfigVersionStates. */
function printConfigVersionStates(states: readonly ComponentConfigVersionState[]): string {
  if (states.length === 0) return "No information available on component configs.\n";
  const intro = [
    "",
    "The table below shows the current state of component configs as understood by this version of kubeadm.",
    'Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or',
    "resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually",
    'upgrade to is denoted in the "PREFERRED VERSION" column.',
    "",
    "",
  ].join("\n");
  const table = tabulate([
    ["API GROUP", "CURRENT VERSION", "PREFERRED VERSION", "MANUAL UPGRADE REQUIRED"],
    ...states.map((s) => [
      s.group,
      s.currentVersion || "-",
      s.preferredVersion || "-",
      s.manualUpgradeRequired ? "yes" : "no",
    ]),
  ]);
  return intro + table + SEPARATOR;
}

/**
 * The plan as `-o text|json|yaml` prints it. `command` is the binary named in the text
 * ("kubeadm" in kubeadm's own fixtures, "kubeforge" for kubeforge's users).
 */
export function printUpgradePlan(
  plan: UpgradePlan,
  format: "text" | "json" | "yaml",
  command = "kubeadm",
): string {
  if (format === "json") return `${JSON.stringify(plan, null, 4)}\n`;
  if (format === "yaml") return toYAML(plan);
  return (
    (plan.availableUpgrades ?? []).map((au) => printAvailableUpgrade(au, command)).join("") +
    printConfigVersionStates(plan.configVersions)
  );
}

/** What GetAvailableUpgrades reads from the cluster and from the release labels. */
export interface PlanInputs {
  /** /version of the API server ("v1.35.0"). */
  clusterVersion: string;
  /** The kubeadm version doing the plan. */
  kubeadmVersion: string;
  /** The `stable` label (or the version given to `plan`). */
  stableVersion: string;
  /** The `stable-1.<cluster minor>` label; undefined when it could not be resolved. */
  patchVersion: string | undefined;
  before: Omit<ClusterState, "kubeVersion" | "kubeadmVersion">;
  /** etcd and CoreDNS versions kubeadm deploys for a Kubernetes version. */
  etcdVersionFor(kubernetesVersion: string): string;
  dnsVersionFor(kubernetesVersion: string): string;
}

function afterState(inputs: PlanInputs, version: string, kubeadmVersion: string): ClusterState {
  return {
    kubeVersion: version,
    dnsVersion: inputs.dnsVersionFor(version),
    kubeadmVersion,
    etcdVersion: inputs.etcdVersionFor(version),
  };
}

/**
 * GetAvailableUpgrades without the experimental/RC branch: a patch upgrade within the cluster's
 * minor when `stable-1.<minor>` is newer, and a minor upgrade to `stable` when that is newer
 * still. With a version given to `plan` (kubeadm's OfflineVersionGetter) every label answers
 * that version, so the one upgrade is described as "version in the v1.<cluster minor> series".
 */
export function computeAvailableUpgrades(inputs: PlanInputs): Upgrade[] {
  const cluster = parseSemantic(inputs.clusterVersion);
  const stable = parseSemantic(inputs.stableVersion);
  if (!cluster) throw new Error(`could not parse the cluster version "${inputs.clusterVersion}"`);
  if (!stable) throw new Error(`could not parse the target version "${inputs.stableVersion}"`);
  const before: ClusterState = {
    ...inputs.before,
    kubeVersion: cluster.version,
    kubeadmVersion: inputs.kubeadmVersion,
  };
  const kubeadm = parseSemantic(inputs.kubeadmVersion);
  const upgrades: Upgrade[] = [];
  let canDoMinorUpgrade = semver.lt(cluster, stable);
  const patch = inputs.patchVersion ? parseSemantic(inputs.patchVersion) : undefined;
  if (semver.gte(stable, cluster) && patch) {
    canDoMinorUpgrade = semver.lt(patch, stable);
    if (semver.lt(cluster, patch)) {
      const newKubeadm =
        kubeadm && semver.gte(kubeadm, patch) ? inputs.kubeadmVersion : inputs.patchVersion!;
      upgrades.push({
        description: `version in the v${cluster.major}.${cluster.minor} series`,
        before,
        after: afterState(inputs, inputs.patchVersion!, newKubeadm),
      });
    }
  }
  if (canDoMinorUpgrade) {
    upgrades.push({
      description: "stable version",
      before,
      after: afterState(inputs, inputs.stableVersion, inputs.stableVersion),
    });
  }
  return upgrades;
}
