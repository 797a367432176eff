import { describe, expect, it } from "vitest";
import { notReady } from "../../../../src/cluster/up/readiness.js";
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
