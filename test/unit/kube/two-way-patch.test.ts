import { describe, expect, it } from "vitest";
import { createTwoWayMergePatch, NODE_MERGE_LISTS } from "../../../src/kube/two-way-patch.js";

const node = () => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: {
    name: "cp-1",
    resourceVersion: "42",
    creationTimestamp: "2026-01-02T03:04:05Z",
    labels: { "kubernetes.io/hostname": "cp-1", "kubernetes.io/os": "linux" },
    annotations: { "node.alpha.kubernetes.io/ttl": "0" },
  },
  spec: {
    podCIDR: "10.244.0.0/24",
    podCIDRs: ["10.244.0.0/24"],
    taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }],
  },
  status: {
    conditions: [{ type: "Ready", status: "False" }],
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
  },
});

describe("createTwoWayMergePatch for a Node", () => {
  it("mark-control-plane: labels merge, taints are replaced whole, keys sorted (exact body)", () => {
    const before = node();
    const after = node();
    after.metadata.labels = {
      ...after.metadata.labels,
      "node-role.kubernetes.io/control-plane": "",
      "node.kubernetes.io/exclude-from-external-load-balancers": "",
    } as typeof after.metadata.labels;
    after.spec.taints = [
      { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" },
      { effect: "NoSchedule", key: "node-role.kubernetes.io/control-plane" },
    ];
    const patch = createTwoWayMergePatch(before, after, NODE_MERGE_LISTS);
    expect(JSON.stringify(patch)).toBe(
      '{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"","node.kubernetes.io/exclude-from-external-load-balancers":""}},' +
        '"spec":{"taints":[{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"},{"effect":"NoSchedule","key":"node-role.kubernetes.io/control-plane"}]}}',
    );
  });

  it("a removed key becomes null; an emptied list or map is absent (Go omitempty)", () => {
    const before = node();
    const after = node();
    delete (after.metadata.labels as Record<string, string>)["kubernetes.io/os"];
    after.metadata.annotations = {} as typeof after.metadata.annotations;
    after.spec.taints = [];
    expect(createTwoWayMergePatch(before, after, NODE_MERGE_LISTS)).toEqual({
      metadata: { annotations: null, labels: { "kubernetes.io/os": null } },
      spec: { taints: null },
    });
  });

  it("an unchanged object gives an empty patch", () => {
    expect(createTwoWayMergePatch(node(), node(), NODE_MERGE_LISTS)).toEqual({});
  });

  it("a changed value replaces the old one, whatever its type", () => {
    const before = node();
    const after = {
      ...node(),
      spec: { ...node().spec, unschedulable: true, podCIDR: "10.244.1.0/24" },
    };
    expect(createTwoWayMergePatch(before, after, NODE_MERGE_LISTS)).toEqual({
      spec: { podCIDR: "10.244.1.0/24", unschedulable: true },
    });
  });

  it("refuses changes to merge lists instead of sending a wrong patch", () => {
    const after = node();
    after.spec.podCIDRs = ["10.244.0.0/24", "fd00::/64"];
    expect(() => createTwoWayMergePatch(node(), after, NODE_MERGE_LISTS)).toThrow(
      "changes spec.podCIDRs: it is a merge list",
    );
  });
});
