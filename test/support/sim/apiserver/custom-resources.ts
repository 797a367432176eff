// SIMULATION (test double). CustomResourceDefinitions and the custom resources they define, as
// the apiextensions-apiserver embedded in kube-apiserver serves them:
// - create: status reset, storedVersions = the storage version, generation 1
//   (k8s: staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/
//   strategy.go PrepareForCreate); names.singular and listKind defaulted
//   (.../pkg/apis/apiextensions/v1/defaults.go SetDefaults_CustomResourceDefinitionSpec);
// - validation: metadata.name is <plural>.<group>, the group has a dot, scope Cluster or
//   Namespaced, exactly one storage version (.../pkg/apis/apiextensions/validation/validation.go,
//   with its messages);
// - two controllers, asynchronous as in kube-apiserver: the NamingConditionController accepts the
//   names (status.acceptedNames, NamesAccepted=True "NoConflicts", Established=False
//   "Installing"), then the EstablishingController sets Established=True
//   "InitialNamesAccepted" (.../pkg/controller/status/naming_controller.go,
//   .../pkg/controller/establish/establishing_controller.go);
// - serving: a CRD's served versions answer requests once NamesAccepted or Established is True
//   (.../pkg/apiserver/customresource_handler.go ServeHTTP), and appear in discovery once it is
//   Established (.../pkg/apiserver/customresource_discovery_controller.go).
// SIMULATION LIMITS: custom resources are not validated against or pruned by the CRD's
// openAPIV3Schema; no conversion webhooks (objects are served in any served version as stored);
// no name-conflict detection between CRDs; the set of custom resources is per process (every
// store in one process sees the CRDs any of them holds).
import { setCustomResources, type ResourceInfo } from "./resources.js";
import { fieldError, type FieldError } from "./status.js";
import { rfc3339, type Json, type ObjectStore, type StoredObject } from "./store.js";

export const CRD_KIND = "CustomResourceDefinition";
const CRD_API_VERSION = "apiextensions.k8s.io/v1";

interface CrdVersion {
  name?: string;
  served?: boolean;
  storage?: boolean;
  subresources?: { status?: unknown; scale?: unknown };
}

interface CrdNames {
  plural?: string;
  singular?: string;
  kind?: string;
  listKind?: string;
  shortNames?: string[];
  categories?: string[];
}

