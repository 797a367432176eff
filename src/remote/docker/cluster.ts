import { existsSync, readFileSync } from "node:fs";
import type { ClusterNodeSpec, ClusterSpec } from "../../config/cluster/types.js";
import {
  capabilitiesMissing,
  nodeContainerBody,
  nodeLabels,
} from "../../config/docker/container.js";
import {
  DEFAULT_BASE_IMAGE,
  LABELS,
  candidateSubnets,
  containerName,
  networkName,
  nodeAddresses,
  volumeName,
} from "../../config/docker/network-plan.js";
import {
  REGISTRY_CONTAINER_PORT,
  REGISTRY_IMAGE,
  registryContainerBody,
  registryContainerName,
} from "../../config/local-registry.js";
import { pause } from "../interruption.js";
import { DockerEngine, EngineError } from "./engine.js";
import { DockerHost } from "./host.js";
import { ensureNodeImage } from "./image.js";

// A Cluster's docker nodes on the engine: one user-defined bridge network per cluster (stable
// addresses from the Cluster's node order, every node's name in /etc/hosts), a volume for each
// node's /var, and the node containers, each labelled with the cluster's name. `up` creates
// what is missing and starts what is stopped; `down` removes by label exactly what kubeforge
// made for this cluster, and nothing else.

/** The API server port published on the runner's loopback (kubeadm's default bindPort). */
export const API_SERVER_PORT = 6443;
/** How long systemd may take to reach a running system in a new node. */
const BOOT_TIMEOUT_MS = 120_000;

export interface DockerClusterOptions {
  log?: (line: string) => void;
}

interface Network {
  name: string;
  addresses: Map<string, string>;
}

/** The docker nodes of a Cluster, in its order. */
export function dockerNodesOf(spec: ClusterSpec): ClusterNodeSpec[] {
  return spec.nodes.filter((n) => n.host === "docker");
}

/** How this engine runs node containers: privileged, or the capabilities it grants. */
interface Privileges {
  privileged: boolean;
  capDrop: string[];
}

export class DockerCluster {
  private network: Promise<Network> | undefined;
  private image: Promise<string> | undefined;
  private privileges: Promise<Privileges> | undefined;
  private readonly log: (line: string) => void;

  constructor(
    readonly engine: DockerEngine,
    readonly spec: ClusterSpec,
    opts: DockerClusterOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
  }

  static async connect(spec: ClusterSpec, opts: DockerClusterOptions = {}): Promise<DockerCluster> {
    const engine = await DockerEngine.connect();
    await engine.version();
    return new DockerCluster(engine, spec, opts);
  }

  /** The node's container, created and started when missing or stopped, systemd up. */
  async ensureNode(node: ClusterNodeSpec): Promise<DockerHost> {
    const name = containerName(this.spec.name, node.name);
    const existing = await this.engine.inspectContainer(name);
    if (existing) {
      this.checkOwned(node, existing.Config.Labels ?? {});
      if (!existing.State.Running) {
        this.log(`[docker] ${node.name}: starting the stopped container ${name}`);
        await this.engine.startContainer(existing.Id);
      }
    } else {
      await this.create(node, name);
    }
    const host = new DockerHost(this.engine, name, node.name, this.log);
    await waitForSystemd(host, BOOT_TIMEOUT_MS);
    return host;
  }

  /** The node's container as it is (down, diagnostics): an error when it does not run. */
  async attach(node: ClusterNodeSpec): Promise<DockerHost> {
    const name = containerName(this.spec.name, node.name);
    const existing = await this.engine.inspectContainer(name);
    if (!existing) throw new Error(`${node.name}: the container ${name} does not exist`);
    this.checkOwned(node, existing.Config.Labels ?? {});
    if (!existing.State.Running) {
      throw new Error(
        `${node.name}: the container ${name} is not running (${existing.State.Status})`,
      );
    }
    return new DockerHost(this.engine, name, node.name, this.log);
  }

  /** The runner's loopback port the node's API server is published on, if it is. */
  async publishedApiServer(
    node: ClusterNodeSpec,
  ): Promise<{ host: string; port: number } | undefined> {
    const info = await this.engine.inspectContainer(containerName(this.spec.name, node.name));
    const binding = info?.NetworkSettings.Ports?.[`${API_SERVER_PORT}/tcp`]?.[0];
    return binding
      ? { host: binding.HostIp || "127.0.0.1", port: Number(binding.HostPort) }
      : undefined;
  }

