import { parseGoDuration } from "../../config/duration.js";
import type { ConfigDocuments } from "../../config/types.js";
import { caPinsOf } from "../../kubeconfig/ca-pins.js";
import type { KubeConfig } from "../../kubeconfig/types.js";
import type { KubeClient } from "../../kube/types.js";
import { writeRunnerKubeConfig } from "../admin-kubeconfig.js";
import type { HostInventory } from "../inventory.js";
import { writeMarker, type NodeMarker } from "../node-state.js";
import { waitForCluster } from "../readiness.js";
import { runnerServer } from "../runner-server.js";
import { ADMIN_CONF } from "../session.js";
import type { ClusterView, Settled, UpData, UpWork } from "./data.js";
import { applyNodeLabels } from "./labels.js";
import { installLocalEndpoint } from "./local-endpoint.js";
import {
  preflightInit,
  preflightJoin,
  prepareNodeInit,
  prepareNodeJoin,
  runInit,
  runJoin,
  type InitWork,
  type JoinWork,
  type NodeRunResult,
  type NodeTarget,
  type PreflightPass,
} from "./node-workflows.js";
import { joinDocumentsOf } from "./plan.js";
import { installPodNetwork } from "./pod-network.js";
import { installStorage } from "./storage.js";
import { startLocalRegistry, type StartedRegistry } from "../local-registry.js";
import { pointNodesAtRegistry, publishRegistry } from "./registry.js";
import { ImagePulls, prepareNodes } from "./prepare.js";
import { claimRenderFolder, NOT_RENDERED, renderedInit } from "./render-init.js";

// What the `up` phases ask of the hosts, done: each node's kubeadm workflow (prepared once from
// its documents, for the preflight passes and the run), node markers around init and join, node
// preparation and its image pulls, the API server proxies, the pod network, the readiness wait
// and admin.conf on the runner.

/** The init steps a finished first control plane runs for nodes still to join: a fresh token. */
const TOKEN_PHASES = ["upload-certs", "bootstrap-token"];

export class HostWork implements UpWork {
  private initWork: InitWork | undefined;
  private readonly joins = new Map<string, JoinWork>();
  private imagePulls = new ImagePulls();

  constructor(
    private readonly d: Pick<
      UpData,
      "session" | "ports" | "reporter" | "dryRun" | "kubeconfigPath" | "settled" | "outcome"
    >,
    /** Dry run: the folder on the runner where the first control plane's init is rendered. */
    private readonly renderInitDir: ((node: string) => string) | undefined,
  ) {}

  private get spec() {
    return this.d.session.spec;
  }

  private log(message: string): void {
    this.d.reporter.info(`[up] ${message}`);
  }

  private target(name: string): NodeTarget {
    return {
      host: this.d.session.hostOf(name),
      reporter: this.d.session.nodeReporter(name),
      env: this.d.ports.env,
    };
  }

  private record(node: string, result: NodeRunResult): void {
    for (const t of result.timings) {
      if (t.path.includes("/")) continue;
      this.d.outcome.timings.push({ node, phase: t.path, startedAt: t.startedAt, ms: t.ms });
    }
  }

  private markerFor(s: Settled, name: string, status: NodeMarker["status"]): NodeMarker {
    const node = s.inventory.find((i) => i.node.name === name)!.node;
    return {
      cluster: this.spec.name,
      node: name,
      role: node.role,
      status,
      kubernetesVersion: s.plan.kubernetesVersion,
    };
  }

  async prepareInit(first: HostInventory, documents: ConfigDocuments): Promise<ClusterView> {
    const multiControlPlane = this.spec.nodes.filter((n) => n.role === "control-plane").length > 1;
    // A dry run renders the init on the runner instead (up() makes sure there is a folder).
    const renderInto = this.d.dryRun ? this.renderInitDir!(first.node.name) : undefined;
    this.initWork = await prepareNodeInit(this.target(first.node.name), documents, {
      uploadCerts: multiControlPlane,
      ...(renderInto !== undefined ? { renderInto } : {}),
    });
    const { data } = this.initWork.prepared;
    return { cfg: data.cfg, release: data.release, proxyEnv: data.proxyEnv };
  }

  private joinWork(s: Settled, name: string): Promise<JoinWork> {
    const prepared = this.joins.get(name);
    if (prepared) return Promise.resolve(prepared);
    const inv = s.inventory.find((i) => i.node.name === name)!;
    return prepareNodeJoin(this.target(name), joinDocumentsOf(s, this.spec, inv)).then((w) => {
      this.joins.set(name, w);
      return w;
    });
  }

  async reset(name: string): Promise<void> {
    await this.d.ports.reset(this.d.session.hostOf(name), this.d.session.nodeReporter(name));
  }

  async preflight(name: string, pass: PreflightPass): Promise<void> {
    const s = await this.d.settled();
    if (name === s.first.node.name) {
      await preflightInit(this.target(name), this.initWork!, pass);
    } else {
      await preflightJoin(this.target(name), await this.joinWork(s, name), s.cluster, pass);
    }
  }

  async prepare(nodes: readonly HostInventory[]): Promise<void> {
    const s = await this.d.settled();
    this.imagePulls = await prepareNodes({
      spec: this.spec,
      nodes: nodes.map((i) => ({
        node: i.node,
        host: this.d.session.hostOf(i.node.name),
        arch: i.facts.arch,
      })),
      cluster: s.cluster.cfg,
      release: s.cluster.release,
      reporter: (name) => this.d.session.nodeReporter(name),
      env: this.d.ports.env,
    });
  }

