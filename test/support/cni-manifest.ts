// A manifest shaped like a CNI's (trimmed from Calico's and Antrea's): a Namespace, a
// CustomResourceDefinition and a custom resource of it, a PodDisruptionBudget, RBAC for the
// node agent and its DaemonSet. Shared by the tests of `cni: <manifest>`.

export const CNI_MANIFEST = `
apiVersion: v1
kind: Namespace
metadata: {name: test-net}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ippools.net.example.com}
spec:
  group: net.example.com
  scope: Cluster
  names: {plural: ippools, singular: ippool, kind: IPPool, listKind: IPPoolList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cidr: {type: string}
---
apiVersion: net.example.com/v1
kind: IPPool
metadata: {name: default-pool}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: net-controller, namespace: test-net}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: net-node}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: net-node, namespace: test-net}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: net-node}
rules:
  - apiGroups: [net.example.com]
    resources: [ippools]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: net-node}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: net-node}
subjects: [{kind: ServiceAccount, name: net-node, namespace: test-net}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: net-node, namespace: test-net}
spec:
  selector: {matchLabels: {app: net-node}}
  template:
    metadata: {labels: {app: net-node}}
    spec:
      serviceAccountName: net-node
      containers: [{name: agent, image: registry.example.com/net-node:v1}]
`;

/** How many objects CNI_MANIFEST holds. */
export const CNI_MANIFEST_OBJECTS = 8;
