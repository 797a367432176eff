import type { Phase } from "../../workflow/phase.js";
import {
  checkEtcdPhase,
  controlPlaneJoinPhase,
  controlPlanePreparePhase,
  etcdJoinPhase,
  joinWaitControlPlanePhase,
} from "./control-plane.js";
import type { JoinData } from "./data.js";
import { joinKubeletStartPhase } from "./kubelet-start.js";
import { kubeletWaitBootstrapPhase } from "./kubelet-wait-bootstrap.js";
import { joinPreflightPhase } from "./preflight.js";

// kubeadm's join phase tree, in the order of cmd/kubeadm/app/cmd/join.go (v1.35). The
// control-plane phases do nothing on a worker join.

export function joinPhases(): Phase<JoinData>[] {
  return [
    joinPreflightPhase,
    controlPlanePreparePhase,
    checkEtcdPhase,
    joinKubeletStartPhase,
    etcdJoinPhase,
    kubeletWaitBootstrapPhase,
    controlPlaneJoinPhase,
    joinWaitControlPlanePhase,
  ];
}
