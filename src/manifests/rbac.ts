import type { KubeObject } from "../types/kube-object.js";

// Every RBAC object kubeadm's init creates outside the addons, field for field as kubeadm sends
// them, grouped by the phase that creates them. Subjects carry no apiGroup, as kubeadm's Go
// literals leave it empty (omitempty); the API server defaults it to rbac.authorization.k8s.io
// for User and Group subjects, so objects read back show it.

export const RBAC_GROUP = "rbac.authorization.k8s.io";
export const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;

// kubeadm: constants/constants.go
export const NODE_BOOTSTRAP_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token";
export const NODES_GROUP = "system:nodes";
export const CLUSTER_ADMINS_GROUP = "kubeadm:cluster-admins";
export const NODE_KUBELET_BOOTSTRAP = "kubeadm:kubelet-bootstrap";
export const NODE_BOOTSTRAPPER_CLUSTER_ROLE = "system:node-bootstrapper";
export const GET_NODES_CLUSTER_ROLE = "kubeadm:get-nodes";
export const NODE_AUTOAPPROVE_BOOTSTRAP = "kubeadm:node-autoapprove-bootstrap";
export const CSR_AUTOAPPROVAL_CLUSTER_ROLE =
  "system:certificates.k8s.io:certificatesigningrequests:nodeclient";
export const NODE_AUTOAPPROVE_CERTIFICATE_ROTATION =
  "kubeadm:node-autoapprove-certificate-rotation";
export const NODE_SELF_CSR_AUTOAPPROVAL_CLUSTER_ROLE =
  "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient";
export const KUBELET_CONFIG_ROLE = "kubeadm:kubelet-config";
export const KUBEADM_CERTS_ROLE = "kubeadm:kubeadm-certs";
// kubeadm: phases/uploadconfig/uploadconfig.go
export const NODES_KUBEADM_CONFIG_ROLE = "kubeadm:nodes-kubeadm-config";
// kubeadm: phases/bootstraptoken/clusterinfo/clusterinfo.go; k8s.io/apiserver user.Anonymous
export const BOOTSTRAP_SIGNER_CLUSTERINFO_ROLE = "kubeadm:bootstrap-signer-clusterinfo";
export const ANONYMOUS_USER = "system:anonymous";
/** API server bootstrap policy; kubeadm binds it, never creates it. */
export const CLUSTER_ADMIN_CLUSTER_ROLE = "cluster-admin";
// kubeadm constants KubeletAPIAdminClusterRoleBindingName, KubeletAPIAdminClusterRoleName,
// APIServerKubeletClientCertCommonName (kubernetes/kubernetes#138957; cluster-api copies them in
// controlplane/kubeadm/internal/workload_cluster_rbac.go). The ClusterRole is bootstrap policy.
export const KUBELET_API_ADMIN_BINDING = "kubeadm:apiserver-kubelet-client";
export const KUBELET_API_ADMIN_CLUSTER_ROLE = "system:kubelet-api-admin";
export const APISERVER_KUBELET_CLIENT_USER = "kube-apiserver-kubelet-client";

export interface Subject {
  kind: "Group" | "User" | "ServiceAccount";
  name: string;
  namespace?: string;
  apiGroup?: string;
}

/** rbac/v1 PolicyRule in kubeadm's field set (verbs, apiGroups, resources, resourceNames). */
export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

const group = (name: string): Subject => ({ kind: "Group", name });
const user = (name: string): Subject => ({ kind: "User", name });

/** get on one named object of a core resource: the shape of every kubeadm Role rule. */
function getNamed(resource: string, name: string): PolicyRule {
  return { verbs: ["get"], apiGroups: [""], resources: [resource], resourceNames: [name] };
}

export function clusterRole(name: string, rules: PolicyRule[]): KubeObject {
  return { apiVersion: RBAC_API_VERSION, kind: "ClusterRole", metadata: { name }, rules };
}

export function clusterRoleBinding(
  name: string,
  clusterRoleName: string,
  subjects: Subject[],
): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: clusterRoleName },
    subjects,
  };
}

export function role(namespace: string, name: string, rules: PolicyRule[]): KubeObject {
  return { apiVersion: RBAC_API_VERSION, kind: "Role", metadata: { name, namespace }, rules };
}

/** A RoleBinding to the Role of the same namespace named `roleName`. */
export function roleBinding(
  namespace: string,
  name: string,
  roleName: string,
  subjects: Subject[],
): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: "RoleBinding",
    metadata: { name, namespace },
    roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: roleName },
    subjects,
  };
}

export interface BootstrapTokenRBACOptions {
  /**
   * Bind kube-apiserver's kubelet client to system:kubelet-api-admin (kubeadm versions where
   * kubeletClientUsesRBAC holds; its certificate then carries no group).
   */
  kubeletAPIAdminBinding: boolean;
}

