import { describe, expect, it } from "vitest";
import { defaultInitConfig } from "../../../src/config/defaults.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import { validateConfigFile } from "../../../src/config/validate.js";
import { releaseFor } from "../../../src/config/versions.js";

// kubeadm decodes every document of a config file strictly (util/config/strict
// VerifyUnmarshalStrict, over kubeadm's scheme and componentconfigs.Scheme). `kubeadm config
// validate` loads with strictErrors=true, so an unknown field is an error; `kubeadm init`
// (documentMapToInitConfiguration with strictErrors=false) prints it as a warning and goes on.

const CLUSTER = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n";
const KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
const PROXY = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

const file = (...docs: string[]) => decodeConfigDocuments(docs.join("---\n"), "cfg.yaml");

describe("config validate: component configurations decoded strictly", () => {
  it.each<[string, string, string[]]>([
    ["a known kubelet field", `${KUBELET}maxPods: 200\ncgroupDriver: systemd\n`, []],
    [
      "a misspelt kubelet field",
      `${KUBELET}maxPod: 200\n`,
      ['cfg.yaml: KubeletConfiguration: unknown field "maxPod"'],
    ],
    [
      "an unknown field inside a kubelet struct",
      `${KUBELET}logging:\n  format: json\n  formatt: text\n`,
      ['cfg.yaml: KubeletConfiguration: unknown field "logging.formatt"'],
    ],
    [
      "an unknown field inside a kube-proxy struct",
      `${PROXY}mode: ipvs\nipvs:\n  strictArp: true\n`,
      ['cfg.yaml: KubeProxyConfiguration: unknown field "ipvs.strictArp"'],
    ],
    [
      "map keys are not fields",
      `${KUBELET}evictionHard:\n  memory.available: 100Mi\nfeatureGates:\n  NodeSwap: true\n`,
      [],
    ],
  ])("%s", (_name, component, problems) => {
    expect(validateConfigFile(file(CLUSTER, component))).toEqual(problems);
  });

  it("uses the pinned version's types: tlsCurvePreferences came with v1.36", () => {
    const doc = `${KUBELET}tlsCurvePreferences: [23]\n`;
    expect(validateConfigFile(file(`${CLUSTER}kubernetesVersion: v1.35.0\n`, doc))).toEqual([
      'cfg.yaml: KubeletConfiguration: unknown field "tlsCurvePreferences"',
    ]);
    expect(validateConfigFile(file(`${CLUSTER}kubernetesVersion: v1.36.0\n`, doc))).toEqual([]);
  });
});

describe("init: component configuration fields the types lack are warned about", () => {
  it("warns with the field's path and keeps going", () => {
    const warnings: string[] = [];
    const cfg = defaultInitConfig(
      file(CLUSTER, `${KUBELET}maxPod: 200\n`, `${PROXY}conntrack:\n  maxPerCPU: 4\n`),
      {
        resolved: { version: "v1.35.0", release: releaseFor("v1.35.0"), source: "test" },
        nodeName: "cp-1",
        advertiseAddress: "10.0.0.10",
        generateToken: () => "abcdef.0123456789abcdef",
        warn: (w) => warnings.push(w),
      },
    );
    expect(warnings).toEqual([
      'cfg.yaml: KubeletConfiguration: unknown field "maxPod"; it is ignored',
      'cfg.yaml: KubeProxyConfiguration: unknown field "conntrack.maxPerCPU"; it is ignored',
    ]);
    expect(cfg.kubelet.cgroupDriver).toBe("systemd");
  });
});
