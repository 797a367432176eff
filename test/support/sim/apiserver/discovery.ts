// SIMULATION (test double). Discovery documents and server-side table printing, as kubectl and
// client-go read them.
// k8s: staging/src/k8s.io/apiserver/pkg/endpoints/discovery/{legacy,root,group,version}.go
// (APIVersions with serverAddressByClientCIDRs, APIGroupList, APIGroup, APIResourceList with
// subresources "pods/status"), staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go,
// staging/src/k8s.io/apiserver/pkg/registry/rest/table.go (default table: Name, Created At),
// pkg/printers/internalversion/printers.go (columns of configmaps, secrets, nodes, namespaces,
// pods), staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go (HumanDuration ages).
import { str } from "./json.js";
import { GROUP_ORDER, RESOURCES, apiVersionOf, type ResourceInfo } from "./resources.js";
import type { Json, StoredObject } from "./store.js";

const SUBRESOURCE_KINDS: Record<string, { kind: string; group?: string; version?: string }> = {
  binding: { kind: "Binding" },
  eviction: { kind: "Eviction", group: "policy", version: "v1" },
  scale: { kind: "Scale", group: "autoscaling", version: "v1" },
  token: { kind: "TokenRequest", group: "authentication.k8s.io", version: "v1" },
};

export function apiVersions(serverAddress: string): Json {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

// Custom resources appear once their CRD is Established.
// k8s: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go
const discoverable = () => RESOURCES.filter((r) => r.discoverable !== false);

function groupVersions(group: string): string[] {
  return [
    ...new Set(
      discoverable()
        .filter((r) => r.group === group)
        .map((r) => r.version),
    ),
  ];
}

export function apiGroup(group: string): Json | undefined {
  const versions = groupVersions(group);
  if (versions.length === 0) return undefined;
  const gv = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { kind: "APIGroup", apiVersion: "v1", name: group, versions: gv, preferredVersion: gv[0] };
}

export function apiGroupList(): Json {
  const custom = [...new Set(discoverable().map((r) => r.group))]
    .filter((g) => g !== "" && !GROUP_ORDER.includes(g))
    .sort();
  const groups = [...GROUP_ORDER, ...custom]
    .map((g) => apiGroup(g))
    .filter((g): g is Json => g !== undefined);
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: groups.map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
  };
}

export function apiResourceList(group: string, version: string): Json | undefined {
  const rs = discoverable().filter((r) => r.group === group && r.version === version);
  if (rs.length === 0) return undefined;
  const resources: Json[] = [];
  for (const r of rs) {
    const entry: Json = {
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
    };
    if (r.shortNames) entry.shortNames = r.shortNames;
    if (r.categories) entry.categories = r.categories;
    resources.push(entry);
    for (const [sub, verbs] of Object.entries(r.subresources)) {
      const k = SUBRESOURCE_KINDS[sub];
      const s: Json = { name: `${r.resource}/${sub}`, singularName: "", namespaced: r.namespaced };
      if (k?.group) s.group = k.group;
      if (k?.version) s.version = k.version;
      s.kind = k?.kind ?? r.kind;
      s.verbs = verbs;
      resources.push(s);
    }
  }
  return {
    kind: "APIResourceList",
    ...(group === "" ? {} : { apiVersion: "v1" }),
    groupVersion: group === "" ? version : `${group}/${version}`,
    resources,
  };
}

