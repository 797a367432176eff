import { describe, expect, it } from "vitest";
import type { Taint } from "../../../../src/config/types.js";
import type { KubeObject } from "../../../../src/kube/types.js";
import {
  markControlPlaneMessages,
  markControlPlaneNode,
} from "../../../../src/manifests/control-plane-node.js";
import { expectValidObject } from "./valid.js";

// Cases from kubeadm's phases/markcontrolplane/markcontrolplane_test.go (TestMarkControlPlane),
// with today's control-plane label and taint; the expected taints are what its expected
// patches leave on the Node.

const CP_TAINT: Taint = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };
const UNINITIALIZED: Taint = {
  key: "node.cloudprovider.kubernetes.io/uninitialized",
  effect: "NoSchedule",
};
const LABELS = {
  "kubernetes.io/hostname": "cp-1",
  "node-role.kubernetes.io/control-plane": "",
  "node.kubernetes.io/exclude-from-external-load-balancers": "",
};

function node(labels: Record<string, string>, taints?: Taint[]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "cp-1", labels: { "kubernetes.io/hostname": "cp-1", ...labels } },
    spec: taints ? { taints } : {},
  };
}

describe("markControlPlaneNode", () => {
  const cases: [
    string,
    Record<string, string>,
    Taint[] | undefined,
    Taint[],
    Taint[] | undefined,
  ][] = [
    ["control-plane label and taint missing", {}, undefined, [CP_TAINT], [CP_TAINT]],
    ["control-plane label and taint missing but taint not wanted", {}, undefined, [], undefined],
    ["control-plane label missing", {}, [CP_TAINT], [CP_TAINT], [CP_TAINT]],
    ["control-plane taint missing", LABELS, undefined, [CP_TAINT], [CP_TAINT]],
    ["nothing missing", LABELS, [CP_TAINT], [CP_TAINT], [CP_TAINT]],
    ["has taint and no new taints wanted", LABELS, [UNINITIALIZED], [], [UNINITIALIZED]],
    [
      "has taint and should merge with wanted taint",
      LABELS,
      [UNINITIALIZED],
      [CP_TAINT],
      [CP_TAINT, UNINITIALIZED],
    ],
  ];
  it.each(cases)("%s", async (_name, labels, existing, wanted, want) => {
    const before = node(labels, existing);
    const snapshot = structuredClone(before);
    const after = markControlPlaneNode(before, wanted);
    expect(after.metadata.labels).toEqual(LABELS);
    expect((after["spec"] as { taints?: Taint[] }).taints).toEqual(want);
    expect(before).toEqual(snapshot); // the input is not changed
    await expectValidObject(after);
  });

  it("compares taints by key, value and effect; a value makes a different taint", () => {
    const existing = [{ ...CP_TAINT, value: "x" }];
    const after = markControlPlaneNode(node({}, existing), [CP_TAINT]);
    expect((after["spec"] as { taints: Taint[] }).taints).toEqual([
      CP_TAINT,
      { ...CP_TAINT, value: "x" },
    ]);
  });

  it("never treats a timed taint as one of the configured ones (Go compares TimeAdded pointers)", () => {
    const timed: Taint = { key: "k", effect: "NoExecute", timeAdded: "2026-01-01T00:00:00Z" };
    const after = markControlPlaneNode(node({}, [timed]), [{ key: "k", effect: "NoExecute" }]);
    expect((after["spec"] as { taints: Taint[] }).taints).toEqual([
      { key: "k", effect: "NoExecute" },
      timed,
    ]);
  });

  it("drops an empty value from configured taints, as omitempty does", () => {
    const after = markControlPlaneNode(node({}), [{ ...CP_TAINT, value: "" }]);
    expect((after["spec"] as { taints: Taint[] }).taints).toEqual([CP_TAINT]);
  });

  it("labels a Node that has no labels at all", () => {
    const bare: KubeObject = { apiVersion: "v1", kind: "Node", metadata: { name: "n1" } };
    expect(markControlPlaneNode(bare, []).metadata.labels).toEqual({
      "node-role.kubernetes.io/control-plane": "",
      "node.kubernetes.io/exclude-from-external-load-balancers": "",
    });
  });
});

describe("markControlPlaneMessages", () => {
  it("prints kubeadm's two lines, the taints line only with taints", () => {
    expect(
      markControlPlaneMessages("cp-1", [CP_TAINT, { key: "a", value: "b", effect: "NoExecute" }]),
    ).toEqual([
      "[mark-control-plane] Marking the node cp-1 as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]",
      "[mark-control-plane] Marking the node cp-1 as control-plane by adding the taints [node-role.kubernetes.io/control-plane:NoSchedule a=b:NoExecute]",
    ]);
    expect(markControlPlaneMessages("cp-1", [])).toHaveLength(1);
  });
});