  /**
   * The local registry's `registry:2` container (kind's "Local Registry" recipe): on the
   * cluster's network when it has docker nodes, its port published on the runner at `hostIp`.
   * Started when stopped; one on another port is replaced. Returns its name.
   */
  async ensureRegistry(port: number, hostIp: string): Promise<string> {
    const name = registryContainerName(this.spec.name);
    const existing = await this.engine.inspectContainer(name);
    if (existing && existing.Config.Labels?.[LABELS.cluster] !== this.spec.name) {
      throw new Error(
        `registry: the container ${name} exists but kubeforge did not make it for cluster "${this.spec.name}"`,
      );
    }
    const published =
      existing?.NetworkSettings.Ports?.[`${REGISTRY_CONTAINER_PORT}/tcp`]?.[0]?.HostPort;
    if (existing && existing.State.Running && published === String(port)) return name;
    if (existing) await this.engine.removeContainer(existing.Id);
    const network =
      dockerNodesOf(this.spec).length > 0
        ? (await (this.network ??= this.ensureNetwork())).name
        : undefined;
    if (!(await this.engine.inspectImage(REGISTRY_IMAGE))) {
      this.log(`[registry] pulling ${REGISTRY_IMAGE}`);
      await this.engine.pullImage(REGISTRY_IMAGE);
    }
    const body = registryContainerBody({
      cluster: this.spec.name,
      port,
      hostIp,
      ...(network ? { network } : {}),
    });
    await this.engine.startContainer(await this.engine.createContainer(name, body));
    this.log(`[registry] container ${name} (${REGISTRY_IMAGE}) on ${hostIp}:${port}`);
    return name;
  }

  private checkOwned(node: ClusterNodeSpec, labels: Record<string, string>): void {
    if (labels[LABELS.cluster] !== this.spec.name || labels[LABELS.node] !== node.name) {
      throw new Error(
        `${node.name}: the container ${containerName(this.spec.name, node.name)} exists but kubeforge did not make it for cluster "${this.spec.name}"; remove it or rename the cluster`,
      );
    }
  }

  private async create(node: ClusterNodeSpec, name: string): Promise<void> {
    const [network, image, privileges] = await Promise.all([
      (this.network ??= this.ensureNetwork()),
      (this.image ??= this.ensureImage()),
      (this.privileges ??= this.probePrivileges()),
    ]);
    await this.engine.createVolume({
      Name: volumeName(this.spec.name, node.name),
      Labels: nodeLabels(this.spec.name, node),
    });
    const body = nodeContainerBody({
      cluster: this.spec.name,
      node,
      image,
      network: network.name,
      address: network.addresses.get(node.name)!,
      hosts: [...network.addresses].map(([n, address]) => ({ name: n, address })),
      ...privileges,
      libModules: existsSync("/lib/modules"),
      ...(node.role === "control-plane" ? { apiServerPort: API_SERVER_PORT } : {}),
    });
    const id = await this.engine.createContainer(name, body);
    this.log(
      `[docker] ${node.name}: container ${name} (${image}, ${network.addresses.get(node.name)}${privileges.privileged ? ", privileged" : `, every capability but ${privileges.capDrop.join(", ") || "none"}`})`,
    );
    await this.engine.startContainer(id);
  }

  /**
   * Privileged where the engine allows it. An engine whose own bounding set lacks a capability
   * refuses `--privileged` ("unable to apply caps"); such an engine runs nodes with every other
   * capability. The engine is the runner's, so the runner's bounding set is the engine's.
   */
  private probePrivileges(): Promise<Privileges> {
    const status = existsSync("/proc/self/status") ? readFileSync("/proc/self/status", "utf8") : "";
    const capBnd = /^CapBnd:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    const missing = capBnd ? capabilitiesMissing(capBnd) : [];
    if (missing.length > 0) {
      this.log(
        `[docker] the engine's machine cannot grant ${missing.join(", ")}: nodes get every other capability instead of --privileged`,
      );
    }
    return Promise.resolve(
      missing.length === 0
        ? { privileged: true, capDrop: [] }
        : { privileged: false, capDrop: missing },
    );
  }

