import { describe, expect, it } from "vitest";
import { collectionPath, objectPath, RESOURCES, resourceFor } from "../../../src/kube/resources.js";

describe("request paths", () => {
  it.each([
    [
      { apiVersion: "v1", kind: "ConfigMap", name: "kubeadm-config", namespace: "kube-system" },
      "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
    ],
    [
      {
        apiVersion: "v1",
        kind: "Secret",
        name: "bootstrap-token-abcdef",
        namespace: "kube-system",
      },
      "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef",
    ],
    [{ apiVersion: "v1", kind: "Node", name: "cp-1" }, "/api/v1/nodes/cp-1"],
    [
      { apiVersion: "v1", kind: "Namespace", name: "kube-public" },
      "/api/v1/namespaces/kube-public",
    ],
    [
      { apiVersion: "v1", kind: "ServiceAccount", name: "coredns", namespace: "kube-system" },
      "/api/v1/namespaces/kube-system/serviceaccounts/coredns",
    ],
    [
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        name: "kubeadm:get-nodes",
      },
      "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm%3Aget-nodes",
    ],
    [
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        name: "kube-proxy",
        namespace: "kube-system",
      },
      "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/kube-proxy",
    ],
    [
      { apiVersion: "apps/v1", kind: "DaemonSet", name: "kube-proxy", namespace: "kube-system" },
      "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy",
    ],
    [
      { apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest", name: "csr-x" },
      "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-x",
    ],
    [
      {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        name: "cp-1",
        namespace: "kube-node-lease",
      },
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/cp-1",
    ],
    // kube-apiserver ignores metadata.namespace of cluster-scoped objects; so do we.
    [
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        name: "system:coredns",
        namespace: "kube-system",
      },
      "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Acoredns",
    ],
  ])("objectPath(%j) = %s", (ref, path) => {
    expect(objectPath(ref)).toBe(path);
  });

  it.each([
    ["v1", "ConfigMap", "kube-system", "/api/v1/namespaces/kube-system/configmaps"],
    ["v1", "Pod", undefined, "/api/v1/pods"],
    ["v1", "Node", undefined, "/api/v1/nodes"],
    [
      "rbac.authorization.k8s.io/v1",
      "ClusterRoleBinding",
      undefined,
      "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    ],
    ["apps/v1", "Deployment", "kube-system", "/apis/apps/v1/namespaces/kube-system/deployments"],
    ["batch/v1", "Job", "kube-system", "/apis/batch/v1/namespaces/kube-system/jobs"],
    ["storage.k8s.io/v1", "StorageClass", undefined, "/apis/storage.k8s.io/v1/storageclasses"],
  ])("collectionPath(%s, %s, %s) = %s", (apiVersion, kind, namespace, path) => {
    expect(collectionPath(apiVersion, kind, namespace)).toBe(path);
  });

  it("knows every kind the brief lists, once", () => {
    expect(RESOURCES.map((r) => r.kind).sort()).toEqual([
      "CertificateSigningRequest",
      "ClusterRole",
      "ClusterRoleBinding",
      "ConfigMap",
      "DaemonSet",
      "Deployment",
      "Job",
      "Lease",
      "Namespace",
      "Node",
      "Pod",
      "PodDisruptionBudget",
      "Role",
      "RoleBinding",
      "Secret",
      "Service",
      "ServiceAccount",
      "StorageClass",
    ]);
  });

  it("refuses unknown kinds, wrong versions, missing namespaces and path tricks", () => {
    expect(() => resourceFor("v1", "Endpoints")).toThrow(
      'unknown kind "Endpoints" (apiVersion "v1"): kubeforge only reads and writes Namespace, ConfigMap',
    );
    expect(() => resourceFor("rbac.authorization.k8s.io/v1beta1", "Role")).toThrow(
      'kind Role is served as apiVersion "rbac.authorization.k8s.io/v1", not "rbac.authorization.k8s.io/v1beta1"',
    );
    expect(() => objectPath({ apiVersion: "v1", kind: "Secret", name: "s" })).toThrow(
      'Secret "s" needs a namespace',
    );
    expect(() => objectPath({ apiVersion: "v1", kind: "Node", name: "../secrets" })).toThrow(
      'Node name "../secrets" cannot be part of a request path',
    );
  });
});