/** k8s: staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go HumanDuration */
export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 0) return "<invalid>";
  if (s < 60 * 2) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 60 * 3) return `${m}m`;
  const h = Math.floor(s / 3600);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (h < 24 * 8)
    return h % 24 === 0 ? `${Math.floor(h / 24)}d` : `${Math.floor(h / 24)}d${h % 24}h`;
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24)}d`;
  if (h < 24 * 365 * 8) return `${Math.floor(h / 24 / 365)}y${Math.floor(h / 24) % 365}d`;
  return `${Math.floor(h / 24 / 365)}y`;
}

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

const NAME_COL: Column = {
  name: "Name",
  type: "string",
  format: "name",
  description:
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
  priority: 0,
};
const AGE_COL: Column = {
  name: "Age",
  type: "string",
  format: "",
  description:
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
  priority: 0,
};
const col = (name: string, type = "string", description = ""): Column => ({
  name,
  type,
  format: "",
  description,
  priority: 0,
});

function printer(
  info: ResourceInfo,
  now: Date,
): { columns: Column[]; cells: (o: StoredObject) => unknown[] } {
  const age = (o: StoredObject) => {
    const t = Date.parse(str(o.metadata.creationTimestamp));
    return Number.isNaN(t) ? "<unknown>" : humanDuration(now.getTime() - t);
  };
  const count = (v: unknown) => Object.keys(v ?? {}).length;
  switch (info.kind) {
    case "ConfigMap":
      return {
        columns: [NAME_COL, col("Data", "integer"), AGE_COL],
        cells: (o) => [o.metadata.name, count(o.data) + count(o.binaryData), age(o)],
      };
    case "Secret":
      return {
        columns: [NAME_COL, col("Type"), col("Data", "integer"), AGE_COL],
        cells: (o) => [o.metadata.name, o.type ?? "Opaque", count(o.data), age(o)],
      };
    case "Namespace":
      return {
        columns: [NAME_COL, col("Status"), AGE_COL],
        cells: (o) => [o.metadata.name, ((o.status ?? {}) as Json).phase ?? "", age(o)],
      };
    case "Node":
      return {
        columns: [NAME_COL, col("Status"), col("Roles"), AGE_COL, col("Version")],
        cells: (o) => {
          const conds = (((o.status ?? {}) as Json).conditions ?? []) as Json[];
          const ready = conds.find((c) => c.type === "Ready");
          const roles = Object.keys(o.metadata.labels ?? {})
            .filter((l) => l.startsWith("node-role.kubernetes.io/"))
            .map((l) => l.slice("node-role.kubernetes.io/".length))
            .sort();
          const info = (((o.status ?? {}) as Json).nodeInfo ?? {}) as Json;
          return [
            o.metadata.name,
            ready?.status === "True" ? "Ready" : "NotReady",
            roles.length ? roles.join(",") : "<none>",
            age(o),
            info.kubeletVersion ?? "",
          ];
        },
      };
    case "Pod":
      return {
        columns: [NAME_COL, col("Ready"), col("Status"), col("Restarts", "string"), AGE_COL],
        cells: (o) => {
          const st = (o.status ?? {}) as Json;
          const cs = (st.containerStatuses ?? []) as Json[];
          const total = (((o.spec ?? {}) as Json).containers as unknown[] | undefined)?.length ?? 0;
          const ready = cs.filter((c) => c.ready === true).length;
          const restarts = cs.reduce((n, c) => n + Number(c.restartCount ?? 0), 0);
          return [o.metadata.name, `${ready}/${total}`, st.phase ?? "", String(restarts), age(o)];
        },
      };
    default:
      // k8s: registry/rest/table.go DefaultTableConvertor
      return {
        columns: [NAME_COL, { ...col("Created At", "date"), description: AGE_COL.description }],
        cells: (o) => [o.metadata.name, o.metadata.creationTimestamp],
      };
  }
}

function partialMetadata(o: StoredObject): Json {
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata };
}

/** A meta.k8s.io/v1 Table of objects (kubectl get asks for it in its Accept header). */
export function toTable(
  info: ResourceInfo,
  items: StoredObject[],
  resourceVersion: string,
  now: Date,
  includeObject: string,
): Json {
  const p = printer(info, now);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: p.columns,
    rows: items.map((o) => ({
      cells: p.cells(o),
      object:
        includeObject === "None" ? undefined : includeObject === "Object" ? o : partialMetadata(o),
    })),
  };
}

export function listKind(info: ResourceInfo): string {
  return `${info.kind}List`;
}

export { apiVersionOf };
