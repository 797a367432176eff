import { NodeClusterAccess } from "../../../kube/access.js";
import type { KubeClient } from "../../../kube/types.js";
import { currentEntries } from "../../../kubeconfig/parse.js";
import { CANARY_NAME, canaryReplicas } from "../../../manifests/probe-canary.js";
import { ADMIN_CONF } from "../../session.js";
import type { ClusterUpgradeData, ProbeResults, UpgradeProbes } from "../data.js";
import {
  createProbeObjects,
  PROBE_NAMESPACE,
  readyzTarget,
  removeProbeObjects,
  stableTarget,
} from "./api-targets.js";
import { ApiProber, realClock, type ProbeClock, type ProbeTarget } from "./prober.js";
import { waitSettled, type SettleWorkload } from "./settle.js";
import {
  describeOutage,
  endpointLabel,
  workloadTimeline,
  type AvailabilityChange,
  type EndpointTimeline,
  type WorkloadsTimeline,
} from "./timeline.js";
import {
  availabilityRecorder,
  canaryTarget,
  createCanary,
  waitAvailable,
} from "./workload-targets.js";

// The probes of a cluster upgrade, from the runner (kubeadm-upgrade.md §5.5). api: every control
// plane at the address its kube-apiserver manifest advertises, and admin.conf's server, each
// reached as the cluster workflow reaches the nodes (directly, or over the node's SSH
// connection), with admin.conf's credentials — which never leave the client. workload: the
// canary (manifests/probe-canary.ts) created and awaited available, then its Service asked
// through the API server's service proxy and its available replicas read every interval.
// Started before the first node changes, stopped after the last; the samples are tagged with the
// report's running steps, so every outage is attributed.

/** Bound on one probe. */
export const PROBE_TIMEOUT_MS = 5_000;

interface Running {
  api?: ApiProber;
  workloads?: { prober: ApiProber; availability: Map<string, AvailabilityChange[]> };
}

export class SessionProbes implements UpgradeProbes {
  private running: Running | undefined;
  private readonly settleWorkloads: SettleWorkload[] = [];

  constructor(
    private readonly d: Pick<ClusterUpgradeData, "session" | "options" | "report" | "settled">,
    private readonly clock?: ProbeClock,
  ) {}

  private log(line: string): void {
    this.d.session.reporter.info(`[probes] ${line}`);
  }

  private async client(node: string, server?: string): Promise<KubeClient> {
    const access = new NodeClusterAccess(this.d.session.hostOf(node), {
      requestTimeoutMs: PROBE_TIMEOUT_MS,
    });
    return access.clientFor(ADMIN_CONF, server ? { server } : {});
  }

  private async apiTargets(): Promise<ProbeTarget[]> {
    const { session } = this.d;
    const { reading } = await this.d.settled();
    const targets: ProbeTarget[] = [];
    for (const n of reading.nodes) {
      if (n.role !== "control-plane" || !n.apiServerEndpoint) continue;
      const url = `https://${n.apiServerEndpoint}`;
      targets.push(readyzTarget(n.name, url, await this.client(n.name, url)));
    }
    const stableURL = currentEntries(await session.adminConf(), ADMIN_CONF).cluster.server ?? "";
    targets.push(stableTarget(stableURL, await this.client(session.firstControlPlane.name)));
    return targets;
  }

  private prober(targets: ProbeTarget[], intervalMs: number): ApiProber {
    const prober = new ApiProber(targets, {
      intervalMs,
      timeoutMs: PROBE_TIMEOUT_MS,
      during: () => this.d.report.current(),
      ...(this.clock ? { clock: this.clock } : {}),
    });
    prober.start();
    return prober;
  }

