// SIMULATION (test double). The API server's proxy to a Service
// (/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>), GET only: the Service's port
// named (a number is turned into the port's name), the Service's Endpoints read, a random ready
// address with a port of that name chosen, and the request forwarded to it over plain HTTP, its
// answer passed back. k8s: pkg/registry/core/service/storage/storage.go ResourceLocation
// ("invalid service request %q"; "no service port %d found for service %q"; reads the Endpoints
// object of the Service's name; "no endpoints available for service %q" as 503
// ServiceUnavailable), pkg/registry/core/service/proxy.go (ProxyREST: the remainder of the path
// after /proxy goes to the endpoint), docs "Manually constructing apiserver proxy URLs".
// SIMULATION LIMITS: no scheme prefix ("https:name:port"), GET only, no upgrade (websocket); a
// dial failure answers 503 with the error as kube-apiserver's proxy error responder does
// (k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go: "error trying to reach service: %v").
import { request } from "node:http";
import type { ServerResponse } from "node:http";
import type { Json, ObjectStore } from "./store.js";
import { resourceFor } from "./resources.js";
import { failure } from "./status.js";

interface EndpointSubset {
  addresses?: { ip: string }[];
  ports?: { name?: string; port: number }[];
}

const unavailable = (message: string) => failure(503, "ServiceUnavailable", message);

/** The service port's name for "<name>:<port>" (port a name, a number, or absent). */
function portName(service: Json, svcName: string, port: string): string {
  if (!/^\d+$/.test(port)) return port;
  const ports = ((service.spec as Json | undefined)?.ports ?? []) as {
    name?: string;
    port: number;
  }[];
  const found = ports.find((p) => p.port === Number(port));
  if (!found) throw unavailable(`no service port ${port} found for service "${svcName}"`);
  return found.name ?? "";
}

/** host:port of a ready endpoint of the Service's port, or a 503 Status. */
export function resolveServiceEndpoint(
  store: ObjectStore,
  namespace: string,
  id: string,
): { host: string; port: number } {
  const [svcName, port = "", ...extra] = id.split(":");
  if (!svcName || extra.length > 0) {
    throw failure(400, "BadRequest", `invalid service request "${id}"`);
  }
  const service = store.getIn(resourceFor("", "v1", "services")!, namespace, svcName) as Json;
  const name = portName(service, svcName, port);
  const eps = store.getIn(resourceFor("", "v1", "endpoints")!, namespace, svcName) as Json;
  const subsets = (eps.subsets ?? []) as EndpointSubset[];
  const candidates = subsets.flatMap((ss) => {
    const p = (ss.ports ?? []).find((x) => (x.name ?? "") === name);
    return p ? (ss.addresses ?? []).map((a) => ({ host: a.ip, port: p.port })) : [];
  });
  if (candidates.length === 0) {
    throw unavailable(`no endpoints available for service "${svcName}"`);
  }
  return candidates[Math.floor(Math.random() * candidates.length)]!;
}

/** Forwards a GET to the endpoint and passes its answer back. */
export function proxyToService(
  store: ObjectStore,
  res: ServerResponse,
  namespace: string,
  id: string,
  rest: string,
  search: string,
): Promise<void> {
  const target = resolveServiceEndpoint(store, namespace, id);
  return new Promise((resolve) => {
    const out = request(
      {
        host: target.host,
        port: target.port,
        path: `${rest || "/"}${search}`,
        method: "GET",
        timeout: 10_000,
      },
      (answer) => {
        const headers: Record<string, string> = {};
        const type = answer.headers["content-type"];
        if (type) headers["Content-Type"] = type;
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
        answer.on("end", resolve);
        answer.on("error", () => resolve());
      },
    );
    out.on("timeout", () => out.destroy(new Error("timeout")));
    out.on("error", (e) => {
      const s = unavailable(`error trying to reach service: ${e.message}`);
      if (!res.headersSent) {
        res.writeHead(503, { "Content-Type": "application/json" });
        res.end(JSON.stringify(s.status));
      } else res.destroy();
      resolve();
    });
    out.end();
  });
}
