import { parseManifest } from "../../../config/manifest.js";
import { namespaceOrDefault } from "../../../kube/resources.js";
import type { KubeObject } from "../../../kube/types.js";

// The user's own workloads as the workload probe (--probe-manifest, --probe-command; the
// action's upgrade-probe-manifest, upgrade-probe-command), in place of the built-in canary
// (kubeadm-upgrade.md §5.5). The manifest's objects are created when missing (an object that
// already exists, deployed by an earlier step, is left as it is) and what kubeforge created is
// removed at the end. Its annotations say what to ask every interval:
//   kubeforge.dev/probe-url: http(s)://…  a GET from the runner; any 2xx or 3xx answer is up.
//   kubeforge.dev/probe-url: /path        on a Service: a GET through the API server's service
//                                         proxy (reachable wherever the API is); 200 is up.
//   kubeforge.dev/probe-port: name|number on a Service: the port to proxy to (default its first).
// Every Deployment of the manifest has its available replicas recorded, and the settle gate
// between worker batches waits for it. Parsed and checked here, before any host is contacted.

export const PROBE_URL_ANNOTATION = "kubeforge.dev/probe-url";
export const PROBE_PORT_ANNOTATION = "kubeforge.dev/probe-port";

/** One request of the user's workload probe. */
export type UserRequest =
  | { name: string; via: "runner"; url: string }
  | {
      name: string;
      via: "service-proxy";
      namespace: string;
      service: string;
      port: string;
      path: string;
    };

export interface UserWorkloads {
  /** Where the objects came from (the manifest's path), for messages. */
  source?: string;
  /** The manifest's objects, created when missing. */
  objects: KubeObject[];
  requests: UserRequest[];
  /** Deployments whose availability is recorded and awaited by the settle gate. */
  deployments: { namespace: string; name: string }[];
  /** A command the runner runs every interval; exit status 0 is up. */
  command?: string;
}

interface ServicePort {
  name?: string;
  port?: number;
}

const isCoreService = (o: KubeObject) => o.apiVersion === "v1" && o.kind === "Service";
const isDeployment = (o: KubeObject) => o.apiVersion === "apps/v1" && o.kind === "Deployment";

/** The Service port a proxied request goes to: the annotation's, else the first port. */
function proxiedPort(svc: KubeObject, where: string): string {
  const ports = ((svc.spec ?? {}) as { ports?: ServicePort[] }).ports ?? [];
  const wanted = svc.metadata.annotations?.[PROBE_PORT_ANNOTATION];
  if (wanted !== undefined) {
    const match = ports.find((p) => p.name === wanted || String(p.port) === wanted);
    if (!match) {
      throw new Error(
        `${where}: ${PROBE_PORT_ANNOTATION} "${wanted}" names no port of the Service (it has ${ports.map((p) => p.name ?? p.port).join(", ") || "none"})`,
      );
    }
    return match.name ?? String(match.port);
  }
  const first = ports[0];
  if (!first)
    throw new Error(`${where}: the Service has no ports to send ${PROBE_URL_ANNOTATION} to`);
  return first.name ?? String(first.port);
}

/** The request an object's probe-url annotation asks for, if it has one. */
function requestOf(o: KubeObject, where: string): UserRequest | undefined {
  const url = o.metadata.annotations?.[PROBE_URL_ANNOTATION];
  if (url === undefined) return undefined;
  const name = `${namespaceOrDefault(o)}/${o.metadata.name}`;
  if (/^https?:\/\/[^/\s]+/i.test(url)) {
    try {
      new URL(url);
    } catch {
      throw new Error(`${where}: ${PROBE_URL_ANNOTATION} "${url}" is not a URL`);
    }
    return { name, via: "runner", url };
  }
  if (url.startsWith("/")) {
    if (!isCoreService(o)) {
      throw new Error(
        `${where}: ${PROBE_URL_ANNOTATION} "${url}" is a path, which only a Service takes (asked through the API server's service proxy); give an http(s) URL the runner reaches`,
      );
    }
    return {
      name,
      via: "service-proxy",
      namespace: namespaceOrDefault(o),
      service: o.metadata.name,
      port: proxiedPort(o, where),
      path: url,
    };
  }
  throw new Error(
    `${where}: ${PROBE_URL_ANNOTATION} "${url}" is neither an http(s) URL nor a path starting with /`,
  );
}

/** The user's workloads from a probe manifest's text; `source` names it in errors. */
export function userWorkloadsFromManifest(
  text: string,
  source: string,
): Pick<UserWorkloads, "source" | "objects" | "requests" | "deployments"> {
  const objects = parseManifest(text, source, "the probe manifest");
  const requests: UserRequest[] = [];
  objects.forEach((o, i) => {
    const r = requestOf(
      o,
      `the probe manifest ${source}, object ${i + 1} (${o.kind} ${o.metadata.name})`,
    );
    if (r) requests.push(r);
  });
  const deployments = objects
    .filter(isDeployment)
    .map((o) => ({ namespace: namespaceOrDefault(o), name: o.metadata.name }));
  if (requests.length === 0 && deployments.length === 0) {
    throw new Error(
      `the probe manifest ${source} gives nothing to probe: no object has a ${PROBE_URL_ANNOTATION} annotation and none is a Deployment`,
    );
  }
  return { source, objects, requests, deployments };
}
