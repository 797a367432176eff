import { join } from "node:path";
import { parseGoDuration } from "../../config/duration.js";
import { ciImageRepositoryFor } from "../../config/defaults.js";
import { CI_VERSION_PREFIX } from "../../config/versions.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import { poll } from "../../kube/poll.js";
import { whenApiAnswers } from "../../kube/after-failure.js";
import type { FetchedArtifact } from "../../node/artifacts/fetch.js";
import type { InitSystem } from "../../node/init-system.js";
import { goArch } from "../../node/artifacts/catalog.js";
import {
  changeProxyRotation,
  proxyRotationCommands,
  untilNoSessionsTo,
} from "../../node/apiserver-proxy.js";
import { prePullImages } from "../../node/images.js";
import {
  prepareNodeUpgrade,
  runUpgradeApply,
  runUpgradeNode,
  type PreparedNodeUpgrade,
  type UpgradeNodeRun,
} from "../../phases/upgrade/node-workflows.js";
import { KUBEADM_TMP_DIR } from "../../phases/upgrade/paths.js";
import { nodeCRISocket } from "../../phases/upgrade/cluster-config.js";
import { allOrFirstError, fleet } from "../../remote/fleet.js";
import { summarizeTimings } from "../../workflow/runner.js";
import type { HostInventory } from "../inventory.js";
import { writeMarker } from "../node-state.js";
import {
  downloadTargetBinaries,
  kubeletInitSystem,
  stageBinaries,
  swapBinaries,
} from "./binaries.js";
import type {
  ClusterUpgradeData,
  EtcdSnapshot,
  NodeStepKind,
  SnapshotTiming,
  UpgradeWork,
} from "./data.js";
import { cordon, drain, uncordon } from "./drain.js";
import { etcdProblem, storedClusterConfiguration } from "./read.js";
import { checkAddonsAtTarget } from "./addons.js";
import { existingSnapshot, takeSnapshot } from "./snapshot.js";
import { PREFLIGHT_PHASE, PreflightsAhead } from "./preflight-ahead.js";
import { stageImages } from "./stage-images.js";

// What the cluster-level upgrade's phases ask of the hosts, done: staging, kubeadm's upgrade
// apply|node through the node-level workflows (src/phases/upgrade) on the node's Host, the
// kubelet swap and restart, the gates, cordon/drain/uncordon through the API and the markers.

interface NodeObject extends KubeObject {
  status?: {
    conditions?: { type: string; status: string }[];
    nodeInfo?: { kubeletVersion?: string };
  };
}

const isReady = (n: NodeObject) =>
  n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

export class HostUpgradeWork implements UpgradeWork {
  private downloads: Promise<Map<string, FetchedArtifact[]>> | undefined;
  private readonly cordoned = new Set<string>();
  private readonly preflights = new PreflightsAhead<PreparedNodeUpgrade>();
  private snapshot: Promise<EtcdSnapshot | undefined> | undefined;
  private readonly initSystems = new Map<string, Promise<InitSystem>>();

  constructor(
    private readonly d: Pick<
      ClusterUpgradeData,
      | "session"
      | "ports"
      | "reporter"
      | "options"
      | "settled"
      | "dryRun"
      | "dryRunDir"
      | "report"
      | "probes"
    >,
  ) {}

  private async inventoryOf(name: string): Promise<HostInventory> {
    return (await this.d.settled()).inventory.find((i) => i.node.name === name)!;
  }

  private async target(): Promise<string> {
    return (await this.d.settled()).plan.to;
  }

  private log(name: string): (line: string) => void {
    const reporter = this.d.session.nodeReporter(name);
    return (line) => reporter.info(`[upgrade] ${line}`);
  }

