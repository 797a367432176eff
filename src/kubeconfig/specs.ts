import type { InitConfig } from "../config/types.js";
import {
  ADMIN_KUBECONFIG,
  CONTROLLER_MANAGER_KUBECONFIG,
  KUBELET_KUBECONFIG,
  SCHEDULER_KUBECONFIG,
  SUPER_ADMIN_KUBECONFIG,
} from "../config/paths.js";
import { controlPlaneEndpointURL, localAPIEndpointURL } from "./endpoints.js";

// The kubeconfig files `kubeadm init` writes (kubeadm: phases/kubeconfig/kubeconfig.go
// getKubeConfigSpecsBase): who each client is and which API address it talks to.

export type KubeConfigPhaseName =
  "admin" | "super-admin" | "kubelet" | "controller-manager" | "scheduler";

export interface KubeConfigFileSpec {
  /** kubeadm's sub-phase name under `kubeconfig`. */
  phase: KubeConfigPhaseName;
  /** File name under /etc/kubernetes. */
  fileName: string;
  /** The user name and the client certificate's CN. */
  clientName: string;
  /** The client certificate's O (the user's groups). */
  organizations: string[];
  /** "controlPlaneEndpoint" files are for clients anywhere; "local" ones talk to this node. */
  endpoint: "controlPlaneEndpoint" | "local";
}

/** kubeadm constants: ClusterAdminsGroupAndClusterRoleBinding, SystemPrivilegedGroup, NodesGroup. */
export const CLUSTER_ADMINS_GROUP = "kubeadm:cluster-admins";
export const SYSTEM_PRIVILEGED_GROUP = "system:masters";
export const NODES_GROUP = "system:nodes";
export const NODES_USER_PREFIX = "system:node:";

export interface KubeConfigSpecOptions {
  /**
   * ControlPlaneKubeletLocalMode is on: the init node's kubelet.conf talks to this node's own
   * API server (advertiseAddress:bindPort), not to controlPlaneEndpoint. kubeadm applies the
   * gate to init since kubernetes/kubernetes#125780 ("Uses the ControlPlaneKubeletLocalMode
   * feature gate also for kubeadm init"); the beta promotion's release note
   * (kubernetes/kubernetes#129956, 1.33) says init then writes the local endpoint and that
   * --control-plane-endpoint no longer affects `init phase kubeconfig kubelet`, as
   * kubernetes/kubeadm#3243 observed with v1.33.2.
   */
  kubeletLocalMode: boolean;
}

/** The five init kubeconfig files, in kubeadm's phase order. */
export function kubeConfigFileSpecs(
  nodeName: string,
  opts: KubeConfigSpecOptions,
): KubeConfigFileSpec[] {
  return [
    {
      phase: "admin",
      fileName: ADMIN_KUBECONFIG,
      clientName: "kubernetes-admin",
      organizations: [CLUSTER_ADMINS_GROUP],
      endpoint: "controlPlaneEndpoint",
    },
    {
      phase: "super-admin",
      fileName: SUPER_ADMIN_KUBECONFIG,
      clientName: "kubernetes-super-admin",
      organizations: [SYSTEM_PRIVILEGED_GROUP],
      endpoint: "controlPlaneEndpoint",
    },
    {
      phase: "kubelet",
      fileName: KUBELET_KUBECONFIG,
      clientName: `${NODES_USER_PREFIX}${nodeName}`,
      organizations: [NODES_GROUP],
      endpoint: opts.kubeletLocalMode ? "local" : "controlPlaneEndpoint",
    },
    {
      phase: "controller-manager",
      fileName: CONTROLLER_MANAGER_KUBECONFIG,
      clientName: "system:kube-controller-manager",
      organizations: [],
      endpoint: "local",
    },
    {
      phase: "scheduler",
      fileName: SCHEDULER_KUBECONFIG,
      clientName: "system:kube-scheduler",
      organizations: [],
      endpoint: "local",
    },
  ];
}

export function kubeConfigFileSpec(
  phase: KubeConfigPhaseName,
  nodeName: string,
  opts: KubeConfigSpecOptions,
): KubeConfigFileSpec {
  const spec = kubeConfigFileSpecs(nodeName, opts).find((s) => s.phase === phase);
  if (!spec) throw new Error(`unknown kubeconfig file "${String(phase)}"`);
  return spec;
}

/** The server URL a file's cluster entry must carry for this configuration. */
export function serverURLFor(spec: KubeConfigFileSpec, cfg: InitConfig): string {
  const local = cfg.init.localAPIEndpoint;
  return spec.endpoint === "local"
    ? localAPIEndpointURL(local)
    : controlPlaneEndpointURL(cfg.cluster.controlPlaneEndpoint, local);
}