  async installApiServerProxies(): Promise<void> {
    const s = await this.d.settled();
    const controlPlanes = s.inventory.filter((i) => i.node.role === "control-plane");
    await installLocalEndpoint(
      s.inventory.map((i) => ({ name: i.node.name, host: this.d.session.hostOf(i.node.name) })),
      controlPlanes.map((i) => ({ name: i.node.name, address: i.address, port: s.bindPort })),
      {
        reporter: (name) => this.d.session.nodeReporter(name),
        concurrency: Math.max(this.spec.concurrency, s.inventory.length),
        allowInstall: this.spec.prepare.installPackages,
      },
    );
  }

  async init(step: "init" | "token"): Promise<void> {
    const s = await this.d.settled();
    const first = s.first.node.name;
    const work = this.initWork!;
    if (step === "token") {
      await runInit(work, { filterPhases: TOKEN_PHASES });
      this.d.outcome.tokenCreated = true;
      return;
    }
    if (work.prepared.dryRunDir !== undefined) {
      await claimRenderFolder(work.prepared.dryRunDir);
      await runInit(work, { skipPhases: NOT_RENDERED });
      this.d.outcome.renderedInit = await renderedInit(work.prepared.dryRunDir);
      return;
    }
    await this.imagePulls.done(first);
    const host = this.d.session.hostOf(first);
    await writeMarker(host, this.markerFor(s, first, "started"));
    this.record(first, await runInit(work));
    await writeMarker(host, this.markerFor(s, first, "done"));
    this.d.outcome.done.add(first);
    this.d.outcome.tokenCreated = true;
  }

  /** The CA pins joins trust: every CA in the first control plane's admin.conf. */
  async caCertHashes(adminConf?: KubeConfig): Promise<string[]> {
    this.d.outcome.caCertHashes ??= caPinsOf(
      adminConf ?? (await this.d.session.adminConf()),
      `${this.d.session.firstControlPlane.name}:${ADMIN_CONF}`,
    );
    return this.d.outcome.caCertHashes;
  }

  async join(name: string): Promise<void> {
    const s = await this.d.settled();
    // Pulled while the control plane initialised (and earlier nodes joined).
    await this.imagePulls.done(name);
    const pins = await this.caCertHashes();
    const work = await this.joinWork(s, name);
    // A join is prepared once; after a failure the node starts over from its documents.
    this.joins.delete(name);
    const host = this.d.session.hostOf(name);
    await writeMarker(host, this.markerFor(s, name, "started"));
    this.record(name, await runJoin(work, pins));
    await writeMarker(host, this.markerFor(s, name, "done"));
    this.d.outcome.done.add(name);
  }

  async labelNodes(admin: KubeClient): Promise<void> {
    await applyNodeLabels(admin, this.spec.nodes, (m) => this.log(m));
  }

  async installPodNetwork(admin: KubeClient): Promise<void> {
    const s = await this.d.settled();
    await installPodNetwork(
      this.spec,
      admin,
      s.inventory,
      (name) => this.d.session.hostOf(name),
      (m) => this.log(m),
    );
  }

  async installStorage(admin: KubeClient): Promise<void> {
    await installStorage(this.spec, admin, (m) => this.log(m));
  }

  async startRegistry(): Promise<StartedRegistry> {
    const stateFile = this.d.ports.registryStateFile;
    if (stateFile === undefined) throw new Error("registry: no folder on this machine to keep it");
    const started = await startLocalRegistry(this.spec, {
      stateFile,
      env: this.d.ports.env,
      log: (line) => this.d.reporter.info(line),
    });
    this.log(`registry: push to ${started.host} (${started.via})`);
    return started;
  }

  async configureRegistry(registry: StartedRegistry, admin: KubeClient): Promise<string[]> {
    const servers = await pointNodesAtRegistry(registry, {
      nodes: this.spec.nodes,
      hostOf: (name) => this.d.session.hostOf(name),
      concurrency: this.spec.concurrency,
      log: (node, line) => this.d.session.nodeReporter(node).info(line),
    });
    await publishRegistry(registry, admin, (m) => this.log(m));
    return servers;
  }

  async waitForCluster(admin: KubeClient, dnsDisabled: boolean): Promise<void> {
    await waitForCluster(
      admin,
      this.spec.nodes.map((n) => n.name),
      {
        timeoutMs: parseGoDuration(this.spec.wait, "wait"),
        dnsDisabled,
        podNetwork: this.spec.cni.type !== "none",
        log: (m) => this.log(m),
      },
    );
  }

  async writeRunnerKubeconfig(adminConf: KubeConfig): Promise<string> {
    const s = await this.d.settled();
    const view = await runnerServer({
      adminConf,
      controlPlanes: s.inventory.filter((i) => i.node.role === "control-plane"),
      bindPort: s.bindPort,
      localEndpoint: s.localEndpoint,
      userEndpoint: this.spec.controlPlaneEndpoint !== undefined,
      runnerAddresses: (node) => this.d.ports.runnerAddresses(node),
      hostOf: (name) => this.d.session.hostOf(name),
      ...(this.d.ports.tunnel ? { tunnel: this.d.ports.tunnel } : {}),
      ...(this.d.ports.publishedApiServer
        ? { publishedApiServer: this.d.ports.publishedApiServer }
        : {}),
    });
    await writeRunnerKubeConfig(this.d.kubeconfigPath, view.kubeconfig);
    this.log(
      `admin.conf written to ${this.d.kubeconfigPath} (server ${view.server}${view.via ? `, ${view.via}` : ""})`,
    );
    return view.server;
  }

  async stop(): Promise<void> {
    this.initWork?.prepared.data.keys.discard();
    await this.imagePulls.cancel();
  }
}