  /** The target binaries per architecture, downloaded once (from the cache on a re-run). */
  private binaries(): Promise<Map<string, FetchedArtifact[]>> {
    this.downloads ??= (async () => {
      const s = await this.d.settled();
      const first = this.d.session.firstControlPlane.name;
      // The user's kubelet is a build of the run's target: the hops before it (--via) get
      // the released kubelet of theirs.
      const last = s.plan.hops === undefined || s.plan.hops.at(-1) === s.plan.to;
      const kubeletBinary = last ? this.d.options.kubeletBinary : undefined;
      return downloadTargetBinaries(
        this.d.session.spec,
        s.plan.to,
        s.inventory.map((i) => ({ name: i.node.name, arch: i.facts.arch })),
        {
          env: this.d.ports.env,
          log: (l) => this.log(first)(`runner: ${l}`),
          ...(kubeletBinary !== undefined ? { kubeletBinary } : {}),
          ciBuild: s.plan.ciBuild === true,
        },
      );
    })();
    this.downloads.catch(() => (this.downloads = undefined));
    return this.downloads;
  }

  private async binariesOf(name: string): Promise<FetchedArtifact[]> {
    const inv = await this.inventoryOf(name);
    return (await this.binaries()).get(goArch(inv.facts.arch)) ?? [];
  }

  /** The ClusterConfiguration the target's images are named from (kubeadm-config's, at `to`). */
  private async imageCluster(admin: KubeClient, to: string, ciBuild: boolean) {
    const { ciImageRepository: _before, ...stored } = (await storedClusterConfiguration(admin))
      .imageCluster;
    // The images the target's kubeadm names: a CI build's control plane from the CI registry.
    const ciImageRepository = ciImageRepositoryFor(stored.imageRepository, ciBuild);
    return {
      ...stored,
      kubernetesVersion: to,
      ...(ciImageRepository ? { ciImageRepository } : {}),
    };
  }

  async stage(nodes: readonly HostInventory[]): Promise<void> {
    const { plan } = await this.d.settled();
    const to = plan.to;
    const admin = await this.d.session.adminClient();
    // The images are named and pulled while the binaries download and verify: neither reads
    // the other. Each is awaited by the nodes' branches, which report their failures.
    const cluster = this.imageCluster(admin, to, plan.ciBuild === true);
    cluster.catch(() => {});
    this.binaries().catch(() => {});
    await fleet(
      nodes,
      (i) => i.node.name,
      async (inv) => {
        const host = this.d.session.hostOf(inv.node.name);
        const log = this.log(inv.node.name);
        const pull = async () => {
          if (!this.d.session.spec.prepare.prePullImages) return;
          // The runtime kubeadm's preflight will ask (the node's CRI socket as the upgrade reads
          // it), else the one found at a standard path.
          const criSocket = (await nodeCRISocket(admin, host, inv.node.name)) ?? inv.criSocket;
          if (!criSocket) {
            log("no container runtime socket found: the target's images are not pre-pulled");
            return;
          }
          const images = stageImages(
            await cluster,
            inv.node.role,
            to,
            this.d.options.workloadProbes,
          );
          await prePullImages(host, images, { criSocket, log });
        };
        await allOrFirstError([
          (async () => stageBinaries(host, await this.binariesOf(inv.node.name), to, log))(),
          pull(),
        ]);
      },
      { concurrency: Math.max(this.d.session.spec.concurrency, nodes.length) },
    );
  }

  etcdSnapshot(timed: SnapshotTiming = (take) => take()): Promise<EtcdSnapshot | undefined> {
    this.snapshot ??= timed(() => this.takeEtcdSnapshot());
    return this.snapshot;
  }

