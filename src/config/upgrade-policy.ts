import semver, { type SemVer } from "semver";

// kubeadm's version skew policy for `upgrade apply` (phases/upgrade/policy.go, the v1.29+
// version with MaximumAllowedMinorVersionKubeletSkew = 3, kubernetes/kubernetes#120825) and the
// way apply's preflight turns its findings into an error (cmd/phases/upgrade/apply/preflight.go
// enforceVersionPolicies). Pure: the versions come in, the verdict goes out.

/** How many minors the control plane may move up in one upgrade. */
export const MAXIMUM_ALLOWED_MINOR_VERSION_UPGRADE_SKEW = 1;
/** How many minors it may move down. */
export const MAXIMUM_ALLOWED_MINOR_VERSION_DOWNGRADE_SKEW = 1;
/** How many minors a kubelet may be older than the control plane (3 since v1.29). */
export const MAXIMUM_ALLOWED_MINOR_VERSION_KUBELET_SKEW = 3;

/** k8s.io/apimachinery util/version ParseSemantic: strict semver, an optional leading "v". */
export function parseSemantic(version: string): SemVer | undefined {
  const text = version.trim();
  if (!/^v?\d+\.\d+\.\d+([-+].*)?$/.test(text)) return undefined;
  return semver.parse(text) ?? undefined;
}

function mustParse(version: string, what: string): SemVer {
  const v = parseSemantic(version);
  if (!v) throw new Error(`could not parse ${what} "${version}" as a semantic version`);
  return v;
}

/** What kubeadm's VersionGetter reports; a getter that failed is an Error in its place. */
export interface PolicyVersions {
  /** The API server's /version gitVersion. */
  cluster: string | Error;
  /** The kubeadm doing the upgrade (for kubeforge: the release it emulates). */
  kubeadm: string | Error;
  /** kubeletVersion → Node names. */
  kubelets: ReadonlyMap<string, readonly string[]> | Error;
}

export interface VersionSkewPolicyErrors {
  mandatory: string[];
  skippable: string[];
}

export interface PolicyOptions {
  allowExperimentalUpgrades: boolean;
  allowRCUpgrades: boolean;
  /**
   * kubeadm's constants.MinimumControlPlaneVersion: v1.(X-1).0 for kubeadm v1.X. (Unit tests of
   * kubeadm run with the placeholder v1.0.0-placeholder-version, a build without version info.)
   */
  minimumControlPlaneVersion: string;
}

const preRelease = (v: SemVer) => v.prerelease.join(".");

function minorSkewErrors(
  target: SemVer,
  targetStr: string,
  cluster: SemVer,
  errs: VersionSkewPolicyErrors,
): void {
  // A released target must respect the skew; for a CI/dev/pre-release build it takes --force.
  const bucket = preRelease(target) === "" ? errs.mandatory : errs.skippable;
  if (target.minor > cluster.minor + MAXIMUM_ALLOWED_MINOR_VERSION_UPGRADE_SKEW) {
    bucket.push(
      `Specified version to upgrade to "${targetStr}" is too high; kubeadm can upgrade only ${MAXIMUM_ALLOWED_MINOR_VERSION_UPGRADE_SKEW} minor version at a time`,
    );
  }
  if (target.minor < cluster.minor - MAXIMUM_ALLOWED_MINOR_VERSION_DOWNGRADE_SKEW) {
    bucket.push(
      `Specified version to downgrade to "${targetStr}" is too low; kubeadm can downgrade only ${MAXIMUM_ALLOWED_MINOR_VERSION_DOWNGRADE_SKEW} minor version at a time`,
    );
  }
}

function kubeadmSkewErrors(
  target: SemVer,
  targetStr: string,
  kubeadm: SemVer,
  kubeadmStr: string,
  errs: VersionSkewPolicyErrors,
): void {
  if (semver.lt(kubeadm, target)) {
    if (target.minor > kubeadm.minor) {
      const msg = `Specified version to upgrade to "${targetStr}" is at least one minor release higher than the kubeadm minor release (${target.minor} > ${kubeadm.minor}). Such an upgrade is not supported`;
      (preRelease(target) === "" ? errs.mandatory : errs.skippable).push(msg);
    } else {
      errs.skippable.push(
        `Specified version to upgrade to "${targetStr}" is higher than the kubeadm version "${kubeadmStr}". Upgrade kubeadm first using the tool you used to install kubeadm`,
      );
    }
  }
  if (kubeadm.major > target.major || kubeadm.minor > target.minor) {
    errs.skippable.push(
      `Kubeadm version ${kubeadmStr} can only be used to upgrade to Kubernetes version ${kubeadm.major}.${kubeadm.minor}`,
    );
  }
}

