import { connect, createServer, type Server, type Socket } from "node:net";
import { SimApiClient } from "./api-client.js";
import type { HostFiles } from "./host-files.js";
import { clientCredentials, loadClientConfig } from "./kubeconfig.js";
import { sleep } from "./timing.js";

// SIMULATION (test double). kube-proxy's NodePorts, and nothing else of it: for every Service of
// type NodePort or LoadBalancer, each port's nodePort is served on the node's addresses, and each
// connection is forwarded to a random ready endpoint of that Service port (externalTrafficPolicy
// Cluster: any node forwards to an endpoint anywhere); a Service port without a ready endpoint is
// refused — not listened on, so a client's connect is refused as kube-proxy's REJECT makes it.
// It runs in the container runtime (runtime.ts), as the kube-proxy DaemonSet's container does
// under containerd: a kubelet restart does not take NodePorts down.
// k8s: pkg/proxy/iptables/proxier.go syncProxyRules (a Service port with no endpoints gets a
// filter-table REJECT, "<svc> has no endpoints", for its nodePort on local addresses:
// KUBE-EXTERNAL-SERVICES with --dst-type LOCAL; otherwise KUBE-NODEPORTS jumps to the Service's
// chain, which picks an endpoint with -m statistic --mode random; externalTrafficPolicy Cluster
// takes the cluster-wide endpoints). What it programmed stays in the kernel while the API server
// is away: here the last Endpoints read serve.
// SIMULATION LIMITS: a userspace forwarder on the node's InternalIPs, not iptables (no 127.0.0.1
// NodePorts, no source NAT, no conntrack); it reads the API with the node's kubelet.conf (the
// Node authorizer lets a node list Services and get Endpoints, plugin/pkg/auth/authorizer/rbac/
// bootstrappolicy/policy.go NodeRules) instead of the kube-proxy ServiceAccount bound to
// system:node-proxier, and polls (every second, and the Service's Endpoints again on each
// connection, falling back to the last read when the API server does not answer within 500 ms)
// instead of watching EndpointSlices; TCP only; externalTrafficPolicy Local is not honoured.

export interface KubeProxyOptions {
  files: HostFiles;
  /** The kubeconfig it reads the API with: the node's kubelet.conf (host path). */
  kubeconfig: string;
  /** The node's InternalIPs: where NodePorts are served. */
  nodeIPs: string[];
  log: (line: string) => void;
  /** How often Services and Endpoints are read. */
  syncMs: number;
}

/** One Service port served on a nodePort. */
interface PortRule {
  namespace: string;
  name: string;
  /** The Service port's name ("" when unnamed): the Endpoints port of the same name. */
  portName: string;
  nodePort: number;
}

interface ServiceItem {
  metadata: { name: string; namespace: string };
  spec?: { type?: string; ports?: { name?: string; nodePort?: number; protocol?: string }[] };
}

interface EndpointsItem {
  subsets?: { addresses?: { ip: string }[]; ports?: { name?: string; port: number }[] }[];
}

const ENDPOINTS_READ_MS = 500;

/** The NodePort rules of a Service list (type NodePort or LoadBalancer, TCP ports with a nodePort). */
export function nodePortRules(services: readonly ServiceItem[]): PortRule[] {
  return services.flatMap((s) =>
    s.spec?.type === "NodePort" || s.spec?.type === "LoadBalancer"
      ? (s.spec.ports ?? []).flatMap((p) =>
          p.nodePort && (p.protocol ?? "TCP") === "TCP"
            ? [{ ...s.metadata, portName: p.name ?? "", nodePort: p.nodePort }]
            : [],
        )
      : [],
  );
}

/** Ready host:port pairs of the Endpoints for the Service port named `portName`. */
export function readyEndpoints(
  eps: EndpointsItem | undefined,
  portName: string,
): { host: string; port: number }[] {
  return (eps?.subsets ?? []).flatMap((ss) => {
    const p = (ss.ports ?? []).find((x) => (x.name ?? "") === portName);
    return p ? (ss.addresses ?? []).map((a) => ({ host: a.ip, port: p.port })) : [];
  });
}

const ruleKey = (r: PortRule) => `${r.namespace}/${r.name}:${r.portName}`;
const endpointsPath = (r: PortRule) =>
  `/api/v1/namespaces/${encodeURIComponent(r.namespace)}/endpoints/${encodeURIComponent(r.name)}`;

interface Listener {
  server: Server;
  sockets: Set<Socket>;
}

export class SimulatedKubeProxy {
  private readonly abort = new AbortController();
  private readonly listeners = new Map<string, Listener>();
  private readonly endpoints = new Map<string, EndpointsItem | undefined>();
  private readonly failedToListen = new Set<string>();
  private readonly loop: Promise<void>;

  constructor(readonly o: KubeProxyOptions) {
    this.loop = this.run();
  }