  private async ensureImage(): Promise<string> {
    const docker = this.spec.docker ?? { baseImage: DEFAULT_BASE_IMAGE };
    if (docker.image !== undefined) {
      if (!(await this.engine.inspectImage(docker.image))) {
        this.log(`[docker] pulling the node image ${docker.image}`);
        await this.engine.pullImage(docker.image).catch((e: unknown) => {
          throw new Error(
            `the node image ${docker.image} is not on the engine and cannot be pulled: ${(e as Error).message}`,
            { cause: e },
          );
        });
      }
      return docker.image;
    }
    return ensureNodeImage(this.engine, docker.baseImage, this.log);
  }

  private async ensureNetwork(): Promise<Network> {
    const name = networkName(this.spec.name);
    const nodes = dockerNodesOf(this.spec);
    const plan = (subnet: string): Network => {
      const addresses = nodeAddresses(subnet, nodes.length);
      if (!addresses)
        throw new Error(`the network ${name} (${subnet}) is too small for ${nodes.length} nodes`);
      return { name, addresses: new Map(nodes.map((n, i) => [n.name, addresses[i]!])) };
    };
    const existing = await this.engine.inspectNetwork(name);
    if (existing) {
      if (existing.Labels?.[LABELS.cluster] !== this.spec.name) {
        throw new Error(
          `the Docker network ${name} exists but kubeforge did not make it for cluster "${this.spec.name}"`,
        );
      }
      const subnet = existing.IPAM?.Config?.[0]?.Subnet;
      if (!subnet) throw new Error(`the Docker network ${name} has no subnet`);
      return plan(subnet);
    }
    const wanted = this.spec.docker?.subnet;
    const candidates = wanted ? [wanted] : candidateSubnets(this.spec.name);
    for (const subnet of candidates) {
      try {
        await this.engine.createNetwork({
          Name: name,
          Driver: "bridge",
          CheckDuplicate: true,
          IPAM: { Config: [{ Subnet: subnet }] },
          Labels: { [LABELS.cluster]: this.spec.name },
        });
        this.log(`[docker] network ${name} (${subnet})`);
        return plan(subnet);
      } catch (e) {
        // Another network (or a route of the machine) uses the subnet: the next one.
        const overlaps = e instanceof EngineError && /overlap|in use/i.test(e.message);
        if (!overlaps || wanted) throw e;
      }
    }
    throw new Error(`no free /24 in 172.30.0.0/16 for the network ${name}; set docker.subnet`);
  }

  /** Removes the cluster's containers, volumes and network (found by label); returns their names. */
  async remove(): Promise<string[]> {
    const label = `${LABELS.cluster}=${this.spec.name}`;
    const removed: string[] = [];
    for (const c of await this.engine.listContainers([label])) {
      await this.engine.removeContainer(c.Id);
      removed.push(`container ${c.Names[0]?.replace(/^\//, "") ?? c.Id}`);
    }
    for (const v of await this.engine.listVolumes([label])) {
      await this.engine.removeVolume(v.Name);
      removed.push(`volume ${v.Name}`);
    }
    for (const n of await this.engine.listNetworks([label])) {
      await this.engine.removeNetwork(n.Id);
      removed.push(`network ${n.Name}`);
    }
    return removed;
  }

  /** What remove() would remove. */
  async owned(): Promise<string[]> {
    const label = `${LABELS.cluster}=${this.spec.name}`;
    return [
      ...(await this.engine.listContainers([label])).map(
        (c) => `container ${c.Names[0]?.replace(/^\//, "") ?? c.Id}`,
      ),
      ...(await this.engine.listVolumes([label])).map((v) => `volume ${v.Name}`),
      ...(await this.engine.listNetworks([label])).map((n) => `network ${n.Name}`),
    ];
  }
}

/** Waits until systemd in the container reports a running (or degraded) system. */
async function waitForSystemd(host: DockerHost, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let state = "";
  while (Date.now() < deadline) {
    const r = await host
      .exec(["systemctl", "is-system-running"], { timeoutMs: 15_000 })
      .catch((e: unknown) => ({ code: 1, stdout: "", stderr: (e as Error).message }));
    state = (r.stdout.trim() || r.stderr.trim()).split("\n").at(-1) ?? "";
    if (state === "running" || state === "degraded") return;
    // An interrupted run stops waiting here (each exec above fails at once then).
    await pause(500);
  }
  throw new Error(
    `${host.label}: systemd did not come up within ${timeoutMs / 1000}s (systemctl is-system-running: ${state || "no answer"}); see "docker logs ${host.container}"`,
  );
}