/**
 * bootstrap-token phase, in kubeadm's order (cmd/phases/init/bootstraptoken.go;
 * phases/bootstraptoken/node/tlsbootstrap.go): bootstrap tokens may get nodes, post CSRs, get
 * their CSRs auto-approved; nodes get their certificate rotations auto-approved; then, where the
 * kubeadm version has it, AllowAPIServerToAccessKubeletAPI lets the API server's kubelet client
 * reach kubelets (logs, exec, port-forward). The order after AutoApproveNodeCertificateRotation
 * is the one Kamaji's copy of the phase keeps (internal/kubeadm/bootstraptoken.go, which calls
 * kubeadm's own node.AllowAPIServerToAccessKubeletAPI).
 */
export function bootstrapTokenRBAC(opts: BootstrapTokenRBACOptions): KubeObject[] {
  const kubeletAPIAdmin = opts.kubeletAPIAdminBinding
    ? [
        clusterRoleBinding(KUBELET_API_ADMIN_BINDING, KUBELET_API_ADMIN_CLUSTER_ROLE, [
          user(APISERVER_KUBELET_CLIENT_USER),
        ]),
      ]
    : [];
  return [
    clusterRole(GET_NODES_CLUSTER_ROLE, [
      { verbs: ["get"], apiGroups: [""], resources: ["nodes"] },
    ]),
    clusterRoleBinding(GET_NODES_CLUSTER_ROLE, GET_NODES_CLUSTER_ROLE, [
      group(NODE_BOOTSTRAP_TOKEN_GROUP),
    ]),
    clusterRoleBinding(NODE_KUBELET_BOOTSTRAP, NODE_BOOTSTRAPPER_CLUSTER_ROLE, [
      group(NODE_BOOTSTRAP_TOKEN_GROUP),
    ]),
    clusterRoleBinding(NODE_AUTOAPPROVE_BOOTSTRAP, CSR_AUTOAPPROVAL_CLUSTER_ROLE, [
      group(NODE_BOOTSTRAP_TOKEN_GROUP),
    ]),
    clusterRoleBinding(
      NODE_AUTOAPPROVE_CERTIFICATE_ROTATION,
      NODE_SELF_CSR_AUTOAPPROVAL_CLUSTER_ROLE,
      [group(NODES_GROUP)],
    ),
    ...kubeletAPIAdmin,
  ];
}

/**
 * bootstrap-token phase, after the cluster-info ConfigMap (clusterinfo.go
 * CreateClusterInfoRBACRules): anonymous users may read kube-public/cluster-info, which is
 * how a joining node discovers the cluster before it trusts it.
 */
export function clusterInfoRBAC(): KubeObject[] {
  const ns = "kube-public";
  return [
    role(ns, BOOTSTRAP_SIGNER_CLUSTERINFO_ROLE, [getNamed("configmaps", "cluster-info")]),
    roleBinding(ns, BOOTSTRAP_SIGNER_CLUSTERINFO_ROLE, BOOTSTRAP_SIGNER_CLUSTERINFO_ROLE, [
      user(ANONYMOUS_USER),
    ]),
  ];
}

/**
 * kubeadm:cluster-admins → cluster-admin, created during init once admin.conf's user (group
 * kubeadm:cluster-admins) is bound (kubeadm: phases/kubeconfig/kubeconfig.go
 * EnsureAdminClusterRoleBindingImpl; with super-admin.conf when admin.conf is forbidden).
 */
export function clusterAdminsBinding(): KubeObject {
  return clusterRoleBinding(CLUSTER_ADMINS_GROUP, CLUSTER_ADMIN_CLUSTER_ROLE, [
    group(CLUSTER_ADMINS_GROUP),
  ]);
}

/** upload-config/kubeadm (uploadconfig.go): bootstrap tokens and nodes may read kubeadm-config. */
export function kubeadmConfigRBAC(): KubeObject[] {
  const ns = "kube-system";
  return [
    role(ns, NODES_KUBEADM_CONFIG_ROLE, [getNamed("configmaps", "kubeadm-config")]),
    roleBinding(ns, NODES_KUBEADM_CONFIG_ROLE, NODES_KUBEADM_CONFIG_ROLE, [
      group(NODE_BOOTSTRAP_TOKEN_GROUP),
      group(NODES_GROUP),
    ]),
  ];
}

/**
 * upload-config/kubelet (kubeadm: phases/kubelet/config.go createConfigMapRBACRules): nodes and
 * bootstrap tokens may read kubelet-config. The subjects' order is kubeadm's (nodes first).
 */
export function kubeletConfigRBAC(): KubeObject[] {
  const ns = "kube-system";
  return [
    role(ns, KUBELET_CONFIG_ROLE, [getNamed("configmaps", "kubelet-config")]),
    roleBinding(ns, KUBELET_CONFIG_ROLE, KUBELET_CONFIG_ROLE, [
      group(NODES_GROUP),
      group(NODE_BOOTSTRAP_TOKEN_GROUP),
    ]),
  ];
}

/** upload-certs (copycerts.go createRBAC): bootstrap tokens may read the kubeadm-certs Secret. */
export function kubeadmCertsRBAC(): KubeObject[] {
  const ns = "kube-system";
  return [
    role(ns, KUBEADM_CERTS_ROLE, [getNamed("secrets", "kubeadm-certs")]),
    roleBinding(ns, KUBEADM_CERTS_ROLE, KUBEADM_CERTS_ROLE, [group(NODE_BOOTSTRAP_TOKEN_GROUP)]),
  ];
}