  /** Stops serving every NodePort and ends the connections in flight. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await Promise.all([...this.listeners.keys()].map((k) => this.close(k)));
  }

  private async client(): Promise<SimApiClient | undefined> {
    const cfg = await loadClientConfig(this.o.files, this.o.kubeconfig);
    if (!cfg) return undefined;
    const creds = await clientCredentials(this.o.files, cfg);
    return new SimApiClient(cfg, creds ?? {}, "the simulated kube-proxy");
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        await this.syncOnce();
      } catch (e) {
        // The API server away: what is served stays served.
        this.o.log(`[simulated kube-proxy] sync failed: ${(e as Error).message}`);
      }
      await sleep(this.o.syncMs, this.abort.signal);
    }
  }

  private async syncOnce(): Promise<void> {
    const client = await this.client();
    if (!client) return;
    const list = await client.call<{ items?: ServiceItem[] }>("GET", "/api/v1/services");
    const rules = nodePortRules(list.items ?? []);
    const wanted = new Map<string, PortRule>();
    for (const r of rules) {
      this.endpoints.set(ruleKey(r), await this.readEndpoints(client, r));
      if (readyEndpoints(this.endpoints.get(ruleKey(r)), r.portName).length === 0) continue;
      for (const ip of this.o.nodeIPs) wanted.set(`${ip}:${r.nodePort}`, r);
    }
    if (this.abort.signal.aborted) return;
    for (const key of [...this.listeners.keys()]) if (!wanted.has(key)) await this.close(key);
    for (const [key, r] of wanted) if (!this.listeners.has(key)) await this.listen(key, r);
  }

  private async readEndpoints(client: SimApiClient, r: PortRule) {
    const res = await client.request("GET", endpointsPath(r));
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`GET ${endpointsPath(r)}: ${res.status}`);
    return res.json as EndpointsItem;
  }

  private async listen(key: string, r: PortRule): Promise<void> {
    const sockets = new Set<Socket>();
    const server = createServer((s) => this.forward(s, r, sockets));
    const ip = key.slice(0, key.lastIndexOf(":"));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(r.nodePort, ip, () => resolve());
      });
      this.failedToListen.delete(key);
      this.listeners.set(key, { server, sockets });
      this.o.log(`[simulated kube-proxy] NodePort ${key} serves ${ruleKey(r)}`);
    } catch (e) {
      // Said once; tried again on the next sync.
      if (!this.failedToListen.has(key)) {
        this.failedToListen.add(key);
        this.o.log(`[simulated kube-proxy] cannot serve NodePort ${key}: ${(e as Error).message}`);
      }
    }
  }

  private async close(key: string): Promise<void> {
    const l = this.listeners.get(key);
    if (!l) return;
    this.listeners.delete(key);
    for (const s of l.sockets) s.destroy();
    await new Promise<void>((resolve) => l.server.close(() => resolve()));
    this.o.log(`[simulated kube-proxy] NodePort ${key} no longer served`);
  }

  /** The Service's Endpoints read now, or the last read when the API server does not answer. */
  private async currentEndpoints(r: PortRule): Promise<EndpointsItem | undefined> {
    const read = (async () => {
      const client = await this.client();
      return client ? this.readEndpoints(client, r) : this.endpoints.get(ruleKey(r));
    })();
    const fallback = sleep(ENDPOINTS_READ_MS).then(() => this.endpoints.get(ruleKey(r)));
    try {
      const eps = await Promise.race([read, fallback]);
      this.endpoints.set(ruleKey(r), eps);
      return eps;
    } catch {
      return this.endpoints.get(ruleKey(r));
    } finally {
      read.catch(() => undefined);
    }
  }

  /** One connection to a random ready endpoint; reset when there is none or it cannot be reached. */
  private forward(client: Socket, r: PortRule, sockets: Set<Socket>): void {
    sockets.add(client);
    client.once("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    client.pause();
    void this.currentEndpoints(r).then((eps) => {
      const candidates = readyEndpoints(eps, r.portName);
      const target = candidates[Math.floor(Math.random() * candidates.length)];
      if (!target || client.destroyed) return void client.resetAndDestroy();
      const upstream = connect(target.port, target.host);
      sockets.add(upstream);
      upstream.once("close", () => sockets.delete(upstream));
      // The endpoint refused or went away: the client's connection is reset (an ended one has
      // been ended by the pipe already).
      upstream.on("error", () => client.resetAndDestroy());
      client.once("close", () => upstream.destroy());
      upstream.once("connect", () => {
        client.pipe(upstream).pipe(client);
        client.resume();
      });
    });
  }
}

/**
 * The kube-proxy of a container runtime: started with the first sync that says where the node's
 * kubeconfig and addresses are, started anew when they change, stopped with the runtime.
 */
export class KubeProxyHolder {
  private running?: { spec: string; proxy: SimulatedKubeProxy };

  constructor(private readonly base: Pick<KubeProxyOptions, "files" | "log" | "syncMs">) {}

  async ensure(spec: Pick<KubeProxyOptions, "kubeconfig" | "nodeIPs"> | undefined): Promise<void> {
    if (!spec) return;
    const text = JSON.stringify(spec);
    if (this.running?.spec === text) return;
    await this.stop();
    this.running = { spec: text, proxy: new SimulatedKubeProxy({ ...this.base, ...spec }) };
  }

  async stop(): Promise<void> {
    const r = this.running;
    this.running = undefined;
    await r?.proxy.stop();
  }
}
