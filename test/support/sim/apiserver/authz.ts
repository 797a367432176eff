// SIMULATION (test double). Authorization: the privileged-group short cut, the Node authorizer
// (simplified) and RBAC over the stored Roles and bindings, combined as kube-apiserver's union.
// k8s: staging/src/k8s.io/apiserver/pkg/authorization/authorizerfactory/builtin.go
// (privilegedGroupAuthorizer: system:masters), staging/src/k8s.io/apiserver/pkg/authorization/
// union/union.go (first Allow/Deny wins; NoOpinion reasons joined by "\n"),
// plugin/pkg/auth/authorizer/rbac/rbac.go (ClusterRoleBindings, then RoleBindings of the
// namespace; "RBAC: <errors>" reason), pkg/apis/rbac/v1/evaluation_helpers.go (VerbMatches,
// APIGroupMatches, ResourceMatches with "*/subresource", ResourceNameMatches,
// NonResourceURLMatches), pkg/registry/rbac/validation/rule.go (appliesToUser),
// plugin/pkg/auth/authorizer/node/node_authorizer.go (node identity, leases, secrets and
// configmaps through pods bound to the node, NodeRules for the rest),
// staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbidden text).
import { NODE_RULES } from "./bootstrap-policy.js";
import { matchesLabelSelectorObject } from "./selectors.js";
import { forbidden, type StatusError } from "./status.js";
import type { Json, ObjectStore, StoredObject, UserInfo } from "./store.js";

