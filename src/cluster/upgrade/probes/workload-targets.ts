import { isAlreadyExists } from "../../../kube/errors.js";
import { poll } from "../../../kube/poll.js";
import type { KubeClient, KubeObject, RawResponse } from "../../../kube/types.js";
import {
  CANARY_NAME,
  CANARY_PATH,
  canaryObjects,
  serviceProxyPath,
} from "../../../manifests/probe-canary.js";
import { ONE_ATTEMPT, PROBE_NAMESPACE } from "./api-targets.js";
import { PathUnavailable, type ProbeTarget } from "./prober.js";
import type { AvailabilityChange } from "./timeline.js";

// What the workload probes do (kubeadm-upgrade.md §5.5) over admin.conf's client: the canary's
// objects created in kubeforge's probe namespace (removed with it), what the NodePort path needs
// to know (the allocated port, the Nodes' addresses: node-port.ts asks them), a GET through the
// API server's service proxy to the canary's Service (what the runner can reach wherever it
// reaches the API, the path when no node answers on the NodePort), and the Deployment's
// available replicas read alongside.

interface DeploymentObject extends KubeObject {
  spec?: { replicas?: number };
  status?: { availableReplicas?: number; observedGeneration?: number };
  metadata: KubeObject["metadata"] & { generation?: number };
}

const deploymentRef = (namespace: string, name: string) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  namespace,
  name,
});

export interface Availability {
  desired: number;
  available: number;
}