  private async takeEtcdSnapshot(): Promise<EtcdSnapshot | undefined> {
    const s = await this.d.settled();
    const node = this.d.session.firstControlPlane.name;
    const host = this.d.session.hostOf(node);
    const log = this.log(node);
    // A resumed upgrade (a node's marker records it) changed the cluster already: the snapshot
    // of before the change is the one its first run took.
    if (s.reading.nodes.some((n) => n.marker?.to === s.plan.to)) {
      const earlier = await existingSnapshot(host, s.plan.to);
      if (!earlier) {
        log("etcd snapshot: none, the upgrade had started in an earlier run that took none");
        return undefined;
      }
      log(`etcd snapshot: ${earlier}, taken by an earlier run of this upgrade; no second one`);
      const bytes = (await host.stat(earlier))?.size ?? 0;
      return { node, path: earlier, bytes, takenBy: "an earlier run" };
    }
    const stored = await storedClusterConfiguration(await this.d.session.adminClient());
    if (stored.externalEtcd) {
      log("etcd snapshot: none, the cluster's etcd is external (its operator backs it up)");
      return undefined;
    }
    const taken = await takeSnapshot(host, stored.certificatesDir, s.plan.to, new Date());
    log(`etcd snapshot of ${node}'s member: ${taken.path} (${taken.bytes} bytes, mode 0600)`);
    return { node, ...taken, takenBy: "this run" };
  }

  private async tmpEntries(name: string): Promise<string[]> {
    return this.d.session
      .hostOf(name)
      .readDir(KUBEADM_TMP_DIR)
      .catch(() => []);
  }

  /**
   * The Cluster's UpgradeConfiguration (its kubeadm documents): its timeouts.upgradeManifests
   * bounds each component's restart on every node, as `kubeadm upgrade --config` would.
   */
  private upgradeTiming(): Pick<UpgradeNodeRun, "timing"> {
    const text = this.d.session.spec.kubeadm.config?.upgrade?.timeouts?.upgradeManifests;
    if (text === undefined) return {};
    return { timing: { upgradeManifestsMs: parseGoDuration(text, "timeouts.upgradeManifests") } };
  }

  private async nodeRun(name: string, kind: NodeStepKind): Promise<UpgradeNodeRun> {
    const { options, dryRun, dryRunDir } = this.d;
    const { plan } = await this.d.settled();
    return {
      host: this.d.session.hostOf(name),
      reporter: this.d.session.nodeReporter(name),
      env: this.d.ports.env,
      flags: {
        ...(dryRun ? { dryRun: true } : {}),
        ...(kind === "apply"
          ? {
              // A CI build (a pre-release) was asked for by name: that is the permission.
              allowExperimentalUpgrades: options.allowExperimentalUpgrades || plan.ciBuild === true,
              allowRCUpgrades: options.allowRCUpgrades,
            }
          : {}),
      },
      ...(dryRun && dryRunDir ? { dryRunDir: join(dryRunDir, name) } : {}),
      ...this.upgradeTiming(),
    };
  }

  async preflightAhead(names: readonly string[], kind: NodeStepKind = "node"): Promise<void> {
    if (this.d.dryRun) return;
    for (const name of names) {
      const run = await this.nodeRun(name, kind);
      const version = kind === "apply" ? await this.applyVersion() : undefined;
      this.preflights.start(name, run.reporter, async (reporter) => {
        const rest = await prepareNodeUpgrade(kind, { ...run, reporter }, version);
        const { timings } = await rest.run({ filterPhases: [PREFLIGHT_PHASE] });
        return { timings, rest };
      });
    }
  }

  async aheadSettled(): Promise<void> {
    await Promise.allSettled([this.preflights.settled(), this.snapshot]);
  }

  /** The version `upgrade apply` is given: a CI build as kubeadm takes one, "ci/<version>". */
  private async applyVersion(): Promise<string> {
    const { plan } = await this.d.settled();
    return `${plan.ciBuild ? CI_VERSION_PREFIX : ""}${plan.to}`;
  }

  async upgradeNode(name: string, kind: NodeStepKind): Promise<void> {
    const before = new Set(await this.tmpEntries(name));
    const run = await this.nodeRun(name, kind);
    // The run whose preflight ran ahead goes on; else the whole run, here.
    const ahead = await this.preflights.take(name, run.reporter);
    const result = ahead
      ? await ahead.rest.run({ skipPhases: [PREFLIGHT_PHASE] })
      : kind === "apply"
        ? await runUpgradeApply(run, await this.applyVersion())
        : await runUpgradeNode(run);
    if (result.output.trim()) this.log(name)(result.output.trim());
    // Where the node's time went, phase by phase (the report has the step's total).
    const timings = ahead
      ? [...ahead.timings, ...result.timings.filter((t) => t.path !== PREFLIGHT_PHASE)]
      : result.timings;
    this.log(name)(
      `upgrade ${kind}: phase timings ${summarizeTimings(timings)}${ahead ? ` (${PREFLIGHT_PHASE} ahead of its turn)` : ""}`,
    );
    const node = this.d.report.node(name, (await this.inventoryOf(name)).node.role);
    for (const entry of await this.tmpEntries(name)) {
      if (!before.has(entry)) node.backups.push(`${KUBEADM_TMP_DIR}/${entry}`);
    }
  }

