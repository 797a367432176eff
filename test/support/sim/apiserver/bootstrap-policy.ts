// SIMULATION (test double). The RBAC objects kube-apiserver creates at start (the
// "rbac/bootstrap-roles" post-start hook) — the ones kubeadm binds to but never creates.
// k8s: plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (ClusterRoles, NodeRules,
// ClusterRoleBindings), pkg/registry/rbac/rest/storage_rbac.go (created when missing, labelled
// kubernetes.io/bootstrapping=rbac-defaults, annotated autoupdate=true).
import { createUnlessExists, type Json, type ObjectStore } from "./store.js";

interface Rule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const READ = ["get", "list", "watch"];
const READ_UPDATE = ["get", "list", "watch", "update", "patch"];

function rule(verbs: string[], groups: string[], resources: string[], names?: string[]): Rule {
  const r: Rule = { verbs, apiGroups: groups, resources };
  if (names) r.resourceNames = names;
  return r;
}
const urls = (verbs: string[], ...u: string[]): Rule => ({ verbs, nonResourceURLs: u });
// k8s: policy.go eventsRule()
const eventsRule = rule(["create", "update", "patch"], ["", "events.k8s.io"], ["events"]);

/** k8s: policy.go NodeRules() */
export const NODE_RULES: Rule[] = [
  rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
  rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews", "localsubjectaccessreviews"]),
  rule(READ, [""], ["services"]),
  rule(["create", "get", "list", "watch"], [""], ["nodes"]),
  rule(["update", "patch"], [""], ["nodes/status"]),
  rule(["update", "patch"], [""], ["nodes"]),
  rule(["create", "update", "patch"], [""], ["events"]),
  rule(READ, [""], ["pods"]),
  rule(["create", "delete"], [""], ["pods"]),
  rule(["update", "patch"], [""], ["pods/status"]),
  rule(["create"], [""], ["pods/eviction"]),
  rule(READ, [""], ["secrets", "configmaps"]),
  rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
  rule(["get"], [""], ["endpoints"]),
  rule(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"]),
  rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"], ["leases"]),
  rule(["get"], ["storage.k8s.io"], ["volumeattachments"]),
  rule(["get", "update", "patch"], [""], ["persistentvolumeclaims/status"]),
  rule(["create"], [""], ["serviceaccounts/token"]),
  rule(["get", "watch", "list"], ["storage.k8s.io"], ["csidrivers"]),
  rule(["get", "create", "update", "patch", "delete"], ["storage.k8s.io"], ["csinodes"]),
  rule(READ, ["node.k8s.io"], ["runtimeclasses"]),
];

const CLUSTER_ROLES: Record<string, Rule[]> = {
  "cluster-admin": [rule(["*"], ["*"], ["*"]), urls(["*"], "*")],
  "system:discovery": [
    urls(
      ["get"],
      "/livez",
      "/readyz",
      "/healthz",
      "/version",
      "/version/",
      "/openapi",
      "/openapi/*",
      "/api",
      "/api/*",
      "/apis",
      "/apis/*",
    ),
  ],
  "system:basic-user": [
    rule(
      ["create"],
      ["authorization.k8s.io"],
      ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    ),
    rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
  ],
  "system:public-info-viewer": [
    urls(["get"], "/livez", "/readyz", "/healthz", "/version", "/version/"),
  ],
  "system:monitoring": [
    urls(
      ["get"],
      "/metrics",
      "/metrics/slis",
      "/livez",
      "/readyz",
      "/healthz",
      "/livez/*",
      "/readyz/*",
      "/healthz/*",
    ),
  ],
  "system:node": NODE_RULES,
  "system:node-problem-detector": [
    rule(["get"], [""], ["nodes"]),
    rule(["patch"], [""], ["nodes/status"]),
    eventsRule,
  ],
  "system:kubelet-api-admin": [
    rule(READ, [""], ["nodes"]),
    rule(["proxy"], [""], ["nodes"]),
    rule(["*"], [""], ["nodes/proxy", "nodes/metrics", "nodes/spec", "nodes/stats", "nodes/log"]),
  ],
  "system:node-bootstrapper": [
    rule(
      ["create", "get", "list", "watch"],
      ["certificates.k8s.io"],
      ["certificatesigningrequests"],
    ),
  ],
  "system:auth-delegator": [
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
  ],
  "system:kube-aggregator": [rule(READ, [""], ["services", "endpoints"])],
  "system:kube-controller-manager": [
    eventsRule,
    rule(["create"], ["coordination.k8s.io"], ["leases"]),
    rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
    rule(["create"], [""], ["endpoints"]),
    rule(["get", "update"], [""], ["endpoints"], ["kube-controller-manager"]),
    rule(["create"], [""], ["secrets", "serviceaccounts"]),
    rule(["delete"], [""], ["secrets"]),
    rule(["get"], [""], ["namespaces", "secrets", "serviceaccounts", "configmaps"]),
    rule(["update"], [""], ["secrets", "serviceaccounts"]),
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    rule(["list", "watch"], ["*"], ["*"]),
    rule(["create"], [""], ["serviceaccounts/token"]),
  ],
  "system:kube-dns": [rule(["list", "watch"], [""], ["endpoints", "services"])],
  "system:certificates.k8s.io:certificatesigningrequests:nodeclient": [
    rule(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/nodeclient"]),
  ],
  "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient": [
    rule(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/selfnodeclient"]),
  ],
  "system:volume-scheduler": [
    rule(READ_UPDATE, [""], ["persistentvolumes"]),
    rule(READ, ["storage.k8s.io"], ["storageclasses"]),
    rule(READ_UPDATE, [""], ["persistentvolumeclaims"]),
  ],
  "system:certificates.k8s.io:legacy-unknown-approver": [
    rule(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/legacy-unknown"]),
  ],
  "system:certificates.k8s.io:kubelet-serving-approver": [
    rule(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/kubelet-serving"]),
  ],
  "system:certificates.k8s.io:kube-apiserver-client-approver": [
    rule(
      ["approve"],
      ["certificates.k8s.io"],
      ["signers"],
      ["kubernetes.io/kube-apiserver-client"],
    ),
  ],
  "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver": [
    rule(
      ["approve"],
      ["certificates.k8s.io"],
      ["signers"],
      ["kubernetes.io/kube-apiserver-client-kubelet"],
    ),
  ],
  "system:service-account-issuer-discovery": [
    urls(
      ["get"],
      "/.well-known/openid-configuration",
      "/.well-known/openid-configuration/",
      "/openid/v1/jwks",
      "/openid/v1/jwks/",
    ),
  ],
  "system:node-proxier": [
    rule(["list", "watch"], [""], ["services", "endpoints"]),
    rule(READ, [""], ["nodes"]),
    eventsRule,
    rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
  ],
  "system:kube-scheduler": [
    eventsRule,
    rule(["create"], ["coordination.k8s.io"], ["leases"]),
    rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
    rule(["create"], [""], ["endpoints"]),
    rule(["get", "update"], [""], ["endpoints"], ["kube-scheduler"]),
    rule(READ, [""], ["nodes"]),
    rule(["get", "list", "watch", "delete"], [""], ["pods"]),
    rule(["create"], [""], ["pods/binding", "bindings"]),
    rule(["patch", "update"], [""], ["pods/status"]),
    rule(READ, [""], ["services", "replicationcontrollers"]),
    rule(READ, ["apps", "extensions"], ["replicasets"]),
    rule(READ, ["apps"], ["statefulsets"]),
    rule(READ, ["policy"], ["poddisruptionbudgets"]),
    rule(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    rule(READ, ["storage.k8s.io"], ["csinodes"]),
    rule(READ, [""], ["namespaces"]),
    rule(READ, ["storage.k8s.io"], ["csidrivers"]),
    rule(READ, ["storage.k8s.io"], ["csistoragecapacities"]),
  ],
};

interface Subject {
  kind: "User" | "Group" | "ServiceAccount";
  name: string;
  namespace?: string;
}
const group = (name: string): Subject => ({ kind: "Group", name });
const user = (name: string): Subject => ({ kind: "User", name });

const CLUSTER_ROLE_BINDINGS: [string, Subject[]][] = [
  ["cluster-admin", [group("system:masters")]],
  ["system:monitoring", [group("system:monitoring")]],
  ["system:discovery", [group("system:authenticated")]],
  ["system:basic-user", [group("system:authenticated")]],
  ["system:public-info-viewer", [group("system:authenticated"), group("system:unauthenticated")]],
  ["system:node-proxier", [user("system:kube-proxy")]],
  ["system:kube-controller-manager", [user("system:kube-controller-manager")]],
  ["system:kube-dns", [{ kind: "ServiceAccount", name: "kube-dns", namespace: "kube-system" }]],
  ["system:kube-scheduler", [user("system:kube-scheduler")]],
  ["system:volume-scheduler", [user("system:kube-scheduler")]],
  // Kept with no subjects since the Node authorizer took over (policy.go comment).
  ["system:node", []],
  ["system:service-account-issuer-discovery", [group("system:serviceaccounts")]],
];

const BOOTSTRAP_META = {
  labels: { "kubernetes.io/bootstrapping": "rbac-defaults" },
  annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" },
};

function subjectJson(s: Subject): Json {
  return s.kind === "ServiceAccount"
    ? { kind: s.kind, name: s.name, namespace: s.namespace }
    : { kind: s.kind, apiGroup: "rbac.authorization.k8s.io", name: s.name };
}

/**
 * Creates the bootstrap ClusterRoles and ClusterRoleBindings that are missing (API servers
 * sharing one etcd may race to create them: the first one wins).
 */
export function ensureBootstrapPolicy(store: ObjectStore): void {
  const api = "rbac.authorization.k8s.io/v1";
  for (const [name, rules] of Object.entries(CLUSTER_ROLES)) {
    if (store.get({ apiVersion: api, kind: "ClusterRole", name })) continue;
    createUnlessExists(store, {
      apiVersion: api,
      kind: "ClusterRole",
      metadata: { name, ...structuredClone(BOOTSTRAP_META) },
      rules,
    });
  }
  for (const [name, subjects] of CLUSTER_ROLE_BINDINGS) {
    if (store.get({ apiVersion: api, kind: "ClusterRoleBinding", name })) continue;
    const binding: Json = {
      apiVersion: api,
      kind: "ClusterRoleBinding",
      metadata: { name, ...structuredClone(BOOTSTRAP_META) },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    };
    if (subjects.length > 0) binding.subjects = subjects.map(subjectJson);
    createUnlessExists(store, binding);
  }
}