/** The Deployment's desired and available replicas (spec.replicas defaults to 1). */
export async function availabilityOf(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Availability> {
  const d = await client.get<DeploymentObject>(deploymentRef(namespace, name));
  return { desired: d.spec?.replicas ?? 1, available: d.status?.availableReplicas ?? 0 };
}

/** The canary's Deployment, budget and Service (kept when they exist); the namespace exists. */
export async function createCanary(client: KubeClient, replicas: number): Promise<void> {
  for (const obj of canaryObjects(PROBE_NAMESPACE, replicas)) {
    await client.create(obj).catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  }
}

/** Waits until every replica of the Deployment is available; the timeout names what it saw. */
export async function waitAvailable(
  client: KubeClient,
  namespace: string,
  name: string,
  timeoutMs: number,
  intervalMs = 1_000,
): Promise<void> {
  let seen: Availability | undefined;
  await poll(
    async () => {
      seen = await availabilityOf(client, namespace, name);
      return seen.available >= seen.desired ? true : undefined;
    },
    { timeoutMs, intervalMs, what: `the Deployment ${namespace}/${name} to be available` },
  ).catch((e: unknown) => {
    const last = seen ? `${seen.available} of ${seen.desired} replicas available` : "nothing";
    throw new Error(`${(e as Error).message} (last seen: ${last})`, { cause: e });
  });
}

/** A body's last line, cut to 200 characters: what an error message quotes of it. */
export const lastLine = (text: string | undefined): string =>
  (text ?? "").trim().split("\n").pop()?.slice(0, 200) ?? "";

/** What a service proxy answer other than 200 says: its status and the body's last line. */
export function proxyAnswerError(res: { status: number; body: string }): Error {
  const said = lastLine(res.body);
  return new Error(`the service proxy answered ${res.status}${said ? `: ${said}` : ""}`);
}

/**
 * The service proxy's own answers when the workload fails it: 503 "no endpoints available for
 * service" with no Pod ready (k8s pkg/registry/core/service/storage ResourceLocation) and 503
 * "error trying to reach service: …" when the Pod chosen did not answer
 * (apimachinery/pkg/util/proxy/upgradeaware.go).
 */
const WORKLOAD_FAILED = /no endpoints available for service|error trying to reach service/;

/** Statuses an API server answers of its own when it cannot serve (etcd down, overloaded, starting). */
const API_SERVER_ERRORS = new Set([429, 500, 502, 503, 504]);

/** The message of a body that is an API Status object, or undefined. */
function statusMessage(body: string): string | undefined {
  try {
    const o = JSON.parse(body) as { kind?: unknown; message?: unknown };
    if (o.kind !== "Status") return undefined;
    return typeof o.message === "string" ? o.message : "";
  } catch {
    return undefined;
  }
}

/**
 * A GET through the API server's service proxy: the answer when it says something about the
 * workload — the workload's own answer, or the proxy's failure to reach it. PathUnavailable when
 * the API server could not proxy at all: not reached (refused, reset, dropped), or answering an
 * error Status of its own.
 */
export async function throughServiceProxy(client: KubeClient, path: string): Promise<RawResponse> {
  let res: RawResponse;
  try {
    res = await client.getRaw(path, ONE_ATTEMPT);
  } catch (e) {
    // No answer in time: the API server may be the one waiting, on a Pod that hangs. That cannot
    // be told apart, so it is the workload's failed request (the prober's timeout would be too).
    if ((e as { networkCode?: string }).networkCode === "ETIMEDOUT") throw e;
    const why = (e as Error).message.split("\n")[0];
    throw new PathUnavailable(`the API server did not answer: ${why}`, { cause: e });
  }
  const own = API_SERVER_ERRORS.has(res.status) ? statusMessage(res.body) : undefined;
  if (own !== undefined && !WORKLOAD_FAILED.test(own)) {
    throw new PathUnavailable(`the API server could not proxy: ${res.status} ${own}`);
  }
  return res;
}

/** A GET through the API server's service proxy, as a probe target: 200 is up. */
export function serviceProxyTarget(client: KubeClient, name: string, path: string): ProbeTarget {
  return {
    name,
    kind: "workload",
    url: path,
    checks: `GET ${path}`,
    check: async () => {
      const res = await throughServiceProxy(client, path);
      if (res.status !== 200) throw proxyAnswerError(res);
    },
  };
}

/** The canary's Service, through the API server's proxy: 200 is up. */
export function canaryTarget(client: KubeClient): ProbeTarget {
  const path = serviceProxyPath(PROBE_NAMESPACE, CANARY_NAME, "http", CANARY_PATH);
  return serviceProxyTarget(client, CANARY_NAME, path);
}

interface ServiceObject extends KubeObject {
  spec?: { ports?: { name?: string; nodePort?: number }[] };
}

/** The node port the API server allocated to the canary Service's port, if any. */
export async function canaryNodePort(client: KubeClient): Promise<number | undefined> {
  const svc = await client.get<ServiceObject>({
    apiVersion: "v1",
    kind: "Service",
    namespace: PROBE_NAMESPACE,
    name: CANARY_NAME,
  });
  return svc.spec?.ports?.find((p) => p.name === "http")?.nodePort;
}

interface NodeObject extends KubeObject {
  status?: { addresses?: { type: string; address: string }[] };
}

/** Every Node's InternalIP by name: the address kube-proxy serves NodePorts on. */
export async function internalIPs(client: KubeClient): Promise<Map<string, string>> {
  const nodes = await client.list<NodeObject>("v1", "Node");
  return new Map(
    nodes.flatMap((n) => {
      const ip = n.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
      return ip ? [[n.metadata.name, ip] as const] : [];
    }),
  );
}

/**
 * A sampler of a Deployment's available replicas: a ProbeTarget whose samples record each
 * change (the first sample always), so the report shows availability over time in a few lines.
 */
export function availabilityRecorder(
  client: KubeClient,
  namespace: string,
  name: string,
  now: () => number,
): { target: ProbeTarget; changes: AvailabilityChange[] } {
  const changes: AvailabilityChange[] = [];
  const target: ProbeTarget = {
    name,
    kind: "workload",
    url: `${namespace}/${name}`,
    checks: `GET Deployment ${namespace}/${name}`,
    check: async () => {
      const at = now();
      const a = await availabilityOf(client, namespace, name);
      const last = changes.at(-1);
      if (!last || last.available !== a.available || last.desired !== a.desired) {
        changes.push({ at: new Date(at).toISOString(), ...a });
      }
    },
  };
  return { target, changes };
}
