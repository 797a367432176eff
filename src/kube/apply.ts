import { UnservedKindError } from "./errors.js";
import { createOrMutate, isPermanent, type ApiCallOptions } from "./idempotency.js";
import { poll } from "./poll.js";
import { displayName, withDefaultNamespace } from "./resources.js";
import type { KubeClient, KubeObject } from "./types.js";

// A manifest of any kinds applied as `kubectl create`, then `kubectl replace` for what exists:
// each object's kind is resolved through the server's discovery, created, or — when it already
// exists — replaced by the manifest's version (PUT with the current resourceVersion: custom
// resources and CRDs refuse unconditional updates). Namespaces and CustomResourceDefinitions go
// first; a custom resource whose CRD is in the same manifest waits for that CRD to be
// Established, the condition after which kube-apiserver serves the new kind (apiextensions-
// apiserver's EstablishingController; `kubectl wait --for condition=established` is the
// documented way: k8s docs tasks/extend-kubernetes/custom-resources/custom-resource-definitions).

export const CRD_API_VERSION = "apiextensions.k8s.io/v1";
export const CRD_KIND = "CustomResourceDefinition";

interface CrdSpec {
  group?: string;
  names?: { kind?: string };
}

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

const isCrd = (o: KubeObject) => o.apiVersion === CRD_API_VERSION && o.kind === CRD_KIND;

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/** The CRD of `crds` that defines `obj`'s group and kind, if any. */
function definitionOf(obj: KubeObject, crds: readonly KubeObject[]): KubeObject | undefined {
  return crds.find((c) => {
    const spec = (c.spec ?? {}) as CrdSpec;
    return spec.group === groupOf(obj.apiVersion) && spec.names?.kind === obj.kind;
  });
}

/** Namespaces, then CustomResourceDefinitions, then everything else in the manifest's order. */
export function applyOrder(objects: readonly KubeObject[]): KubeObject[] {
  const rank = (o: KubeObject) =>
    o.apiVersion === "v1" && o.kind === "Namespace" ? 0 : isCrd(o) ? 1 : 2;
  return objects
    .map((o, i) => ({ o, i }))
    .sort((a, b) => rank(a.o) - rank(b.o) || a.i - b.i)
    .map(({ o }) => o);
}

/** Waits until the CRD's Established condition is True; the error says what it is instead. */
async function waitEstablished(client: KubeClient, name: string, opts: ApiCallOptions) {
  let last = "not read yet";
  try {
    await poll(
      async () => {
        const crd = await client.get({ apiVersion: CRD_API_VERSION, kind: CRD_KIND, name });
        const conditions = ((crd.status ?? {}) as { conditions?: Condition[] }).conditions ?? [];
        const established = conditions.find((c) => c.type === "Established");
        if (established?.status === "True") return true;
        last = established
          ? `Established=${established.status} (${[established.reason, established.message].filter(Boolean).join(": ")})`
          : "no Established condition yet";
        return undefined;
      },
      {
        timeoutMs: opts.timeoutMs,
        what: `the CustomResourceDefinition ${name} to be Established`,
        retryIf: (e) => !isPermanent(e),
        ...(opts.intervalMs === undefined ? {} : { intervalMs: opts.intervalMs }),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      },
    );
  } catch (e) {
    throw new Error(
      `the CustomResourceDefinition ${name} is not Established (${last}): ${(e as Error).message}`,
      { cause: e },
    );
  }
}

/** Creates the object, or replaces the existing one with it; returns what the server stored. */
async function applyOne(
  client: KubeClient,
  obj: KubeObject,
  opts: ApiCallOptions,
): Promise<KubeObject> {
  const failFast = opts.failFast ?? isPermanent;
  const info = await poll(() => client.resource(obj.apiVersion, obj.kind), {
    timeoutMs: opts.timeoutMs,
    what: `the API server to serve kind ${obj.kind} in ${obj.apiVersion}`,
    retryIf: (e) => !failFast(e),
    ...(opts.intervalMs === undefined ? {} : { intervalMs: opts.intervalMs }),
    ...(opts.signal === undefined ? {} : { signal: opts.signal }),
  });
  const target = withDefaultNamespace(obj, info.namespaced);
  return createOrMutate(
    client,
    target,
    (current) => ({
      ...target,
      metadata: { ...target.metadata, resourceVersion: current.metadata.resourceVersion },
    }),
    { ...opts, failFast },
  );
}

export interface ApplyResult {
  /** The objects as stored, in the order they were applied. */
  applied: KubeObject[];
}

/**
 * Applies `objects` (already checked: every one has apiVersion, kind and metadata.name) one at a
 * time, each call retried as kubeforge's API calls are; stops at the first object that fails,
 * naming it.
 */
export async function applyObjects(
  client: KubeClient,
  objects: readonly KubeObject[],
  opts: ApiCallOptions & { log?: (line: string) => void },
): Promise<ApplyResult> {
  const crds = objects.filter(isCrd);
  const established = new Map<string, Promise<void>>();
  const applied: KubeObject[] = [];
  for (const obj of applyOrder(objects)) {
    const what = `${obj.kind} ${displayName(obj.metadata)} (${obj.apiVersion})`;
    try {
      const crd = definitionOf(obj, crds);
      let callOpts = opts;
      if (crd) {
        const name = crd.metadata.name;
        if (!established.has(name)) {
          opts.log?.(`waiting for the CustomResourceDefinition ${name} to be Established`);
          established.set(name, waitEstablished(client, name, opts));
        }
        await established.get(name);
        // Discovery may lag the condition by a moment: an unserved kind is retried here.
        const failFast = opts.failFast ?? isPermanent;
        callOpts = { ...opts, failFast: (e) => !(e instanceof UnservedKindError) && failFast(e) };
      }
      applied.push(await applyOne(client, obj, callOpts));
    } catch (e) {
      throw new Error(`applying ${what}: ${(e as Error).message}`, { cause: e });
    }
  }
  return { applied };
}
