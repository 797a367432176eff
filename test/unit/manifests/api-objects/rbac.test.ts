import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import {
  bootstrapTokenRBAC,
  clusterAdminsBinding,
  clusterInfoRBAC,
  kubeadmCertsRBAC,
  kubeadmConfigRBAC,
  kubeletConfigRBAC,
} from "../../../../src/manifests/rbac.js";
import { expectValidObject } from "./valid.js";

// The expected objects are kubeadm's Go literals transcribed (kubernetes/kubernetes,
// cmd/kubeadm/app): phases/bootstraptoken/node/tlsbootstrap.go, bootstraptoken/clusterinfo/
// clusterinfo.go, phases/uploadconfig/uploadconfig.go, phases/kubelet/config.go,
// phases/copycerts/copycerts.go, phases/kubeconfig/kubeconfig.go; names from constants.go.

const API = "rbac.authorization.k8s.io/v1";
const RBAC = "rbac.authorization.k8s.io";
const TOKENS = { kind: "Group", name: "system:bootstrappers:kubeadm:default-node-token" };
const NODES = { kind: "Group", name: "system:nodes" };

const crb = (name: string, role: string, subjects: object[]): KubeObject => ({
  apiVersion: API,
  kind: "ClusterRoleBinding",
  metadata: { name },
  roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: role },
  subjects,
});
const getOne = (resource: string, name: string) => ({
  verbs: ["get"],
  apiGroups: [""],
  resources: [resource],
  resourceNames: [name],
});
const roleAndBinding = (
  ns: string,
  name: string,
  rule: object,
  subjects: object[],
): KubeObject[] => [
  { apiVersion: API, kind: "Role", metadata: { name, namespace: ns }, rules: [rule] },
  {
    apiVersion: API,
    kind: "RoleBinding",
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: RBAC, kind: "Role", name },
    subjects,
  },
];

const phases: [string, () => KubeObject[], KubeObject[]][] = [
  [
    "bootstrap-token",
    () => bootstrapTokenRBAC({ kubeletAPIAdminBinding: false }),
    [
      {
        apiVersion: API,
        kind: "ClusterRole",
        metadata: { name: "kubeadm:get-nodes" },
        rules: [{ verbs: ["get"], apiGroups: [""], resources: ["nodes"] }],
      },
      crb("kubeadm:get-nodes", "kubeadm:get-nodes", [TOKENS]),
      crb("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", [TOKENS]),
      crb(
        "kubeadm:node-autoapprove-bootstrap",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        [TOKENS],
      ),
      crb(
        "kubeadm:node-autoapprove-certificate-rotation",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        [NODES],
      ),
    ],
  ],
  [
    "bootstrap-token, kubeadm with kubernetes/kubernetes#138957",
    () => bootstrapTokenRBAC({ kubeletAPIAdminBinding: true }).slice(-1),
    [
      crb("kubeadm:apiserver-kubelet-client", "system:kubelet-api-admin", [
        { kind: "User", name: "kube-apiserver-kubelet-client" },
      ]),
    ],
  ],
  [
    "bootstrap-token (cluster-info)",
    clusterInfoRBAC,
    roleAndBinding(
      "kube-public",
      "kubeadm:bootstrap-signer-clusterinfo",
      getOne("configmaps", "cluster-info"),
      [{ kind: "User", name: "system:anonymous" }],
    ),
  ],
  [
    "kubeadm:cluster-admins",
    () => [clusterAdminsBinding()],
    [
      crb("kubeadm:cluster-admins", "cluster-admin", [
        { kind: "Group", name: "kubeadm:cluster-admins" },
      ]),
    ],
  ],
  [
    "upload-config/kubeadm",
    kubeadmConfigRBAC,
    roleAndBinding(
      "kube-system",
      "kubeadm:nodes-kubeadm-config",
      getOne("configmaps", "kubeadm-config"),
      [TOKENS, NODES],
    ),
  ],
  [
    "upload-config/kubelet",
    kubeletConfigRBAC,
    roleAndBinding(
      "kube-system",
      "kubeadm:kubelet-config",
      getOne("configmaps", "kubelet-config"),
      [NODES, TOKENS],
    ),
  ],
  [
    "upload-certs",
    kubeadmCertsRBAC,
    roleAndBinding("kube-system", "kubeadm:kubeadm-certs", getOne("secrets", "kubeadm-certs"), [
      TOKENS,
    ]),
  ],
];

describe("RBAC objects of kubeadm's init phases", () => {
  it.each(phases)("%s: kubeadm's objects in kubeadm's order", (_phase, build, want) => {
    expect(build()).toEqual(want);
  });

  it.each(phases)("%s: valid Kubernetes objects", async (_phase, build) => {
    for (const obj of build()) await expectValidObject(obj);
  });

  it("returns fresh objects each call", () => {
    const a = bootstrapTokenRBAC({ kubeletAPIAdminBinding: false });
    (a[0]!["rules"] as { verbs: string[] }[])[0]!.verbs.push("list");
    expect(bootstrapTokenRBAC({ kubeletAPIAdminBinding: false })[0]!["rules"]).toEqual([
      { verbs: ["get"], apiGroups: [""], resources: ["nodes"] },
    ]);
  });
});
