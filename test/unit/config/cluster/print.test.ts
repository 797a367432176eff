import { describe, expect, it } from "vitest";
import {
  CLUSTER_FIELDS,
  CNI_FIELDS,
  DOWNLOADS_FIELDS,
  KUBEADM_FIELDS,
  NETWORKING_FIELDS,
  NODE_FIELDS,
  PREPARE_FIELDS,
  SSH_FIELDS,
  TAINT_FIELDS,
} from "../../../../src/config/cluster/decode.js";
import { defaultClusterSpec, loadClusterSpec } from "../../../../src/config/cluster/load.js";
import { clusterDefaultsYAML } from "../../../../src/config/cluster/print.js";
import { parseYAMLDocuments } from "../../../../src/config/yaml.js";

const OPTS = { baseDir: "/work/cfg", home: "/home/runner" };

describe("kubeforge config print cluster-defaults", () => {
  const text = clusterDefaultsYAML();

  it("loads back as the default Cluster", () => {
    expect(loadClusterSpec(text, "cluster-defaults", OPTS)).toEqual(defaultClusterSpec());
  });

  it("is a single YAML document", () => {
    expect(parseYAMLDocuments(text, "cluster-defaults")).toHaveLength(1);
  });

  it.each([
    ...CLUSTER_FIELDS,
    ...NETWORKING_FIELDS,
    ...KUBEADM_FIELDS,
    ...SSH_FIELDS,
    ...NODE_FIELDS,
    ...TAINT_FIELDS,
    ...PREPARE_FIELDS,
    ...DOWNLOADS_FIELDS,
  ])("shows the field %s", (field) => {
    expect(text).toMatch(new RegExp(`(^|[\\s{,])${field}:`, "m"));
  });

  it("describes both forms of cni", () => {
    for (const f of CNI_FIELDS) expect(text).toContain(`${f}:`);
    expect(text).toMatch(/^cni: bridge$/m);
  });

  it("its commented examples are valid settings once uncommented", () => {
    // Uncomment the example lines (not the prose and not the "..." placeholders for secrets).
    const examples =
      /^(\s*)# ((controlPlaneEndpoint|user|privateKeyFile|hostKeyFingerprints|jumpHost|address|labels|kubeletBinary|skipPhases|configFile|patchesDir|documents|agent|acceptNewHostKeys|registryMirrors): .*|- \{name: .*| {2}(apiVersion|kind|apiServer| {2}certSANs):( .*)?)$/;
    const uncommented = text
      .split("\n")
      .map((line) => {
        const m = examples.exec(line);
        return m ? `${m[1]}${m[2]}` : line;
      })
      .join("\n");
    expect(uncommented).not.toBe(text);
    const readFile = (p: string) => {
      expect(p).toBe("/work/cfg/kubeadm.yaml");
      return "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nskipPhases: [addon/kube-proxy]\n";
    };
    const spec = loadClusterSpec(uncommented, "example", { ...OPTS, readFile });
    expect(spec.nodes.map((n) => [n.name, n.role, n.host])).toEqual([
      ["kubeforge-control-plane", "control-plane", "local"],
      ["cp-1", "control-plane", "ssh://ubuntu@203.0.113.10:22"],
      ["w-1", "worker", "ssh://ubuntu@203.0.113.11"],
      ["w-2", "worker", "docker"],
    ]);
    expect(spec).toMatchObject({
      controlPlaneEndpoint: "api.example.com:6443",
      kubeletBinary: "https://example.com/kubelet",
      skipPhases: ["addon/kube-proxy"],
      kubeadm: { configFile: "/work/cfg/kubeadm.yaml", patchesDir: "/work/cfg/patches" },
      prepare: { registryMirrors: { "docker.io": ["https://mirror.gcr.io"] } },
      ssh: {
        user: "ubuntu",
        privateKeyFile: "/home/runner/.ssh/id_ed25519",
        jumpHost: "ssh://bastion.example.com",
      },
    });
    expect(spec.nodes[0]).toMatchObject({
      address: "10.0.0.10",
      labels: { tier: "web" },
      kubeletBinary: "/work/cfg/kubelet",
    });
    expect(spec.nodes[2]!.taints).toEqual([{ key: "gpu", value: "true", effect: "NoSchedule" }]);
    expect(spec.kubeadm.documents).toContain("certSANs: [api.example.com]");
  });
});