  kubeletRestartAhead(name: string): void {
    this.initSystemOf(name).catch(() => {}); // its error is the kubelet step's
  }

  /** The node's init system, found and its units reloaded once (kubeletInitSystem). */
  private initSystemOf(name: string): Promise<InitSystem> {
    let init = this.initSystems.get(name);
    if (!init) {
      init = kubeletInitSystem(this.d.session.hostOf(name));
      this.initSystems.set(name, init);
    }
    return init;
  }

  async swapKubelet(name: string): Promise<void> {
    const host = this.d.session.hostOf(name);
    const [kept, init] = await allOrFirstError([
      (async () => swapBinaries(host, await this.binariesOf(name), await this.target()))(),
      this.initSystemOf(name),
    ]);
    const node = this.d.report.node(name, (await this.inventoryOf(name)).node.role);
    for (const k of kept) if (!node.backups.includes(k)) node.backups.push(k);
    this.log(name)(`kubelet and kubectl ${await this.target()} in place; restarting the kubelet`);
    await init.serviceRestart("kubelet", { unitsReloaded: true });
  }

  async gate(name: string): Promise<void> {
    const admin = await this.d.session.adminClient();
    const to = await this.target();
    let seen = "";
    await poll(
      async () => {
        const n = await admin.get<NodeObject>({ apiVersion: "v1", kind: "Node", name });
        const version = n.status?.nodeInfo?.kubeletVersion;
        seen = `kubeletVersion ${version ?? "none"}, ${isReady(n) ? "Ready" : "NotReady"}`;
        return version === to && isReady(n) ? true : undefined;
      },
      {
        timeoutMs: this.d.options.nodeTimeoutMs,
        // The restarted kubelet reports at once: a read every 50 ms sees it within a twentieth
        // of a second (one small GET per node of the batch), on the upgrade's critical path.
        intervalMs: 50,
        what: `the Node ${name} to be Ready with kubeletVersion ${to}`,
      },
    ).catch((e: unknown) => {
      throw new Error(`${(e as Error).message} (last seen: ${seen || "nothing"})`, { cause: e });
    });
    const node = this.d.report.node(name, (await this.inventoryOf(name)).node.role);
    node.kubeletAfter = to;
  }

  async proxyOut(name: string): Promise<void> {
    // A preflight run ahead reads the cluster through these proxies (its node's kubeconfig):
    // its requests end before the proxies close the sessions to this server.
    await this.preflights.settled();
    await this.rotate(name, `${name} taken out of`);
  }

  async proxyIn(): Promise<void> {
    await this.rotate(undefined, "every control plane in");
  }

  /**
   * Changes the rotation of every node's API server proxy, in parallel. A proxy that cannot be
   * changed is a warning, not a failure: its health checks still take a stopped API server out,
   * only a second or two late.
   */
  private async rotate(out: string | undefined, what: string): Promise<void> {
    const s = await this.d.settled();
    if (!s.reading.nodeLocalProxy || this.d.dryRun) return;
    const controlPlanes = s.inventory
      .filter((i) => i.node.role === "control-plane")
      .map((i) => i.node.name);
    const commands = proxyRotationCommands({
      ...(out !== undefined ? { out } : {}),
      back: controlPlanes.filter((n) => n !== out),
    });
    let changed = 0;
    await fleet(
      s.inventory,
      (i) => i.node.name,
      async (i) => {
        try {
          const host = this.d.session.hostOf(i.node.name);
          await changeProxyRotation(host, commands);
          const left = out === undefined ? 0 : await untilNoSessionsTo(host, out);
          if (left > 0) {
            this.d.session
              .nodeReporter(i.node.name)
              .warn(`[apiserver-proxy] ${left} session(s) to ${out} still open after 2s`);
          }
          changed++;
        } catch (e) {
          this.d.session
            .nodeReporter(i.node.name)
            .warn(
              `[apiserver-proxy] ${(e as Error).message}; its health checks still take a stopped API server out, a second or two late`,
            );
        }
      },
      { concurrency: s.inventory.length },
    );
    this.d.reporter.info(
      `[apiserver-proxy] ${what} the node-local API server proxies of ${changed} of ${s.inventory.length} node(s)`,
    );
  }

