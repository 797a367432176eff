import { describe, expect, it } from "vitest";
import { parseManifest } from "../../../../src/cluster/up/cni-manifest.js";
import { applyOrder } from "../../../../src/kube/apply.js";

const ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: net}\n";
const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: net}\n";

describe("parseManifest", () => {
  it("reads every object, skips empty documents and expands List items", () => {
    const list = `apiVersion: v1\nkind: List\nitems:\n  - ${cm.trim().split("\n").join("\n    ")}\n`;
    const objects = parseManifest(`---\n${ns}---\n# only a comment\n---\n${list}`, "net.yaml");
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      "Namespace/net",
      "ConfigMap/c",
    ]);
  });

  it.each([
    {
      what: "a document without apiVersion",
      text: `${ns}---\nkind: ConfigMap\nmetadata: {name: x}\n`,
      want: "the CNI manifest net.yaml: document 2: has no apiVersion (every object needs apiVersion, kind and metadata.name)",
    },
    {
      what: "a document that is a list",
      text: `${ns}---\n- a\n- b\n`,
      want: "the CNI manifest net.yaml: document 2: is a list, not an object",
    },
    {
      what: "a List item without a name",
      text: "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {}}\n",
      want: "the CNI manifest net.yaml: document 1, item 1: has no metadata.name",
    },
    {
      what: "invalid YAML in the third document",
      text: `${ns}---\n${cm}---\nmetadata: {name: [}\n`,
      want: "the CNI manifest net.yaml: document 3 is not valid YAML (line 9",
    },
    { what: "no object at all", text: "---\n# nothing\n", want: "net.yaml holds no objects" },
  ])("refuses $what, naming the file and the document", ({ text, want }) => {
    expect(() => parseManifest(text, "net.yaml")).toThrow(want);
  });

  it("lists every unusable document at once", () => {
    expect(() =>
      parseManifest(`kind: A\nmetadata: {name: a}\n---\n${ns}---\napiVersion: v1\n`, "net.yaml"),
    ).toThrow(
      "the CNI manifest net.yaml has 2 unusable documents:\n - net.yaml: document 1: has no apiVersion",
    );
  });
});

describe("applyOrder", () => {
  it("puts Namespaces, then CRDs first, the rest in the manifest's order", () => {
    const obj = (apiVersion: string, kind: string, name: string) => ({
      apiVersion,
      kind,
      metadata: { name },
    });
    const order = applyOrder([
      obj("v1", "ServiceAccount", "sa"),
      obj("example.com/v1", "Pool", "p"),
      obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "pools.example.com"),
      obj("v1", "Namespace", "net"),
      obj("apps/v1", "DaemonSet", "ds"),
    ]).map((o) => o.kind);
    expect(order).toEqual([
      "Namespace",
      "CustomResourceDefinition",
      "ServiceAccount",
      "Pool",
      "DaemonSet",
    ]);
  });
});
