// SIMULATION (test double). The endpoints controller: for every Service with a selector, an
// Endpoints object of the same name listing the selected Pods that have an IP: Ready ones under
// addresses, the others under notReadyAddresses (all under addresses with
// publishNotReadyAddresses), each with the Service's ports resolved against the Pod (a named
// targetPort is the container port of that name, a number is itself, none is the Service port);
// Pods without such a port are left out of that port's subset. A Service without a selector is
// left alone: its Endpoints are the user's. Subsets are grouped by identical port sets, addresses
// sorted by IP, as RepackSubsets leaves them.
// k8s: pkg/controller/endpoint/endpoints_controller.go (syncService; addEndpointSubset: Ready →
// addresses, else notReadyAddresses; the Endpoints labels are the Service's; deleted with it),
// pkg/api/v1/pod/util.go (FindPort), pkg/api/v1/endpoints/util.go (RepackSubsets),
// pkg/controller/util/endpoint/controller_utils.go (ShouldPodBeInEndpoints: an IP, not
// terminal, not being deleted).
// SIMULATION LIMITS: no EndpointSlices (the endpointslice controllers are not simulated); no
// endpoints.kubernetes.io/last-change-trigger-time annotation; hostname/subdomain not set.
import { deepEqual } from "../patch.js";
import type { Json, StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { podIsReady, statusOf } from "./pods.js";
import { WorkQueue } from "./queue.js";

interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
  targetPort?: number | string;
}

interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}

interface EndpointAddress {
  ip: string;
  nodeName?: string;
  targetRef: { kind: "Pod"; namespace: string; name: string; uid: string };
}

export interface EndpointSubset {
  addresses?: EndpointAddress[];
  notReadyAddresses?: EndpointAddress[];
  ports: { name?: string; port: number; protocol: string }[];
}

/** k8s: podutil.FindPort — the container port a Service port's targetPort means on `pod`. */
export function findPort(pod: StoredObject, sp: ServicePort): number | undefined {
  const target = sp.targetPort ?? sp.port;
  if (typeof target === "number") return target;
  if (/^\d+$/.test(target)) return Number(target);
  const protocol = sp.protocol ?? "TCP";
  const containers = ((pod.spec ?? {}) as { containers?: { ports?: ContainerPort[] }[] })
    .containers;
  for (const c of containers ?? []) {
    for (const p of c.ports ?? []) {
      if (p.name === target && (p.protocol ?? "TCP") === protocol) return p.containerPort;
    }
  }
  return undefined;
}

function shouldBeInEndpoints(pod: StoredObject): boolean {
  const s = statusOf(pod);
  return (
    !!s.podIP && s.phase !== "Succeeded" && s.phase !== "Failed" && !pod.metadata.deletionTimestamp
  );
}

const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The subsets the controller writes for `service` given the Pods of its namespace. */
export function endpointSubsets(service: StoredObject, pods: StoredObject[]): EndpointSubset[] {
  const spec = (service.spec ?? {}) as {
    selector?: Record<string, string>;
    ports?: ServicePort[];
    publishNotReadyAddresses?: boolean;
  };
  const groups = new Map<string, EndpointSubset>();
  for (const pod of pods) {
    if (!spec.selector || !matches(spec.selector, pod.metadata.labels)) continue;
    if (!shouldBeInEndpoints(pod)) continue;
    const ports = (spec.ports ?? []).flatMap((sp) => {
      const port = findPort(pod, sp);
      return port === undefined
        ? []
        : [{ ...(sp.name ? { name: sp.name } : {}), port, protocol: sp.protocol ?? "TCP" }];
    });
    if (ports.length === 0 && (spec.ports ?? []).length > 0) continue;
    const address: EndpointAddress = {
      ip: statusOf(pod).podIP!,
      ...((pod.spec as Json | undefined)?.nodeName
        ? { nodeName: String((pod.spec as Json).nodeName) }
        : {}),
      targetRef: {
        kind: "Pod",
        namespace: pod.metadata.namespace ?? "",
        name: pod.metadata.name,
        uid: String(pod.metadata.uid ?? ""),
      },
    };
    const key = JSON.stringify(ports);
    const subset = groups.get(key) ?? { ports };
    groups.set(key, subset);
    const field =
      podIsReady(pod) || spec.publishNotReadyAddresses ? "addresses" : "notReadyAddresses";
    (subset[field] ??= []).push(address);
  }
  const byIP = (a: EndpointAddress, b: EndpointAddress) =>
    a.ip.localeCompare(b.ip, "en", { numeric: true });
  return [...groups.keys()].sort().map((k) => {
    const s = groups.get(k)!;
    s.addresses?.sort(byIP);
    s.notReadyAddresses?.sort(byIP);
    return s;
  });
}

/** endpoints-controller: Endpoints kept in step with Services and Pods. */
export function startEndpointsController(ctx: ControllerContext): StopFn {
  const { store, log } = ctx;
  const sync = (key: string) => {
    const [namespace, name] = key.split("/") as [string, string];
    const ref = { apiVersion: "v1", kind: "Endpoints", namespace, name };
    const service = store.get({ apiVersion: "v1", kind: "Service", namespace, name });
    const existing = store.get(ref);
    if (!service) {
      // The Service is gone: so are the Endpoints the controller made for it.
      if (existing && existing.metadata.labels?.[MANAGED] === undefined) return;
      if (existing) store.delete(ref);
      return;
    }
    if (!(service.spec as Json | undefined)?.selector) return;
    const subsets = endpointSubsets(service, store.list("v1", "Pod", { namespace }));
    const labels = { ...service.metadata.labels, [MANAGED]: "endpoint-controller" };
    if (
      existing &&
      deepEqual(existing.subsets ?? [], subsets) &&
      deepEqual(existing.metadata.labels ?? {}, labels)
    )
      return;
    const body = {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { ...existing?.metadata, name, namespace, labels },
      subsets,
    };
    if (existing) store.update(body);
    else store.create(body);
  };
  const queue = new WorkQueue(
    (key) => {
      try {
        sync(key);
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 409) queue.add(key);
        else if (code !== 404) throw e;
      }
    },
    (key, e) => log(`endpoints-controller: Service ${key}: ${(e as Error).message}`),
  );
  const keyOf = (o: StoredObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const unsubscribe = store.subscribe((ev) => {
    const r = ev.resource;
    if (r.group !== "") return;
    if (r.kind === "Service") queue.add(keyOf(ev.object));
    if (r.kind === "Pod") {
      const namespace = ev.object.metadata.namespace ?? "";
      for (const s of store.list("v1", "Service", { namespace })) {
        if ((s.spec as Json | undefined)?.selector) queue.add(keyOf(s));
      }
    }
  });
  for (const s of store.list("v1", "Service")) queue.add(keyOf(s));
  return () => {
    unsubscribe();
    queue.stop();
  };
}

/** The label the endpoints controller sets (LabelManagedBy, v1.22+), so it knows its own. */
const MANAGED = "endpoints.kubernetes.io/managed-by";