  /** The canary created and available, then sampled; undefined without workers to run it. */
  private async startWorkloads(
    client: KubeClient,
    o: NonNullable<ClusterUpgradeData["options"]["workloadProbes"]>,
  ): Promise<Running["workloads"]> {
    const { reading } = await this.d.settled();
    const workers = reading.nodes.filter((n) => n.role === "worker").length;
    if (workers === 0) {
      this.log("the cluster has no workers: no canary workload is probed");
      return undefined;
    }
    const replicas = canaryReplicas(workers);
    await createCanary(client, replicas);
    await waitAvailable(client, PROBE_NAMESPACE, CANARY_NAME, o.settleMs);
    this.settleWorkloads.push({ namespace: PROBE_NAMESPACE, name: CANARY_NAME });
    const clock = this.clock ?? realClock;
    const now = () => clock.now();
    const replicasOf = availabilityRecorder(client, PROBE_NAMESPACE, CANARY_NAME, now);
    const target = canaryTarget(await this.client(this.d.session.firstControlPlane.name));
    this.log(
      `the workload ${CANARY_NAME} (${replicas} replicas in ${PROBE_NAMESPACE}): ${target.checks} every ${o.intervalMs} ms`,
    );
    const prober = this.prober([target, replicasOf.target], o.intervalMs);
    return { prober, availability: new Map([[CANARY_NAME, replicasOf.changes]]) };
  }

  async start(): Promise<void> {
    const { apiProbes, workloadProbes } = this.d.options;
    if ((!apiProbes && !workloadProbes) || this.running) return;
    // Clients first: a failure there leaves nothing behind in the cluster.
    const targets = apiProbes ? await this.apiTargets() : [];
    const admin = await this.d.session.adminClient();
    await createProbeObjects(admin);
    const running: Running = {};
    this.running = running;
    if (workloadProbes) {
      const workloads = await this.startWorkloads(admin, workloadProbes);
      if (workloads) running.workloads = workloads;
    }
    if (apiProbes) {
      running.api = this.prober(targets, apiProbes.intervalMs);
      for (const t of targets) {
        this.log(`${endpointLabel(t)} ${t.url}: ${t.checks} every ${apiProbes.intervalMs} ms`);
      }
    }
  }

  async settle(batch: readonly string[]): Promise<void> {
    const o = this.d.options.workloadProbes;
    if (!o) return;
    await waitSettled(await this.d.session.adminClient(), this.settleWorkloads, batch, o.settleMs);
  }

  private logTimeline(e: EndpointTimeline): void {
    this.log(
      `${endpointLabel(e)}: ${e.samples} samples, ${e.failures} failed, longest outage ${e.longestOutageSeconds} s`,
    );
    for (const o of e.outages) this.log(`outage: ${describeOutage(e, o)}`);
  }

  private async stopWorkloads(w: NonNullable<Running["workloads"]>): Promise<WorkloadsTimeline> {
    const t = await w.prober.stop();
    // The availability recorder's samples are replica counts, not requests: only the changes count.
    const requests = t.endpoints.filter((e) => e.url.startsWith("/"));
    const workloads = requests.map((e) => workloadTimeline(e, w.availability.get(e.name)));
    for (const e of workloads) this.logTimeline(e);
    return { intervalMs: t.intervalMs, workloads };
  }

  async stop(): Promise<ProbeResults> {
    const running = this.running;
    if (!running) return {};
    this.running = undefined;
    const results: ProbeResults = {};
    if (running.api) {
      results.api = await running.api.stop();
      for (const e of results.api.endpoints) this.logTimeline(e);
    }
    if (running.workloads) results.workloads = await this.stopWorkloads(running.workloads);
    if (this.d.options.apiProbes?.keep || this.d.options.workloadProbes?.keep) {
      this.log(`--keep-probes: the namespace ${PROBE_NAMESPACE} is kept`);
      return results;
    }
    try {
      await removeProbeObjects(await this.d.session.adminClient());
    } catch (e) {
      this.d.session.reporter.warn(
        `[probes] could not remove the namespace ${PROBE_NAMESPACE}: ${(e as Error).message.split("\n")[0]}; run "kubectl delete namespace ${PROBE_NAMESPACE}"`,
      );
    }
    return results;
  }
}
