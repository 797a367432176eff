import type { Phase } from "../../workflow/phase.js";
import type { JoinData } from "./data.js";
import { joinKubeletStartPhase } from "./kubelet-start.js";
import { kubeletWaitBootstrapPhase } from "./kubelet-wait-bootstrap.js";
import { joinPreflightPhase } from "./preflight.js";

// kubeadm's join phase tree, in the order of cmd/kubeadm/app/cmd/join.go (v1.35). The
// control-plane phases do nothing on a worker join; a control-plane join is not implemented yet.

const CONTROL_PLANE_PENDING = "joining a control-plane node comes in a later version of kubeforge";
const isControlPlane = (data: JoinData) => data.cfg.join.controlPlane !== undefined;

function controlPlaneOnly(
  name: string,
  short: string,
  children: [string, string][] = [],
  hidden = false,
): Phase<JoinData> {
  return {
    name,
    short,
    runIf: isControlPlane,
    pending: CONTROL_PLANE_PENDING,
    ...(hidden ? { hidden } : {}),
    phases: children.map(([n, s]) => ({ name: n, short: s, pending: CONTROL_PLANE_PENDING })),
  };
}

export function joinPhases(): Phase<JoinData>[] {
  return [
    joinPreflightPhase,
    controlPlaneOnly("control-plane-prepare", "Prepare the machine for serving a control plane", [
      [
        "download-certs",
        "Download certificates shared among control-plane nodes from the kubeadm-certs Secret",
      ],
      ["certs", "Generate the certificates for the new control plane components"],
      ["kubeconfig", "Generate the kubeconfig for the new control plane components"],
      ["control-plane", "Generate the manifests for the new control plane components"],
    ]),
    controlPlaneOnly("check-etcd", "Check that the etcd cluster is healthy", [], true),
    joinKubeletStartPhase,
    controlPlaneOnly("etcd-join", "Join etcd for control plane nodes"),
    kubeletWaitBootstrapPhase,
    controlPlaneOnly("control-plane-join", "Join a machine as a control plane instance", [
      ["mark-control-plane", "Mark a node as a control-plane"],
    ]),
    controlPlaneOnly("wait-control-plane", "Wait for the control plane to start"),
  ];
}
