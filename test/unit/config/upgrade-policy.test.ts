import { describe, expect, it } from "vitest";
import {
  enforceVersionPolicies,
  minimumControlPlaneVersion as kubeadmMinimumControlPlaneVersion,
  versionPolicyVerdict,
} from "../../../src/config/upgrade-policy.js";

// The vectors of kubeadm's TestEnforceVersionPolicies (cmd/kubeadm/app/phases/upgrade/
// policy_test.go, the v1.29+ file with the n-3 kubelet cases). kubeadm's unit tests run
// without build version information, so constants.MinimumControlPlaneVersion is
// DefaultKubernetesPlaceholderVersion "v1.0.0-placeholder-version" there
// (constants.getSkewedKubernetesVersionImpl); the vectors are checked with that minimum.
// The counts are kubeadm's expectedMandatoryErrs / expectedSkippableErrs.

const minimumKubeletVersion = { major: 1, minor: 3, patch: 0 };
const minimumControlPlaneVersion = { major: 1, minor: 3, patch: 0 };
const currentKubernetesVersion = { major: 1, minor: 4, patch: 0 };
type V = { major: number; minor: number; patch: number; pre?: string; build?: string };
const s = (v: V) =>
  `v${v.major}.${v.minor}.${v.patch}${v.pre ? `-${v.pre}` : ""}${v.build ? `+${v.build}` : ""}`;
const withPatch = (v: V, patch: number) => s({ ...v, patch });
const withMinor = (v: V, minor: number) => s({ ...v, minor });

interface Vector {
  name: string;
  cluster: string;
  kubelet: string;
  kubeadm: string;
  target: string;
  mandatory?: number;
  skippable?: number;
  allowExperimental?: boolean;
  allowRCs?: boolean;
}

const vectors: Vector[] = [
  {
    name: "minor upgrade",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumControlPlaneVersion, 3),
    kubeadm: withPatch(minimumControlPlaneVersion, 5),
    target: withPatch(minimumControlPlaneVersion, 5),
  },
  {
    name: "major upgrade",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumControlPlaneVersion, 2),
    kubeadm: withPatch(currentKubernetesVersion, 1),
    target: s(currentKubernetesVersion),
  },
  {
    name: "downgrade",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: s(minimumKubeletVersion),
    kubeadm: withPatch(minimumControlPlaneVersion, 3),
    target: withPatch(minimumControlPlaneVersion, 2),
  },
  {
    name: "same version upgrade",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: withPatch(minimumControlPlaneVersion, 3),
    target: withPatch(minimumControlPlaneVersion, 3),
  },
  {
    name: "new version must be higher than v1.12.0",
    cluster: "v1.12.3",
    kubelet: "v1.12.3",
    kubeadm: "v1.12.3",
    target: "v1.10.10",
    mandatory: 1,
    skippable: 1,
  },
  {
    name: "upgrading two minor versions in one go is not supported",
    cluster: "v1.11.3",
    kubelet: "v1.11.3",
    kubeadm: "v1.13.0",
    target: "v1.13.0",
    mandatory: 1,
  },
  {
    name: "upgrading with n-3 kubelet is supported",
    cluster: "v1.14.3",
    kubelet: "v1.12.3",
    kubeadm: "v1.15.0",
    target: "v1.15.0",
  },
  {
    name: "upgrading with n-4 kubelet is not supported",
    cluster: "v1.14.3",
    kubelet: "v1.11.3",
    kubeadm: "v1.15.0",
    target: "v1.15.0",
    skippable: 1,
  },
  {
    name: "downgrading two minor versions in one go is not supported",
    cluster: withMinor(currentKubernetesVersion, currentKubernetesVersion.minor + 2),
    kubelet: withMinor(currentKubernetesVersion, currentKubernetesVersion.minor + 2),
    kubeadm: s(currentKubernetesVersion),
    target: s(currentKubernetesVersion),
    mandatory: 1,
  },
  {
    name: "kubeadm version must be higher than the new kube version. However, patch version skews may be forced",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: withPatch(minimumControlPlaneVersion, 3),
    target: withPatch(minimumControlPlaneVersion, 5),
    skippable: 1,
  },
  {
    name: "kubeadm version must be higher than the new kube version. Trying to upgrade k8s to a higher minor version than kubeadm itself should never be supported",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: withPatch(minimumControlPlaneVersion, 3),
    target: s(currentKubernetesVersion),
    mandatory: 1,
  },
  {
    name: "the maximum skew between the cluster version and the kubelet versions should be three minor version.",
    cluster: "v1.13.0",
    kubelet: "v1.10.8",
    kubeadm: "v1.13.0",
    target: "v1.13.0",
  },
  {
    name: "the maximum skew between the cluster version and the kubelet versions should be three minor version. This may be forced through though.",
    cluster: "v1.14.0",
    kubelet: "v1.10.8",
    kubeadm: "v1.14.0",
    target: "v1.14.0",
    skippable: 1,
  },
  {
    name: "experimental upgrades supported if the flag is set",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: s({ ...currentKubernetesVersion, pre: "beta.1" }),
    target: s({ ...currentKubernetesVersion, pre: "beta.1" }),
    allowExperimental: true,
  },
  {
    name: "release candidate upgrades supported if the flag is set",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: s({ ...currentKubernetesVersion, pre: "rc.1" }),
    target: s({ ...currentKubernetesVersion, pre: "rc.1" }),
    allowRCs: true,
  },
  {
    name: "release candidate upgrades supported if the flag is set (experimental)",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: s({ ...currentKubernetesVersion, pre: "rc.1" }),
    target: s({ ...currentKubernetesVersion, pre: "rc.1" }),
    allowExperimental: true,
  },
  {
    name: "the user should not be able to upgrade to an experimental version if they haven't opted into that",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: s({ ...currentKubernetesVersion, pre: "beta.1" }),
    target: s({ ...currentKubernetesVersion, pre: "beta.1" }),
    allowRCs: true,
    skippable: 1,
  },
  {
    name: "the user should not be able to upgrade to an release candidate version if they haven't opted into that",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: s({ ...currentKubernetesVersion, pre: "rc.1" }),
    target: s({ ...currentKubernetesVersion, pre: "rc.1" }),
    skippable: 1,
  },
  {
    name: "the user can't use a newer minor version of kubeadm to upgrade an older version of kubeadm",
    cluster: withPatch(minimumControlPlaneVersion, 3),
    kubelet: withPatch(minimumKubeletVersion, 3),
    kubeadm: s(currentKubernetesVersion),
    target: withPatch(minimumControlPlaneVersion, 6),
    skippable: 1,
  },
  {
    name: "build release supported at MinimumControlPlaneVersion",
    cluster: s(minimumControlPlaneVersion),
    kubelet: s(minimumControlPlaneVersion),
    kubeadm: s({ ...minimumControlPlaneVersion, build: "build" }),
    target: s({ ...minimumControlPlaneVersion, build: "build" }),
  },
];

