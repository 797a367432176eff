// SIMULATION (test double). Where kube-apiserver keeps each object in etcd:
// <prefix>/<resource prefix>/<namespace>/<name> for namespaced kinds and
// <prefix>/<resource prefix>/<name> for cluster-scoped ones; the resource prefix is the
// resource's plural name except for the few compiled-in exceptions.
// k8s: pkg/kubeapiserver/default_storage_factory_builder.go (SpecialDefaultResourcePrefixes),
// staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go (NamespaceKeyFunc,
// NoNamespaceKeyFunc), staging/src/k8s.io/apiserver/pkg/server/options/etcd.go (--etcd-prefix
// default "/registry"). Custom resources: <prefix>/<group>/<plural>/...
import { RESOURCES, type ResourceInfo } from "./resources.js";

export const DEFAULT_STORAGE_PREFIX = "/registry";

const SPECIAL_PREFIXES: Record<string, string> = {
  "/endpoints": "services/endpoints",
  "/nodes": "minions",
  "/services": "services/specs",
};

export function resourcePrefix(info: ResourceInfo): string {
  // Custom resources live under <group>/<plural>. k8s: staging/src/k8s.io/apiextensions-apiserver/
  // pkg/apiserver/customresource_handler.go (ResourcePrefix: path.Join(group, plural)).
  if (info.crd) return `${info.group}/${info.resource}`;
  return SPECIAL_PREFIXES[`${info.group}/${info.resource}`] ?? info.resource;
}

/** The storage prefix with exactly one trailing slash: "/registry/". */
export function normalizePrefix(prefix: string): string {
  return `/${prefix.replace(/^\/+|\/+$/g, "")}/`.replace(/^\/\/$/, "/");
}

/** The etcd key of one object. */
export function storageKey(
  prefix: string,
  info: ResourceInfo,
  namespace: string | undefined,
  name: string,
): string {
  const ns = info.namespaced ? `${namespace ?? ""}/` : "";
  return `${normalizePrefix(prefix)}${resourcePrefix(info)}/${ns}${name}`;
}

/** The keys of one resource (and namespace): a range prefix. */
export function storageRange(prefix: string, info: ResourceInfo, namespace?: string): string {
  const ns = info.namespaced && namespace ? `${namespace}/` : "";
  return `${normalizePrefix(prefix)}${resourcePrefix(info)}/${ns}`;
}

export interface StorageLocation {
  info: ResourceInfo;
  namespace?: string;
  name: string;
}

/** The object an etcd key names, or undefined for keys of resources the simulation lacks. */
export function parseStorageKey(prefix: string, key: string): StorageLocation | undefined {
  const p = normalizePrefix(prefix);
  if (!key.startsWith(p)) return undefined;
  const rest = key.slice(p.length);
  for (const info of RESOURCES) {
    if (info.virtual) continue;
    const rp = `${resourcePrefix(info)}/`;
    if (!rest.startsWith(rp)) continue;
    const parts = rest.slice(rp.length).split("/");
    if (info.namespaced && parts.length === 2 && parts[0] && parts[1])
      return { info, namespace: parts[0], name: parts[1] };
    if (!info.namespaced && parts.length === 1 && parts[0]) return { info, name: parts[0] };
  }
  return undefined;
}
