import { describe, expect, it } from "vitest";
import { defaultInitConfig } from "../../../src/config/defaults.js";
import { applyInitFlags } from "../../../src/config/flags.js";
import { ConfigError, decodeConfigDocuments } from "../../../src/config/load.js";
import type { ConfigDocuments } from "../../../src/config/types.js";
import { validateConfigDocuments, validateInitConfig } from "../../../src/config/validate.js";
import { releaseFor } from "../../../src/config/versions.js";
import { resolveKubernetesVersion } from "../../../src/node/release-version.js";

// Inputs whose validity depends on the Kubernetes version, checked after the version is known.

function initProblems(docs: ConfigDocuments, version: string): string[] {
  const cfg = defaultInitConfig(docs, {
    resolved: { version, release: releaseFor(version), source: "test" },
    nodeName: "cp-1",
    advertiseAddress: "10.0.0.4",
    generateToken: () => "abcdef.0123456789abcdef",
  });
  return validateInitConfig(cfg);
}

const V3 = `apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
`;

describe("kubeadm.k8s.io/v1beta3 (removed in 1.37, kubernetes/kubernetes#136016)", () => {
  it("is refused for v1.37, once per document, naming it and the way out", () => {
    const docs = decodeConfigDocuments(V3, "old.yaml");
    const why =
      'uses kubeadm.k8s.io/v1beta3, which kubeadm no longer reads from Kubernetes v1.37 (v1.37 here); write it as kubeadm.k8s.io/v1beta4 ("kubeadm config migrate" of kubeadm v1.36 converts it)';
    expect(initProblems(docs, "v1.37.1")).toEqual([
      `old.yaml: ClusterConfiguration ${why}`,
      `old.yaml: InitConfiguration ${why}`,
    ]);
  });

  it("is still read, with kubeadm's deprecation warning, up to v1.36", () => {
    const docs = decodeConfigDocuments(V3, "old.yaml");
    expect(docs.warnings).toHaveLength(2);
    expect(initProblems(docs, "v1.36.3")).toEqual([]);
  });

  it("is refused by config validate when the file pins v1.37, without a deprecation warning", () => {
    const pinned = V3.replace(
      "kind: ClusterConfiguration\n",
      "kind: ClusterConfiguration\nkubernetesVersion: v1.37.0\n",
    );
    const docs = decodeConfigDocuments(pinned, "old.yaml");
    expect(docs.warnings).toBeUndefined();
    expect(validateConfigDocuments(docs)).toHaveLength(2);
  });
});

describe("encryptionAlgorithm ECDSA-P384 (kubeadm 1.34+, kubernetes/kubernetes#131677)", () => {
  const docs = decodeConfigDocuments(
    "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P384\n",
    "c.yaml",
  );

  it("is refused for v1.33, listing what v1.33 takes", () => {
    expect(initProblems(docs, "v1.33.13")).toEqual([
      'ClusterConfiguration.encryptionAlgorithm: "ECDSA-P384" is not supported for Kubernetes v1.33 (one of ECDSA-P256, RSA-2048, RSA-3072, RSA-4096)',
    ]);
  });

  it.each(["v1.34.7", "v1.35.8", "v1.37.1"])("is accepted for %s", (v) => {
    expect(initProblems(docs, v)).toEqual([]);
  });
});

describe("messages that name where the version or gate came from", () => {
  it("an unsupported version names the field and the flag", async () => {
    await expect(
      resolveKubernetesVersion("v1.30.2", { fetch: globalThis.fetch, env: {} }),
    ).rejects.toThrow(
      "ClusterConfiguration.kubernetesVersion (--kubernetes-version): Kubernetes version v1.30.2 is not supported: kubeforge supports v1.33 to v1.37",
    );
  });

  it("--feature-gates without a pinned version is checked against the resolved version's gates", () => {
    const docs = applyInitFlags(
      { ignoredKinds: [] },
      { featureGates: "PublicKeysECDSA=true" },
      { configFileGiven: false },
    );
    expect(initProblems(docs, "v1.37.1")).toEqual([
      "ClusterConfiguration.featureGates: PublicKeysECDSA is not a kubeadm feature gate for Kubernetes v1.37 (known: none)",
    ]);
    expect(initProblems(docs, "v1.36.3")).toEqual([]);
  });

  it("--feature-gates with --kubernetes-version v1.37 refuses PublicKeysECDSA without a deprecation warning", () => {
    const warnings: string[] = [];
    expect(() =>
      applyInitFlags(
        { ignoredKinds: [] },
        { kubernetesVersion: "v1.37.1", featureGates: "PublicKeysECDSA=true" },
        { configFileGiven: false, warn: (m) => warnings.push(m) },
      ),
    ).toThrow('--feature-gates: unknown feature gate "PublicKeysECDSA" for Kubernetes v1.37');
    expect(warnings).toEqual([]);
  });

  it("ConfigError is what decoding throws for a file with problems", () => {
    expect(() => decodeConfigDocuments("kind: X\n", "x.yaml")).toThrow(ConfigError);
  });
});