/** detectUnstableVersionError. */
function unstableVersionError(
  target: SemVer,
  targetStr: string,
  opts: PolicyOptions,
): string | undefined {
  const pre = preRelease(target);
  if (pre === "" || opts.allowExperimentalUpgrades) return undefined;
  if (pre.startsWith("rc") && opts.allowRCUpgrades) return undefined;
  return `Specified version to upgrade to "${targetStr}" is an unstable version and such upgrades weren't allowed via setting the --allow-*-upgrades flags`;
}

/** detectTooOldKubelets: versions, in the map's order, more than 3 minors older than the target. */
function tooOldKubelets(
  target: SemVer,
  kubelets: ReadonlyMap<string, readonly string[]>,
): string | undefined {
  const tooOld: string[] = [];
  for (const version of kubelets.keys()) {
    const v = parseSemantic(version);
    if (!v) return `couldn't parse kubelet version ${version}`;
    if (target.minor > v.minor + MAXIMUM_ALLOWED_MINOR_VERSION_KUBELET_SKEW) tooOld.push(version);
  }
  if (tooOld.length === 0) return undefined;
  return `There are kubelets in this cluster that are too old that have these versions [${tooOld.join(" ")}]`;
}

/**
 * kubeadm's EnforceVersionPolicies: undefined when the target is fine, else the mandatory
 * errors (never bypassed) and the skippable ones (bypassed by --force).
 */
export function enforceVersionPolicies(
  versions: PolicyVersions,
  targetStr: string,
  opts: PolicyOptions,
): VersionSkewPolicyErrors | undefined {
  const errs: VersionSkewPolicyErrors = { mandatory: [], skippable: [] };
  if (versions.cluster instanceof Error) {
    errs.mandatory.push(`Unable to fetch cluster version: ${versions.cluster.message}`);
    return errs;
  }
  if (versions.kubeadm instanceof Error) {
    errs.mandatory.push(`Unable to fetch kubeadm version: ${versions.kubeadm.message}`);
    return errs;
  }
  const cluster = mustParse(versions.cluster, "cluster version");
  const kubeadm = mustParse(versions.kubeadm, "kubeadm version");
  const target = mustParse(targetStr, "version to upgrade to");
  if (versions.kubelets instanceof Error) {
    errs.skippable.push(`Unable to fetch kubelet version: ${versions.kubelets.message}`);
  }
  if (semver.lt(target, mustParse(opts.minimumControlPlaneVersion, "minimum version"))) {
    errs.mandatory.push(
      `Specified version to upgrade to "${targetStr}" is equal to or lower than the minimum supported version "${versions.cluster}". Please specify a higher version to upgrade to`,
    );
  }
  minorSkewErrors(target, targetStr, cluster, errs);
  kubeadmSkewErrors(target, targetStr, kubeadm, versions.kubeadm, errs);
  const unstable = unstableVersionError(target, targetStr, opts);
  if (unstable) errs.skippable.push(unstable);
  if (!(versions.kubelets instanceof Error)) {
    const old = tooOldKubelets(target, versions.kubelets);
    if (old) errs.skippable.push(old);
  }
  return errs.mandatory.length + errs.skippable.length === 0 ? undefined : errs;
}

/** formatErrorMsg: one "\t- <error>" line per error. */
function formatErrorMsg(errors: readonly string[]): string {
  return errors.map((e) => `\t- ${e}\n`).join("");
}

/**
 * apply preflight's enforceVersionPolicies: mandatory errors always fail; skippable ones fail
 * unless `force`, and are reported (`report`) when forced through.
 */
export function versionPolicyVerdict(
  errs: VersionSkewPolicyErrors | undefined,
  force: boolean,
  report: (line: string) => void,
): void {
  if (!errs) return;
  if (errs.mandatory.length > 0) {
    throw new Error(
      `the version argument is invalid due to these fatal errors:\n\n${formatErrorMsg(errs.mandatory)}\nPlease fix the misalignments highlighted above and try upgrading again`,
    );
  }
  if (errs.skippable.length === 0) return;
  if (!force) {
    throw new Error(
      `the version argument is invalid due to these errors:\n\n${formatErrorMsg(errs.skippable)}\nCan be bypassed if you pass the --force flag`,
    );
  }
  report(
    `[upgrade/preflight] Found ${errs.skippable.length} potential version compatibility errors but skipping since the --force flag is set: \n\n${formatErrorMsg(errs.skippable)}`,
  );
}

/** kubeadm v1.X's MinimumControlPlaneVersion: v1.(X-1).0. */
export function minimumControlPlaneVersion(kubeadmVersion: string): string {
  const v = mustParse(kubeadmVersion, "kubeadm version");
  return `v${v.major}.${Math.max(v.minor - 1, 0)}.0`;
}