/** authorizer.Attributes: what a request asks to do. */
export interface Attributes {
  user: UserInfo;
  verb: string;
  isResourceRequest: boolean;
  /** Non-resource requests: the URL path. */
  path: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export type Decision = "Allow" | "Deny" | "NoOpinion";

export interface AuthorizerResult {
  decision: Decision;
  reason: string;
}

export type Authorizer = (a: Attributes) => AuthorizerResult;

interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const noOpinion = (reason = ""): AuthorizerResult => ({ decision: "NoOpinion", reason });
const allow: AuthorizerResult = { decision: "Allow", reason: "" };

export function ruleAllows(a: Attributes, r: PolicyRule): boolean {
  const verbs = r.verbs ?? [];
  if (!verbs.includes("*") && !verbs.includes(a.verb)) return false;
  if (!a.isResourceRequest) {
    return (r.nonResourceURLs ?? []).some(
      (u) => u === "*" || u === a.path || (u.endsWith("*") && a.path.startsWith(u.slice(0, -1))),
    );
  }
  const groups = r.apiGroups ?? [];
  if (!groups.includes("*") && !groups.includes(a.apiGroup)) return false;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resOk = (r.resources ?? []).some(
    (res) =>
      res === "*" || res === combined || (a.subresource !== "" && res === `*/${a.subresource}`),
  );
  if (!resOk) return false;
  const names = r.resourceNames ?? [];
  return names.length === 0 || names.includes(a.name);
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

function appliesTo(
  user: UserInfo,
  subjects: Subject[] | undefined,
  bindingNamespace: string,
): boolean {
  for (const s of subjects ?? []) {
    switch (s.kind) {
      case "User":
        if (s.name === user.username) return true;
        break;
      case "Group":
        if (s.name && user.groups.includes(s.name)) return true;
        break;
      case "ServiceAccount": {
        const ns = s.namespace || bindingNamespace;
        if (user.username === `system:serviceaccount:${ns}:${s.name}`) return true;
        break;
      }
    }
  }
  return false;
}

const RBAC_API = "rbac.authorization.k8s.io/v1";

/** Rules of a ClusterRole, including aggregated ones (the clusterrole-aggregation controller's job). */
function clusterRoleRules(store: ObjectStore, role: StoredObject): PolicyRule[] {
  const agg = role.aggregationRule as { clusterRoleSelectors?: Json[] } | undefined;
  if (!agg?.clusterRoleSelectors) return (role.rules ?? []) as PolicyRule[];
  const out: PolicyRule[] = [];
  for (const other of store.list(RBAC_API, "ClusterRole")) {
    if (other.metadata.name === role.metadata.name) continue;
    if (
      agg.clusterRoleSelectors.some((sel) => matchesLabelSelectorObject(sel, other.metadata.labels))
    ) {
      out.push(...((other.rules ?? []) as PolicyRule[]));
    }
  }
  return out;
}

/** RBAC. k8s: plugin/pkg/auth/authorizer/rbac/rbac.go */
export function rbacAuthorizer(store: ObjectStore): Authorizer {
  return (a) => {
    const errors: string[] = [];
    const check = (roleRef: Json, bindingNs: string): boolean => {
      const kind = roleRef.kind as string;
      const name = roleRef.name as string;
      if (kind === "ClusterRole") {
        const role = store.get({ apiVersion: RBAC_API, kind: "ClusterRole", name });
        if (!role) {
          errors.push(`clusterrole.rbac.authorization.k8s.io "${name}" not found`);
          return false;
        }
        return clusterRoleRules(store, role).some((r) => ruleAllows(a, r));
      }
      const role = store.get({ apiVersion: RBAC_API, kind: "Role", name, namespace: bindingNs });
      if (!role) {
        errors.push(`role.rbac.authorization.k8s.io "${name}" not found`);
        return false;
      }
      return ((role.rules ?? []) as PolicyRule[]).some((r) => ruleAllows(a, r));
    };
    for (const b of store.list(RBAC_API, "ClusterRoleBinding")) {
      if (!appliesTo(a.user, b.subjects as Subject[], "")) continue;
      if (check(b.roleRef as Json, "")) return allow;
    }
    if (a.namespace) {
      for (const b of store.list(RBAC_API, "RoleBinding", { namespace: a.namespace })) {
        if (!appliesTo(a.user, b.subjects as Subject[], a.namespace)) continue;
        if (check(b.roleRef as Json, a.namespace)) return allow;
      }
    }
    const unique = [...new Set(errors)];
    if (unique.length === 0) return noOpinion();
    return noOpinion(`RBAC: ${unique.length === 1 ? unique[0]! : `[${unique.join(", ")}]`}`);
  };
}

/** k8s: pkg/auth/nodeidentifier/default.go NodeIdentity */
export function nodeIdentity(user: UserInfo): string | undefined {
  if (!user.groups.includes("system:nodes")) return undefined;
  if (!user.username.startsWith("system:node:")) return undefined;
  return user.username.slice("system:node:".length);
}

/** Names of `kind` ("secret" | "configmap") a pod references. */
function podReferences(pod: StoredObject, kind: "secret" | "configmap"): Set<string> {
  const out = new Set<string>();
  const spec = (pod.spec ?? {}) as Json;
  const add = (v: unknown) => {
    if (typeof v === "string" && v !== "") out.add(v);
  };
  for (const v of (spec.volumes ?? []) as Json[]) {
    if (kind === "secret") add((v.secret as Json | undefined)?.secretName);
    else add((v.configMap as Json | undefined)?.name);
    for (const s of ((v.projected as Json | undefined)?.sources ?? []) as Json[]) {
      add(((kind === "secret" ? s.secret : s.configMap) as Json | undefined)?.name);
    }
  }
  const containers = [
    ...((spec.containers ?? []) as Json[]),
    ...((spec.initContainers ?? []) as Json[]),
    ...((spec.ephemeralContainers ?? []) as Json[]),
  ];
  for (const c of containers) {
    for (const e of (c.env ?? []) as Json[]) {
      const from = (e.valueFrom ?? {}) as Json;
      add(
        ((kind === "secret" ? from.secretKeyRef : from.configMapKeyRef) as Json | undefined)?.name,
      );
    }
    for (const e of (c.envFrom ?? []) as Json[]) {
      add(((kind === "secret" ? e.secretRef : e.configMapRef) as Json | undefined)?.name);
    }
  }
  if (kind === "secret") for (const s of (spec.imagePullSecrets ?? []) as Json[]) add(s.name);
  return out;
}

/** The Node authorizer, simplified: the graph is "pods bound to the node, and what they use". */
export function nodeAuthorizer(store: ObjectStore): Authorizer {
  return (a) => {
    const nodeName = nodeIdentity(a.user);
    if (nodeName === undefined) return noOpinion();
    if (nodeName === "") return noOpinion(`unknown node for user "${a.user.username}"`);
    if (
      a.isResourceRequest &&
      a.apiGroup === "" &&
      (a.resource === "secrets" || a.resource === "configmaps")
    ) {
      if (!["get", "list", "watch"].includes(a.verb))
        return noOpinion("can only read resources of this type");
      if (a.subresource) return noOpinion("cannot read subresource");
      if (!a.namespace) return noOpinion("can only read namespaced object of this type");
      if (!a.name) return noOpinion("No Object name found");
      const kind = a.resource === "secrets" ? "secret" : "configmap";
      const related = store
        .list("v1", "Pod", { namespace: a.namespace, fieldSelector: `spec.nodeName=${nodeName}` })
        .some((p) => podReferences(p, kind).has(a.name));
      return related
        ? allow
        : noOpinion(`no relationship found between node '${nodeName}' and this object`);
    }
    if (a.isResourceRequest && a.apiGroup === "coordination.k8s.io" && a.resource === "leases") {
      if (!["get", "create", "update", "patch", "delete"].includes(a.verb)) {
        return noOpinion("can only get, create, update, patch, or delete a node lease");
      }
      if (a.namespace !== "kube-node-lease") {
        return noOpinion(`can only access leases in the "kube-node-lease" system namespace`);
      }
      if (a.verb !== "create" && a.name !== nodeName) {
        return noOpinion("can only access node lease with the same name as the requesting node");
      }
      return allow;
    }
    return NODE_RULES.some((r) => ruleAllows(a, r)) ? allow : noOpinion();
  };
}

export function privilegedGroupAuthorizer(groups = ["system:masters"]): Authorizer {
  return (a) => (a.user.groups.some((g) => groups.includes(g)) ? allow : noOpinion());
}

export function unionAuthorizer(list: Authorizer[]): Authorizer {
  return (a) => {
    const reasons: string[] = [];
    for (const z of list) {
      const r = z(a);
      if (r.reason) reasons.push(r.reason);
      if (r.decision !== "NoOpinion") return r;
    }
    return noOpinion(reasons.join("\n"));
  };
}

/** The apiserver's authorizer for --authorization-mode (e.g. ["Node", "RBAC"]). */
export function buildAuthorizer(store: ObjectStore, modes: string[]): Authorizer {
  const chain: Authorizer[] = [privilegedGroupAuthorizer()];
  for (const m of modes) {
    switch (m) {
      case "Node":
        chain.push(nodeAuthorizer(store));
        break;
      case "RBAC":
        chain.push(rbacAuthorizer(store));
        break;
      case "AlwaysAllow":
        chain.push(() => allow);
        break;
      case "AlwaysDeny":
        chain.push(() => ({ decision: "Deny", reason: "Everything is forbidden." }));
        break;
      default:
        throw new Error(`--authorization-mode ${m} is not supported by the simulated API server`);
    }
  }
  return unionAuthorizer(chain);
}

/** The 403 body kube-apiserver writes. k8s: endpoints/handlers/responsewriters/errors.go */
export function forbiddenFor(a: Attributes, reason: string): StatusError {
  const user = a.user.username;
  let msg: string;
  if (!a.isResourceRequest) {
    msg = `User "${user}" cannot ${a.verb} path "${a.path}"`;
  } else {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    msg = a.namespace
      ? `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" in the namespace "${a.namespace}"`
      : `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" at the cluster scope`;
  }
  const full = reason ? `${msg}: ${reason}` : msg;
  return a.isResourceRequest
    ? forbidden(a.apiGroup, a.resource, a.name, full)
    : forbidden("", "", "", full);
}