describe("enforceVersionPolicies (kubeadm policy_test.go vectors)", () => {
  for (const v of vectors) {
    it(v.name, () => {
      const errs = enforceVersionPolicies(
        { cluster: v.cluster, kubeadm: v.kubeadm, kubelets: new Map([[v.kubelet, ["node"]]]) },
        v.target,
        {
          allowExperimentalUpgrades: v.allowExperimental ?? false,
          allowRCUpgrades: v.allowRCs ?? false,
          minimumControlPlaneVersion: "v1.0.0-placeholder-version",
        },
      );
      expect({
        mandatory: errs?.mandatory.length ?? 0,
        skippable: errs?.skippable.length ?? 0,
      }).toEqual({ mandatory: v.mandatory ?? 0, skippable: v.skippable ?? 0 });
    });
  }
});

describe("the policy as kubeforge applies it", () => {
  const real = (target: string, cluster: string, kubelets: string[] = [cluster]) =>
    enforceVersionPolicies(
      { cluster, kubeadm: target, kubelets: new Map(kubelets.map((k) => [k, ["n"]])) },
      target,
      {
        allowExperimentalUpgrades: false,
        allowRCUpgrades: false,
        minimumControlPlaneVersion: kubeadmMinimumControlPlaneVersion(target),
      },
    );

  it("one minor up is allowed, two are not (kubeadm's message)", () => {
    expect(real("v1.36.3", "v1.35.0")).toBeUndefined();
    expect(real("v1.37.1", "v1.35.0")?.mandatory).toEqual([
      'Specified version to upgrade to "v1.37.1" is too high; kubeadm can upgrade only 1 minor version at a time',
    ]);
  });

  it("a one-minor downgrade is refused only through kubeadm's own rule: kubeadm v1.X upgrades to v1.X only", () => {
    // kubeadm of the target (v1.34) against a v1.35 cluster: the policy has no downgrade error
    // for one minor (MaximumAllowedMinorVersionDowngradeSkew = 1).
    expect(real("v1.34.7", "v1.35.0")).toBeUndefined();
    expect(real("v1.33.13", "v1.35.0")?.mandatory[0]).toContain(
      "is too low; kubeadm can downgrade only 1 minor version at a time",
    );
  });

  it("kubelets more than three minors old are a skippable error", () => {
    expect(real("v1.36.3", "v1.35.0", ["v1.33.1"])).toBeUndefined();
    expect(real("v1.37.1", "v1.36.0", ["v1.33.1", "v1.36.0"])?.skippable).toEqual([
      "There are kubelets in this cluster that are too old that have these versions [v1.33.1]",
    ]);
  });

  it("the verdict: mandatory errors always fail, skippable ones need --force", () => {
    const lines: string[] = [];
    const skippable = { mandatory: [], skippable: ["x"] };
    expect(() => versionPolicyVerdict(skippable, false, (l) => lines.push(l))).toThrow(
      "the version argument is invalid due to these errors:\n\n\t- x\n\nCan be bypassed if you pass the --force flag",
    );
    versionPolicyVerdict(skippable, true, (l) => lines.push(l));
    expect(lines).toEqual([
      "[upgrade/preflight] Found 1 potential version compatibility errors but skipping since the --force flag is set: \n\n\t- x\n",
    ]);
    expect(() =>
      versionPolicyVerdict({ mandatory: ["y"], skippable: ["x"] }, true, () => {}),
    ).toThrow(
      "the version argument is invalid due to these fatal errors:\n\n\t- y\n\nPlease fix the misalignments highlighted above and try upgrading again",
    );
  });

  it("MinimumControlPlaneVersion is v1.(X-1).0 for kubeadm v1.X", () => {
    expect(kubeadmMinimumControlPlaneVersion("v1.36.3")).toBe("v1.35.0");
  });
});
