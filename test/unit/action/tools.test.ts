import { describe, expect, it } from "vitest";
import { kubectlSkewWarning } from "../../../src/action/tools.js";

// kubectl's version skew policy (kubernetes.io/releases/version-skew-policy, "kubectl"):
// "kubectl is supported within one minor version (older or newer) of kube-apiserver".

describe("kubectlSkewWarning", () => {
  it.each([
    ["v1.35.0", "v1.35.8"],
    ["v1.34.3", "v1.35.0"],
    ["v1.36.1", "v1.35.0"],
  ])("kubectl %s with an API server %s: within the policy", (kubectl, server) => {
    expect(kubectlSkewWarning(kubectl, server)).toBeUndefined();
  });

  it("two minors apart, older or newer: a warning naming the input and both versions", () => {
    expect(kubectlSkewWarning("v1.33.2", "v1.35.0")).toBe(
      "input kubectl-version: kubectl v1.33.2 is 2 minor versions older than the API server (v1.35.0); kubectl is supported within one minor version of it",
    );
    expect(kubectlSkewWarning("v1.37.0", "v1.35.0")).toMatch(/2 minor versions newer/);
  });
});