interface CrdSpec {
  group?: string;
  scope?: string;
  names?: CrdNames;
  versions?: CrdVersion[];
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

const specOf = (crd: Json): CrdSpec => crd.spec ?? {};
const statusOf = (crd: Json) =>
  (crd.status ?? {}) as { conditions?: Condition[]; acceptedNames?: CrdNames };

function conditionTrue(crd: Json, type: string): boolean {
  return statusOf(crd).conditions?.some((c) => c.type === type && c.status === "True") ?? false;
}

const ALL_VERBS = [
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "create",
  "update",
  "watch",
];

/** The resources a CRD currently serves (none before its names are accepted). */
export function servedResources(crd: Json): ResourceInfo[] {
  const established = conditionTrue(crd, "Established");
  if (!established && !conditionTrue(crd, "NamesAccepted")) return [];
  const spec = specOf(crd);
  const names = statusOf(crd).acceptedNames ?? {};
  if (!spec.group || !names.plural || !names.kind) return [];
  return (spec.versions ?? [])
    .filter((v) => v.served && v.name)
    .map((v): ResourceInfo => ({
      group: spec.group!,
      version: v.name!,
      resource: names.plural!,
      kind: names.kind!,
      singular: names.singular ?? names.kind!.toLowerCase(),
      namespaced: spec.scope === "Namespaced",
      ...(names.shortNames?.length ? { shortNames: names.shortNames } : {}),
      ...(names.categories?.length ? { categories: names.categories } : {}),
      verbs: ALL_VERBS,
      subresources: v.subresources?.status ? { status: ["get", "patch", "update"] } : {},
      // No client-node model: the body is not schema-checked (see SIMULATION LIMITS).
      model: "",
      hasGeneration: true,
      discoverable: established,
    }));
}

/** Keeps the served custom resources in step with a CRD the store now holds (or no longer does). */
export function trackCrd(name: string, crd: Json | undefined): void {
  setCustomResources(name, crd ? servedResources(crd) : []);
}

/** k8s: v1/defaults.go SetDefaults_CustomResourceDefinitionSpec */
export function defaultCrd(crd: Json): void {
  const names = specOf(crd).names;
  if (!names?.kind) return;
  names.singular ??= names.kind.toLowerCase();
  names.listKind ??= `${names.kind}List`;
}

/** k8s: customresourcedefinition/strategy.go PrepareForCreate */
export function prepareCrdForCreate(crd: Json): void {
  const storage = (specOf(crd).versions ?? []).find((v) => v.storage)?.name;
  crd.status = { storedVersions: storage ? [storage] : [] };
}

/** k8s: apiextensions/validation/validation.go ValidateCustomResourceDefinition (the basics). */
export function validateCrd(crd: Json, errs: FieldError[]): void {
  const spec = specOf(crd);
  const name = (crd.metadata as Json | undefined)?.name;
  const group = spec.group ?? "";
  const plural = spec.names?.plural ?? "";
  if (name !== `${plural}.${group}`) {
    errs.push(
      fieldError.invalid("metadata.name", name, `must be spec.names.plural+"."+spec.group`),
    );
  }
  if (group === "") errs.push(fieldError.required("spec.group", ""));
  else if (!group.includes(".")) {
    errs.push(fieldError.invalid("spec.group", group, "should be a domain with at least one dot"));
  }
  if (spec.scope !== "Cluster" && spec.scope !== "Namespaced") {
    errs.push(fieldError.notSupported("spec.scope", spec.scope, ["Cluster", "Namespaced"]));
  }
  if (plural === "") errs.push(fieldError.required("spec.names.plural", ""));
  if (!spec.names?.kind) errs.push(fieldError.required("spec.names.kind", ""));
  const versions = spec.versions ?? [];
  if (versions.length === 0) {
    errs.push(
      fieldError.invalid(
        "spec.versions",
        versions,
        "must have exactly one version marked as storage version",
      ),
    );
  } else if (versions.filter((v) => v.storage).length !== 1) {
    errs.push(
      fieldError.invalid(
        "spec.versions",
        versions,
        "must have exactly one version marked as storage version",
      ),
    );
  }
}

function withCondition(conditions: Condition[], next: Condition, now: string): Condition[] {
  const old = conditions.find((c) => c.type === next.type);
  const stamped = {
    ...next,
    lastTransitionTime: old && old.status === next.status ? old.lastTransitionTime : now,
  };
  return [...conditions.filter((c) => c.type !== next.type), stamped];
}

/** The status a controller step gives the CRD, or undefined when it has nothing to do. */
function nextStatus(crd: StoredObject, now: string): Json | undefined {
  const status = statusOf(crd);
  const conditions = status.conditions ?? [];
  if (!conditionTrue(crd, "NamesAccepted")) {
    // NamingConditionController: the requested names become the accepted ones.
    const names = specOf(crd).names ?? {};
    let next = withCondition(
      conditions,
      {
        type: "NamesAccepted",
        status: "True",
        reason: "NoConflicts",
        message: "no conflicts found",
      },
      now,
    );
    if (!conditionTrue(crd, "Established")) {
      next = withCondition(
        next,
        {
          type: "Established",
          status: "False",
          reason: "Installing",
          message: "the initial names have been accepted",
        },
        now,
      );
    }
    return { ...(crd.status as Json), acceptedNames: { ...names }, conditions: next };
  }
  if (!conditionTrue(crd, "Established")) {
    // EstablishingController.
    return {
      ...(crd.status as Json),
      conditions: withCondition(
        conditions,
        {
          type: "Established",
          status: "True",
          reason: "InitialNamesAccepted",
          message: "the initial names have been accepted",
        },
        now,
      ),
    };
  }
  return undefined;
}

/**
 * Runs the naming and establishing controllers over the store's CRDs until stopped. Each step
 * comes `delayMs` after the change that calls for it, as the controllers' queues do. `hold()`
 * keeps every step waiting until the function it returns is called: a test sees the state
 * between a CRD's creation and its acceptance without racing the delay.
 */
export function startCrdControllers(
  store: ObjectStore,
  log: (line: string) => void,
  delayMs = 100,
): { stop(): void; hold(): () => void } {
  const timers = new Set<NodeJS.Timeout>();
  let held: Set<string> | undefined;
  const step = (name: string) => {
    if (held) {
      held.add(name);
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (held) {
        held.add(name);
        return;
      }
      const crd = store.get({ apiVersion: CRD_API_VERSION, kind: CRD_KIND, name });
      if (!crd || crd.metadata.deletionTimestamp) return;
      const status = nextStatus(crd, rfc3339(store.now()));
      if (!status) return;
      try {
        store.update({ ...crd, status }, { subresource: "status" });
      } catch (e) {
        // Another API server on the same etcd made the same step first.
        log(`CustomResourceDefinition ${name}: status update failed: ${(e as Error).message}`);
      }
    }, delayMs);
    timers.add(timer);
  };
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.kind !== CRD_KIND || ev.type === "DELETED") return;
    if (nextStatus(ev.object, "") !== undefined) step(ev.object.metadata.name);
  });
  for (const crd of store.list(CRD_API_VERSION, CRD_KIND)) {
    if (nextStatus(crd, "") !== undefined) step(crd.metadata.name);
  }
  return {
    stop: () => {
      unsubscribe();
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
    hold: () => {
      held ??= new Set();
      return () => {
        const waiting = held ?? new Set<string>();
        held = undefined;
        for (const name of waiting) step(name);
      };
    },
  };
}
