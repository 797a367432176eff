import type { Taint } from "../config/types.js";
import type { KubeObject } from "../types/kube-object.js";
import { taintToString } from "./kubelet.js";

// mark-control-plane (kubeadm: phases/markcontrolplane/markcontrolplane.go): the Node is read,
// mutated here, and sent back as a strategic merge patch computed from the two versions
// (apiclient.PatchNode); init and control-plane join both run it.

// kubeadm: constants.go LabelNodeRoleControlPlane, LabelExcludeFromExternalLB
export const LABEL_NODE_ROLE_CONTROL_PLANE = "node-role.kubernetes.io/control-plane";
export const LABEL_EXCLUDE_FROM_EXTERNAL_LB =
  "node.kubernetes.io/exclude-from-external-load-balancers";
export const CONTROL_PLANE_LABELS: readonly string[] = [
  LABEL_NODE_ROLE_CONTROL_PLANE,
  LABEL_EXCLUDE_FROM_EXTERNAL_LB,
];

// The v1.Taint fields a Node carries; `value` and `timeAdded` are omitempty.
function asNodeTaint(t: Taint): Taint {
  const out: Taint = { key: t.key, effect: t.effect };
  if (t.value) out.value = t.value;
  if (t.timeAdded) out.timeAdded = t.timeAdded;
  return out;
}

// Go compares v1.Taint structs with == (slices.Contains): key, value and effect equal, and
// TimeAdded the same pointer, which between the configuration and a Node only holds when
// both are nil. So a taint carrying a time never matches one from the configuration.
function sameTaint(a: Taint, b: Taint): boolean {
  return (
    a.key === b.key &&
    (a.value ?? "") === (b.value ?? "") &&
    a.effect === b.effect &&
    !a.timeAdded &&
    !b.timeAdded
  );
}

/**
 * markControlPlaneNode: a copy of `node` with both control-plane labels set to "" and its
 * taints replaced by `taints` (the configured ones, in order) followed by every taint the Node
 * already had that is not among them. An empty result leaves no `spec.taints` (omitempty).
 */
export function markControlPlaneNode(node: KubeObject, taints: readonly Taint[]): KubeObject {
  const out = structuredClone(node);
  const labels = { ...out.metadata.labels };
  for (const label of CONTROL_PLANE_LABELS) labels[label] = "";
  out.metadata.labels = labels;

  const spec = { ...((out["spec"] as Record<string, unknown> | undefined) ?? {}) };
  const merged = taints.map(asNodeTaint);
  for (const existing of (spec["taints"] as Taint[] | undefined) ?? []) {
    if (!merged.some((t) => sameTaint(t, existing))) merged.push(existing);
  }
  if (merged.length > 0) spec["taints"] = merged;
  else delete spec["taints"];
  out["spec"] = spec;
  return out;
}

/** What kubeadm prints before patching (MarkControlPlane), one line each. */
export function markControlPlaneMessages(nodeName: string, taints: readonly Taint[]): string[] {
  const lines = [
    `[mark-control-plane] Marking the node ${nodeName} as control-plane by adding the labels: [${CONTROL_PLANE_LABELS.join(" ")}]`,
  ];
  if (taints.length > 0) {
    lines.push(
      `[mark-control-plane] Marking the node ${nodeName} as control-plane by adding the taints [${taints.map(taintToString).join(" ")}]`,
    );
  }
  return lines;
}
