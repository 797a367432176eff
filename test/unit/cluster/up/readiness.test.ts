import { describe, expect, it } from "vitest";
import { notReady } from "../../../../src/cluster/readiness.js";
import type { KubeObject } from "../../../../src/kube/types.js";

const node = (
  name: string,
  ready?: { status: string; reason?: string; message?: string },
): KubeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name },
  status: ready ? { conditions: [{ type: "Ready", ...ready }] } : {},
});
const coredns = (status: string, reason = "MinimumReplicasAvailable"): KubeObject => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "coredns", namespace: "kube-system" },
  status: { conditions: [{ type: "Available", status, reason }] },
});

describe("notReady", () => {
  it.each([
    {
      what: "everything ready",
      nodes: [node("a", { status: "True" }), node("b", { status: "True" })],
      dns: coredns("True"),
      want: [],
    },
    {
      what: "a node not registered and one NotReady with the kubelet's reason",
      nodes: [
        node("a", {
          status: "False",
          reason: "KubeletNotReady",
          message: "cni plugin not initialized",
        }),
      ],
      dns: coredns("True"),
      want: [
        "node a: Ready=False (KubeletNotReady: cni plugin not initialized)",
        "node b: not registered",
      ],
    },
    {
      what: "CoreDNS unavailable",
      nodes: [node("a", { status: "True" }), node("b", { status: "True" })],
      dns: coredns("False", "MinimumReplicasUnavailable"),
      want: ["deployment kube-system/coredns: Available=False (MinimumReplicasUnavailable)"],
    },
    {
      what: "CoreDNS missing, a node without conditions",
      nodes: [node("a", { status: "True" }), node("b")],
      dns: undefined,
      want: ["node b: no Ready condition yet", "deployment kube-system/coredns: not found"],
    },
    {
      what: "DNS disabled",
      nodes: [node("a", { status: "True" }), node("b", { status: "True" })],
      dns: "disabled" as const,
      want: [],
    },
  ])("$what", ({ nodes, dns, want }) => {
    expect(notReady(["a", "b"], nodes, dns)).toEqual(want);
  });
});

describe("notReady without a pod network (cni: none)", () => {
  const networkNotReady = {
    status: "False",
    reason: "KubeletNotReady",
    message:
      "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
  };
  it.each([
    {
      what: "registered nodes NotReady for the network alone are enough, CoreDNS is not looked at",
      nodes: [node("a", networkNotReady), node("b", { status: "True" })],
      want: [],
    },
    {
      what: "a node not registered yet",
      nodes: [node("a", networkNotReady)],
      want: ["node b: not registered"],
    },
    {
      what: "a node without a Ready condition, and one NotReady for another reason",
      nodes: [
        node("a"),
        node("b", {
          status: "Unknown",
          reason: "NodeStatusUnknown",
          message: "Kubelet stopped posting node status.",
        }),
      ],
      want: [
        "node a: no Ready condition yet",
        "node b: Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)",
      ],
    },
  ])("$what", ({ nodes, want }) => {
    expect(notReady(["a", "b"], nodes, "disabled", false)).toEqual(want);
  });

  it("still refuses a node NotReady for the network when a pod network is expected", () => {
    expect(notReady(["a"], [node("a", networkNotReady)], "disabled", true)).toHaveLength(1);
  });
});