  async etcdQuorum(): Promise<void> {
    const admin = await this.d.session.adminClient();
    const stored = await storedClusterConfiguration(admin);
    if (stored.externalEtcd) return;
    const problem = await etcdProblem(this.d.session, admin, stored.certificatesDir);
    if (problem)
      throw new Error(`etcd is not healthy, no further control plane changes: ${problem}`);
  }

  async cordon(name: string): Promise<void> {
    if (await cordon(await this.d.session.adminClient(), name)) this.cordoned.add(name);
  }

  async drain(name: string): Promise<number> {
    const evicted = await drain(
      await this.d.session.adminClient(),
      name,
      this.d.options.drainTimeoutMs,
      (pod, reason) => this.d.probes.evictionRefused?.(pod, name, reason),
    );
    this.log(name)(`drained: ${evicted} pod(s) evicted`);
    return evicted;
  }

  async uncordon(name: string): Promise<void> {
    if (!this.cordoned.has(name)) return;
    await uncordon(await this.d.session.adminClient(), name);
    this.cordoned.delete(name);
  }

  async uncordonAll(): Promise<void> {
    for (const name of [...this.cordoned]) {
      try {
        await whenApiAnswers(`the API server to uncordon ${name}`, () => this.uncordon(name));
        this.log(name)("uncordoned after the failure");
      } catch (e) {
        this.d.session
          .nodeReporter(name)
          .warn(
            `[upgrade] could not uncordon the node: ${(e as Error).message}; run "kubectl uncordon ${name}"`,
          );
      }
    }
  }

  async mark(name: string, step: "started" | "done"): Promise<void> {
    const s = await this.d.settled();
    const inv = await this.inventoryOf(name);
    if (inv.condition.kind !== "done") return;
    const marker = inv.condition.marker;
    await writeMarker(this.d.session.hostOf(name), {
      ...marker,
      kubernetesVersion: step === "done" ? s.plan.to : marker.kubernetesVersion,
      upgrade: { from: s.plan.from, to: s.plan.to, step },
    });
  }

  async addonsAtTarget(): Promise<void> {
    const admin = await this.d.session.adminClient();
    const stored = await storedClusterConfiguration(admin);
    await checkAddonsAtTarget(admin, stored.imageCluster, await this.target());
  }

  async verify(admin: KubeClient): Promise<void> {
    const to = await this.target();
    const problems: string[] = [];
    const stored = await storedClusterConfiguration(admin);
    if (stored.kubernetesVersion !== to) {
      problems.push(`kube-system/kubeadm-config records ${stored.kubernetesVersion}`);
    }
    const nodes = await admin.list<NodeObject>("v1", "Node");
    for (const inv of (await this.d.settled()).inventory) {
      const n = nodes.find((o) => o.metadata.name === inv.node.name);
      const version = n?.status?.nodeInfo?.kubeletVersion;
      if (!n || version !== to || !isReady(n)) {
        problems.push(
          `${inv.node.name} is ${n && isReady(n) ? "Ready" : "not Ready"} with kubelet ${version ?? "none"}`,
        );
      }
    }
    if (problems.length > 0) {
      throw new Error(`the cluster is not at ${to} after the upgrade: ${problems.join("; ")}`);
    }
  }
}
