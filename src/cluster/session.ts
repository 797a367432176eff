import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import { NodeClusterAccess } from "../kube/access.js";
import type { KubeClient } from "../kube/types.js";
import type { KubeConfig } from "../kubeconfig/types.js";
import { fleet, hostReporter } from "../remote/fleet.js";
import { closeHosts, type Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";
import { parseAdminConf } from "./admin-kubeconfig.js";
import { isDockerNode } from "./docker-nodes.js";
import { dualStackPrimary } from "../config/cluster/shortcuts.js";
import { describeInventory, inspectHost, type HostInventory } from "./inventory.js";
import type { ClusterPorts } from "./ports.js";

// The hosts of one Cluster file as a cluster workflow sees them: connected once, inspected once,
// every line host-prefixed, work on one node named by it, and the cluster's API through the
// first control plane's admin.conf. `up` builds on it, and so will the cluster-level upgrade:
// what each does on the hosts is its own, the way to them is this.

export const ADMIN_CONF = "/etc/kubernetes/admin.conf";

export class ClusterSession {
  private readonly connected = new Map<string, Promise<Host>>();
  private readonly ready = new Map<string, Host>();
  private inspected: Promise<HostInventory[]> | undefined;
  private admin: Promise<KubeClient> | undefined;

  constructor(
    readonly spec: ClusterSpec,
    readonly ports: ClusterPorts,
    readonly reporter: Reporter,
  ) {}

  /** The node `init` runs on: the first control plane of the Cluster file. */
  get firstControlPlane(): ClusterNodeSpec {
    return this.spec.nodes.find((n) => n.role === "control-plane")!;
  }

  /** The node's own reporter: every line prefixed with its name. */
  nodeReporter(name: string): Reporter {
    return hostReporter(this.reporter, name);
  }

  /**
   * The node's host, connected on first use (a failed connection is tried again next time);
   * `open` instead of ports.connect, e.g. to create a docker node's container.
   */
  host(name: string, open = this.ports.connect): Promise<Host> {
    let host = this.connected.get(name);
    if (!host) {
      const node = this.spec.nodes.find((n) => n.name === name);
      if (!node) throw new Error(`no node ${name} in the cluster "${this.spec.name}"`);
      host = open(node);
      host.then(
        (h) => this.ready.set(name, h),
        () => this.connected.delete(name),
      );
      this.connected.set(name, host);
    }
    return host;
  }

  /** A host connected already (after connectAll or host()); throws naming one that is not. */
  hostOf(name: string): Host {
    const host = this.ready.get(name);
    if (!host) throw new Error(`${name} is not connected`);
    return host;
  }

  /** Creates (or starts) every docker node's container, in parallel, and keeps it open. */
  async createContainers(): Promise<void> {
    const create = this.ports.createContainer;
    if (!create) return;
    const docker = this.spec.nodes.filter(isDockerNode);
    await fleet(
      docker,
      (n) => n.name,
      async (node) => {
        await this.host(node.name, create);
        this.nodeReporter(node.name).info("[containers] running");
      },
      { concurrency: Math.max(this.spec.concurrency, docker.length) },
    );
  }

  /** Connects every host in parallel; fails naming every host it could not reach. */
  async connectAll(): Promise<void> {
    const fresh = this.spec.nodes.filter((n) => !this.connected.has(n.name));
    await fleet(
      this.spec.nodes,
      (n) => n.name,
      async (node) => {
        await this.host(node.name);
        if (fresh.includes(node)) this.nodeReporter(node.name).info("[connect] connected");
      },
      { concurrency: Math.max(this.spec.concurrency, this.spec.nodes.length) },
    );
  }

  /** The next inventory() inspects every host again (a workflow changed what they hold). */
  reinspect(): void {
    this.inspected = undefined;
  }

  /** What every host is and holds, in the Cluster file's order: inspected once. */
  inventory(): Promise<HostInventory[]> {
    this.inspected ??= (async () => {
      await this.connectAll();
      return fleet(
        this.spec.nodes,
        (n) => n.name,
        async (node) => {
          const inv = await inspectHost(await this.host(node.name), node, {
            cluster: this.spec.name,
            dualStackPrimary: dualStackPrimary(this.spec.networking),
          });
          this.nodeReporter(node.name).info(`[facts] ${describeInventory(inv)}`);
          return inv;
        },
        { concurrency: Math.max(this.spec.concurrency, this.spec.nodes.length) },
      );
    })();
    return this.inspected;
  }

  /** Work on one node, through fleet like any other: its error names the node. */
  async onNode<T>(name: string, op: () => Promise<T>): Promise<T> {
    const [result] = await fleet([name], (n) => n, op);
    return result!;
  }

  /** Work on one node in a log group of its own ("join cp-2"). */
  nodeGroup<T>(title: string, name: string, op: () => Promise<T>): Promise<T> {
    return this.reporter.group(`${title} ${name}`, () => this.onNode(name, op));
  }

  /** admin.conf of the first control plane, as it is on the node. */
  async adminConf(): Promise<KubeConfig> {
    const first = this.firstControlPlane.name;
    return parseAdminConf(await (await this.host(first)).readFile(ADMIN_CONF), first);
  }

  /** The cluster's API as admin.conf on the first control plane reaches it (from this process). */
  adminClient(): Promise<KubeClient> {
    this.admin ??= this.host(this.firstControlPlane.name).then((h) =>
      new NodeClusterAccess(h).clientFor(ADMIN_CONF),
    );
    this.admin.catch(() => (this.admin = undefined));
    return this.admin;
  }

  async close(): Promise<void> {
    const hosts = await Promise.allSettled(this.connected.values());
    await closeHosts(hosts.flatMap((h) => (h.status === "fulfilled" ? [h.value] : [])));
  }
}
