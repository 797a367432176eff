import { describe, expect, it } from "vitest";
import { loadClusterSpec } from "../../../src/config/cluster/load.js";
import type { ConfigError } from "../../../src/config/load.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import { MAX_YAML_LENGTH, parseYAMLDocuments, toYAMLDocuments } from "../../../src/config/yaml.js";

// What a YAML text may cost to read: a few lines of nested aliases ("billion laughs") once ran
// the process out of memory when the Cluster's kubeadm documents were written out again. Every
// entry point refuses them, as Kubernetes' reader (goyaml v2's alias ratio) does, naming the
// file, in well under a second; a text longer than the bound is refused without being parsed.

/** `levels` lists of nine, each made of nine aliases of the one before: 9^levels values. */
function aliasBomb(levels: number): string {
  const lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"];
  for (let i = 1; i < levels; i++) {
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(", ")}]`,
    );
  }
  return lines.join("\n");
}

const CLUSTER = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\n";

describe("YAML bounds", () => {
  it("refuses an alias bomb in a Cluster file's kubeadm documents, naming the file", () => {
    // 1.3 KB of YAML: 9^10 (3.5 billion) values written out.
    const kubeadm = `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n${aliasBomb(10)
      .split("\n")
      .map((l) => `x-${l}`)
      .join("\n")}\n`;
    const started = Date.now();
    let problems: string[] = [];
    try {
      loadClusterSpec(`${CLUSTER}---\n${kubeadm}`, "cluster.yaml");
    } catch (e) {
      problems = (e as ConfigError).problems;
    }
    expect(Date.now() - started).toBeLessThan(1000);
    expect(problems).toEqual([
      expect.stringMatching(
        /^cluster\.yaml: document 2 contains excessive aliasing: written out, it would hold \d{10} values, \d+ of them written in the file \(Kubernetes refuses it too\)$/,
      ),
    ]);
  });

  it("refuses it in a kubeadm --config file and in any YAML kubeforge reads", () => {
    expect(() => decodeConfigDocuments(aliasBomb(8), "kubeadm.yaml")).toThrow(
      /^kubeadm\.yaml: document 1 contains excessive aliasing/,
    );
    expect(() => parseYAMLDocuments(`a: 1\n---\n${aliasBomb(7)}`, "patch file p.yaml")).toThrow(
      /^patch file p\.yaml: document 2 contains excessive aliasing: written out, it would hold \d+ values/,
    );
  });

  it("reads ordinary anchors and aliases, and writes them out", () => {
    const text = [
      "base: &base {image: registry.k8s.io/pause:3.10, pullPolicy: IfNotPresent}",
      "a: *base",
      "b: {<<: *base, pullPolicy: Never}",
      "many: [*base, *base, *base, *base]",
    ].join("\n");
    const [doc] = parseYAMLDocuments(text, "ok.yaml") as [Record<string, unknown>];
    expect(doc.a).toEqual(doc.base);
    expect(doc.b).toEqual({ image: "registry.k8s.io/pause:3.10", pullPolicy: "Never" });
    expect(toYAMLDocuments([doc])).toContain("pullPolicy: Never");
    // goyaml's allowance: up to 400,000 values, 99% of them from aliases.
    const list = `list: &list [${Array.from({ length: 50 }, (_, i) => i).join(", ")}]`;
    const uses = Array.from({ length: 40 }, (_, i) => `use${i}: *list`);
    expect(parseYAMLDocuments([list, ...uses].join("\n"), "wide.yaml")).toHaveLength(1);
  });

  it("refuses a text longer than the bound before parsing it, saying how long it is", () => {
    const big = `name: "${"x".repeat(MAX_YAML_LENGTH)}"\n`;
    const started = Date.now();
    expect(() => parseYAMLDocuments(big, "cluster.yaml")).toThrow(
      `cluster.yaml: it is ${big.length} characters long; kubeforge reads YAML of at most ${MAX_YAML_LENGTH}`,
    );
    expect(Date.now() - started).toBeLessThan(500);
  });
});
