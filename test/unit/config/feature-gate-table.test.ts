import { describe, expect, it } from "vitest";
import { featureGateEnabled, parseFeatureGates } from "../../../src/config/feature-gates.js";
import { validateConfigDocuments } from "../../../src/config/validate.js";
import { releaseFor } from "../../../src/config/versions.js";

// The kubeadm feature gates of each release, as kubeadm's own `--feature-gates` help lists
// them (the generated kubeadm init reference of kubernetes/website for v1.33 to v1.36), and
// the changes that removed them: WaitForAllControlPlaneComponents GA and locked in 1.34
// (kubernetes/kubernetes#132594), removed in 1.35 (#134781); ControlPlaneKubeletLocalMode GA
// and locked in 1.35 (#134106), removed in 1.36 (#135773); NodeLocalCRISocket GA in 1.36,
// removed in 1.37 (#138645); PublicKeysECDSA removed with v1beta3 in 1.37 (#136016);
// RootlessControlPlane removed (#134178) after the v1.36 reference still listed it.

const HELP: Record<string, Record<string, boolean>> = {
  "v1.33.0": {
    ControlPlaneKubeletLocalMode: true, // BETA
    NodeLocalCRISocket: false, // ALPHA
    PublicKeysECDSA: false, // DEPRECATED
    RootlessControlPlane: false, // ALPHA
    WaitForAllControlPlaneComponents: true, // BETA
  },
  "v1.34.0": {
    ControlPlaneKubeletLocalMode: true, // BETA
    NodeLocalCRISocket: true, // BETA
    PublicKeysECDSA: false,
    RootlessControlPlane: false,
    WaitForAllControlPlaneComponents: true, // GA
  },
  "v1.35.0": {
    ControlPlaneKubeletLocalMode: true, // GA
    NodeLocalCRISocket: true, // BETA
    PublicKeysECDSA: false,
    RootlessControlPlane: false,
  },
  "v1.36.0": {
    NodeLocalCRISocket: true, // GA
    PublicKeysECDSA: false,
    RootlessControlPlane: false,
  },
  "v1.37.0": {},
};

describe("the gates and defaults each release's kubeadm knows", () => {
  it.each(Object.entries(HELP))("%s", (version, gates) => {
    expect(releaseFor(version).featureGates).toEqual(gates);
  });
});

describe("setting a gate, per release: in a config file and with --feature-gates", () => {
  const REMOVED = (gate: string, minor: number) =>
    `ClusterConfiguration.featureGates: ${gate} graduated and is no longer a feature gate in Kubernetes v1.${minor}; remove it`;
  const LOCKED = (gate: string, minor: number) =>
    `ClusterConfiguration.featureGates: cannot set feature gate ${gate} to false: it is GA and locked to true in Kubernetes v1.${minor}; remove it`;

  it.each<[string, string, boolean, string | undefined]>([
    ["v1.33.8", "WaitForAllControlPlaneComponents", false, undefined],
    ["v1.33.8", "ControlPlaneKubeletLocalMode", false, undefined],
    ["v1.34.4", "WaitForAllControlPlaneComponents", true, undefined],
    [
      "v1.34.4",
      "WaitForAllControlPlaneComponents",
      false,
      LOCKED("WaitForAllControlPlaneComponents", 34),
    ],
    ["v1.34.4", "ControlPlaneKubeletLocalMode", false, undefined],
    [
      "v1.35.0",
      "WaitForAllControlPlaneComponents",
      true,
      REMOVED("WaitForAllControlPlaneComponents", 35),
    ],
    ["v1.35.0", "ControlPlaneKubeletLocalMode", true, undefined],
    ["v1.35.0", "ControlPlaneKubeletLocalMode", false, LOCKED("ControlPlaneKubeletLocalMode", 35)],
    ["v1.35.0", "NodeLocalCRISocket", false, undefined],
    ["v1.36.0", "ControlPlaneKubeletLocalMode", true, REMOVED("ControlPlaneKubeletLocalMode", 36)],
    ["v1.36.0", "NodeLocalCRISocket", false, LOCKED("NodeLocalCRISocket", 36)],
    ["v1.36.0", "RootlessControlPlane", true, undefined],
    ["v1.37.0", "NodeLocalCRISocket", true, REMOVED("NodeLocalCRISocket", 37)],
    [
      "v1.37.0",
      "RootlessControlPlane",
      true,
      "ClusterConfiguration.featureGates: RootlessControlPlane is not a kubeadm feature gate for Kubernetes v1.37 (known: none)",
    ],
  ])("%s %s=%s", (version, gate, value, problem) => {
    const found = validateConfigDocuments({
      ignoredKinds: [],
      cluster: { kubernetesVersion: version, featureGates: { [gate]: value } },
    });
    expect(found).toEqual(problem ? [problem] : []);
    // The flag refuses what validation refuses, except a graduated gate, which it lets through
    // for validation to explain (kubeadm: "unrecognized feature-gate key").
    const parse = () => parseFeatureGates(`${gate}=${value}`, { release: releaseFor(version) });
    if (problem?.includes("locked") || problem?.includes("not a kubeadm"))
      expect(parse).toThrow(/^--feature-gates: /);
    else expect(parse()).toEqual({ [gate]: value });
  });
});

describe("what the gates do, per release", () => {
  it.each<[string, Record<string, boolean>, boolean]>([
    ["v1.34.4", { ControlPlaneKubeletLocalMode: false }, false],
    ["v1.34.4", {}, true],
    // Locked, then removed: always on, whatever a stale setting says.
    ["v1.35.0", { ControlPlaneKubeletLocalMode: false }, true],
    ["v1.36.0", {}, true],
  ])("%s %j: ControlPlaneKubeletLocalMode on: %s", (version, gates, on) => {
    expect(featureGateEnabled(gates, releaseFor(version), "ControlPlaneKubeletLocalMode")).toBe(on);
  });
});
