import { describe, expect, it } from "vitest";
import {
  featureEnabled,
  parseFeatureGates,
  parseGoBool,
  unknownFeatureGates,
} from "../../../src/config/feature-gates.js";
import { releaseFor } from "../../../src/config/versions.js";

describe("--feature-gates parsing (kubeadm features.NewFeatureGate)", () => {
  it("parses names and Go booleans, trimming blanks and skipping empty items", () => {
    expect(parseFeatureGates(" RootlessControlPlane = true ,,NodeLocalCRISocket=F,")).toEqual({
      RootlessControlPlane: true,
      NodeLocalCRISocket: false,
    });
  });

  it.each([
    ["Bogus=true", '--feature-gates: unknown feature gate "Bogus" for Kubernetes v1.36'],
    [
      "RootlessControlPlane=yes",
      '--feature-gates: invalid value "yes" for feature gate RootlessControlPlane',
    ],
    ["RootlessControlPlane", '--feature-gates: "RootlessControlPlane" has no value'],
  ])("refuses %j naming the gate", (value, message) => {
    expect(() => parseFeatureGates(value, { release: releaseFor("v1.36.0") })).toThrow(message);
  });

  it("lists only the gates of the given release", () => {
    expect(() => parseFeatureGates("Foo=true", { release: releaseFor("v1.36.0") })).toThrow(
      '--feature-gates: unknown feature gate "Foo" for Kubernetes v1.36; known gates: NodeLocalCRISocket, PublicKeysECDSA, RootlessControlPlane',
    );
    expect(() => parseFeatureGates("Foo=true", { release: releaseFor("v1.37.0") })).toThrow(
      '--feature-gates: unknown feature gate "Foo" for Kubernetes v1.37; known gates: none',
    );
  });

  it("lets a gate that graduated in the release through, for validation to explain", () => {
    const release = releaseFor("v1.37.0");
    expect(parseFeatureGates("NodeLocalCRISocket=true", { release })).toEqual({
      NodeLocalCRISocket: true,
    });
  });

  it("leaves names to validation when no release is pinned yet", () => {
    expect(parseFeatureGates("Foo=true")).toEqual({ Foo: true });
  });

  it("warns about deprecated gates of the release but accepts them", () => {
    const warnings: string[] = [];
    const opts = { release: releaseFor("v1.36.0"), warn: (m: string) => warnings.push(m) };
    expect(parseFeatureGates("PublicKeysECDSA=true", opts)).toEqual({ PublicKeysECDSA: true });
    expect(warnings[0]).toContain("Setting deprecated feature gate PublicKeysECDSA=true");
  });

  it("refuses PublicKeysECDSA in v1.37 without calling it deprecated first", () => {
    const warnings: string[] = [];
    const opts = { release: releaseFor("v1.37.1"), warn: (m: string) => warnings.push(m) };
    expect(() => parseFeatureGates("PublicKeysECDSA=true", opts)).toThrow(
      'unknown feature gate "PublicKeysECDSA" for Kubernetes v1.37',
    );
    expect(warnings).toEqual([]);
  });

  it.each([
    ["1", true],
    ["t", true],
    ["TRUE", true],
    ["True", true],
    ["0", false],
    ["f", false],
    ["FALSE", false],
    ["yes", undefined],
    ["on", undefined],
    ["", undefined],
  ])("strconv.ParseBool(%j) = %s", (text, value) => {
    expect(parseGoBool(text)).toBe(value);
  });
});

describe("featureEnabled", () => {
  const cfg = (gates: Record<string, boolean>) => ({ cluster: { featureGates: gates } });

  it("uses the release default unless the user set the gate", () => {
    expect(featureEnabled(cfg({}), releaseFor("v1.33.0"), "NodeLocalCRISocket")).toBe(false);
    expect(featureEnabled(cfg({}), releaseFor("v1.34.0"), "NodeLocalCRISocket")).toBe(true);
    expect(
      featureEnabled(
        cfg({ NodeLocalCRISocket: false }),
        releaseFor("v1.35.0"),
        "NodeLocalCRISocket",
      ),
    ).toBe(false);
    expect(
      featureEnabled(
        cfg({ RootlessControlPlane: true }),
        releaseFor("v1.35.0"),
        "RootlessControlPlane",
      ),
    ).toBe(true);
  });

  it("treats a graduated gate as always on, and an unknown one as off", () => {
    expect(featureEnabled(cfg({}), releaseFor("v1.37.0"), "NodeLocalCRISocket")).toBe(true);
    expect(featureEnabled(cfg({}), releaseFor("v1.35.0"), "SomethingElse")).toBe(false);
  });

  it("lists the gates a release does not know", () => {
    expect(
      unknownFeatureGates(
        { NodeLocalCRISocket: true, RootlessControlPlane: true },
        releaseFor("v1.37.0"),
      ),
    ).toEqual(["NodeLocalCRISocket", "RootlessControlPlane"]);
  });
});
