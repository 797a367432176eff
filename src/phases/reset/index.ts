import type { Phase } from "../../workflow/phase.js";
import { cleanupNodePhase } from "./cleanup-node.js";
import type { ResetData } from "./data.js";
import { resetPreflightPhase } from "./preflight.js";
import { removeEtcdMemberPhase } from "./remove-etcd-member.js";

// kubeadm's reset phases, in the order of cmd/kubeadm/app/cmd/reset.go (v1.35):
// preflight, remove-etcd-member, cleanup-node.

export function resetPhases(): Phase<ResetData>[] {
  return [resetPreflightPhase, removeEtcdMemberPhase, cleanupNodePhase];
}
