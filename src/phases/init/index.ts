import type { Phase } from "../../workflow/phase.js";
import { certsPhase } from "./certs.js";
import { controlPlanePhase } from "./control-plane.js";
import type { InitData } from "./data.js";
import { etcdPhase } from "./etcd.js";
import { kubeconfigPhase } from "./kubeconfig.js";
import { kubeletStartPhase } from "./kubelet-start.js";
import { preflightPhase } from "./preflight.js";

// kubeadm's init phase tree, in the order of cmd/kubeadm/app/cmd/init.go (v1.35).

const NEEDS_API = "it needs the Kubernetes API, which this version of kubeforge does not reach yet";

function pending(
  name: string,
  short: string,
  children: [string, string][] = [],
  runIf?: (data: InitData) => boolean,
): Phase<InitData> {
  return {
    name,
    short,
    pending: NEEDS_API,
    ...(runIf ? { runIf } : {}),
    phases: children.map(([n, s]) => ({ name: n, short: s, pending: NEEDS_API })),
  };
}

export function initPhases(): Phase<InitData>[] {
  return [
    preflightPhase,
    certsPhase,
    kubeconfigPhase,
    etcdPhase,
    controlPlanePhase,
    kubeletStartPhase,
    pending("wait-control-plane", "Wait for the control plane to start"),
    pending("upload-config", "Upload the kubeadm and kubelet configuration to a ConfigMap", [
      ["kubeadm", "Upload the kubeadm ClusterConfiguration to a ConfigMap"],
      ["kubelet", "Upload the kubelet component config to a ConfigMap"],
    ]),
    pending("upload-certs", "Upload certificates to kubeadm-certs", [], (d) => d.uploadCerts),
    pending("mark-control-plane", "Mark a node as a control-plane"),
    pending("bootstrap-token", "Generates bootstrap tokens used to join a node to a cluster"),
    pending("kubelet-finalize", "Updates settings relevant to the kubelet after TLS bootstrap", [
      ["enable-client-cert-rotation", "Enable kubelet client certificate rotation"],
    ]),
    pending("addon", "Install required addons for passing conformance tests", [
      ["coredns", "Install the CoreDNS addon to a Kubernetes cluster"],
      ["kube-proxy", "Install the kube-proxy addon to a Kubernetes cluster"],
    ]),
    pending("show-join-command", "Show the join command for control-plane and worker node"),
  ];
}
