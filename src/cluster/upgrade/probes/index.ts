import { NodeClusterAccess } from "../../../kube/access.js";
import type { KubeClient, ObjectRef } from "../../../kube/types.js";
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
import { dnsTarget } from "./dns-target.js";
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
  commandTarget,
  createUserObjects,
  removeUserObjects,
  userRequestTarget,
} from "./user-targets.js";
import type { UserWorkloads } from "./user-workloads.js";
import { chooseCanaryTarget, type NodePortCandidate } from "./node-port.js";
import { connectFrom, directConnect } from "./node-port-request.js";
import {
  availabilityRecorder,
  canaryNodePort,
  canaryTarget,
  createCanary,
  internalIPs,
  waitAvailable,
} from "./workload-targets.js";

// The probes of a cluster upgrade, from the runner (kubeadm-upgrade.md §5.5). api: every control
// plane at the address its kube-apiserver manifest advertises, and admin.conf's server, each
// reached as the cluster workflow reaches the nodes (directly, or over the node's SSH
// connection), with admin.conf's credentials — which never leave the client. workload: the
// canary (manifests/probe-canary.ts) created and awaited available, then its Service asked on its
// NodePort through the nodes that answer it (node-port.ts), else through the API server's service
// proxy, and its available replicas read every interval.
// Started before the first node changes, stopped after the last; the samples are tagged with the
// report's running steps, so every outage is attributed.

/** Bound on one probe. */
export const PROBE_TIMEOUT_MS = 5_000;

/**
 * Choosing the NodePort path: a node answers within 2 s or is asked again every second for 10 s
 * (kube-proxy serves a NodePort a moment after the Service's endpoints are ready).
 */
const NODE_PORT_CHOICE = { timeoutMs: 2_000, retryForMs: 10_000, retryEveryMs: 1_000 };

interface Running {
  api?: ApiProber;
  /** --probe dns: the lookup from the canary's Pods. */
  dns?: ApiProber;
  workloads?: {
    prober: ApiProber;
    /** How many of the prober's targets (the first ones) are requests. */
    requests: number;
    /** Availability changes by the name of the request they go with. */
    availability: Map<string, AvailabilityChange[]>;
  };
}

type WorkloadProbeOptions = NonNullable<ClusterUpgradeData["options"]["workloadProbes"]>;

export class SessionProbes implements UpgradeProbes {
  private running: Running | undefined;
  private readonly settleWorkloads: SettleWorkload[] = [];
  /** What the user's probe manifest created, removed at the end. */
  private userCreated: ObjectRef[] = [];

  constructor(
    private readonly d: Pick<ClusterUpgradeData, "session" | "options" | "report" | "settled">,
    private readonly clock?: ProbeClock,
  ) {}

  private readonly now = () => (this.clock ?? realClock).now();

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
    // Every admin.conf is read at once (one command per host).
    const [readyz, adminConf, stableClient] = await Promise.all([
      Promise.all(
        reading.nodes.flatMap((n) => {
          if (n.role !== "control-plane" || !n.apiServerEndpoint) return [];
          const url = `https://${n.apiServerEndpoint}`;
          return [this.client(n.name, url).then((c) => readyzTarget(n.name, url, c))];
        }),
      ),
      session.adminConf(),
      this.client(session.firstControlPlane.name),
    ]);
    const stableURL = currentEntries(adminConf, ADMIN_CONF).cluster.server ?? "";
    return [...readyz, stableTarget(stableURL, stableClient)];
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
  private async startCanary(
    client: KubeClient,
    o: WorkloadProbeOptions,
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
    const replicasOf = availabilityRecorder(client, PROBE_NAMESPACE, CANARY_NAME, this.now);
    const target = await this.canaryPath(client);
    this.log(
      `the workload ${CANARY_NAME} (${replicas} replicas in ${PROBE_NAMESPACE}): ${target.checks} every ${o.intervalMs} ms`,
    );
    const prober = this.prober([target, replicasOf.target], o.intervalMs);
    return { prober, requests: 1, availability: new Map([[CANARY_NAME, replicasOf.changes]]) };
  }

  /**
   * The nodes the runner reaches as the workflow does — directly, else through the node's own SSH
   * connection — workers first, at their InternalIP.
   */
  private async nodePortCandidates(client: KubeClient): Promise<NodePortCandidate[]> {
    const { reading } = await this.d.settled();
    const ips = await internalIPs(client);
    const order = [...reading.nodes].sort(
      (a, b) => Number(a.role === "control-plane") - Number(b.role === "control-plane"),
    );
    return order.flatMap((n) => {
      const address = ips.get(n.name);
      if (!address) return [];
      const viaNode = connectFrom(this.d.session.hostOf(n.name));
      const routes: NodePortCandidate["routes"] = [{ via: "direct", connect: directConnect }];
      if (viaNode) routes.push({ via: "ssh", connect: viaNode });
      return [{ name: n.name, address, routes }];
    });
  }

  /**
   * How the canary is asked: on its NodePort through the nodes that answer it, else through the
   * API server's service proxy; the log says which, and why not the NodePort.
   */
  private async canaryPath(client: KubeClient): Promise<ProbeTarget> {
    const port = await canaryNodePort(client);
    const input = {
      port,
      candidates: port === undefined ? [] : await this.nodePortCandidates(client),
      proxied: () => this.client(this.d.session.firstControlPlane.name).then(canaryTarget),
      running: () => this.d.report.current(),
      timeoutMs: PROBE_TIMEOUT_MS,
      log: (line: string) => this.log(line),
    };
    return chooseCanaryTarget(input, NODE_PORT_CHOICE);
  }

  /** The DNS lookup from the canary's Pods (the canary runs: startCanary came first). */
  private async startDns(intervalMs: number): Promise<ApiProber> {
    const target = dnsTarget(await this.client(this.d.session.firstControlPlane.name));
    this.log(`DNS in the cluster: ${target.checks} every ${intervalMs} ms`);
    return this.prober([target], intervalMs);
  }

  /**
   * The user's workloads: the manifest's missing objects created, its Deployments awaited
   * available, then its requests and the command sampled. A Deployment's availability goes with
   * the request of the same namespace/name (a Service named as its Deployment), when there is one.
   */
  private async startUser(
    client: KubeClient,
    o: WorkloadProbeOptions,
    user: UserWorkloads,
  ): Promise<Running["workloads"]> {
    await createUserObjects(client, user.objects, this.userCreated);
    if (user.source) {
      this.log(
        `the probe manifest ${user.source}: ${this.userCreated.length} of ${user.objects.length} objects created`,
      );
    }
    const proxied = await this.client(this.d.session.firstControlPlane.name);
    const targets = user.requests.map((r) => userRequestTarget(proxied, r));
    if (user.command !== undefined) targets.push(commandTarget(user.command));
    const recorders = [];
    for (const d of user.deployments) {
      await waitAvailable(client, d.namespace, d.name, o.settleMs);
      this.settleWorkloads.push(d);
      recorders.push({
        key: `${d.namespace}/${d.name}`,
        ...availabilityRecorder(client, d.namespace, d.name, this.now),
      });
    }
    for (const t of targets)
      this.log(`the workload ${t.name}: ${t.checks} every ${o.intervalMs} ms`);
    const prober = this.prober([...targets, ...recorders.map((r) => r.target)], o.intervalMs);
    const availability = new Map(recorders.map((r) => [r.key, r.changes]));
    return { prober, requests: targets.length, availability };
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
      const workloads = workloadProbes.user
        ? await this.startUser(admin, workloadProbes, workloadProbes.user)
        : await this.startCanary(admin, workloadProbes);
      if (workloads) running.workloads = workloads;
      // Without workers there is no canary to look up from.
      if (workloadProbes.dns && workloads)
        running.dns = await this.startDns(workloadProbes.intervalMs);
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
    const unmeasured = e.unmeasuredSamples
      ? `, ${e.unmeasuredSamples} not measured (the API server could not proxy them)`
      : "";
    this.log(
      `${endpointLabel(e)}: ${e.samples} samples, ${e.failures} failed, longest outage ${e.longestOutageSeconds} s${unmeasured}`,
    );
    for (const o of e.outages) this.log(`outage: ${describeOutage(e, o)}`);
  }

  private async stopWorkloads(w: NonNullable<Running["workloads"]>): Promise<WorkloadsTimeline> {
    const t = await w.prober.stop();
    // The availability recorders' samples are replica counts, not requests: only the changes
    // count. They follow the requests among the prober's targets.
    const requests = t.endpoints.slice(0, w.requests);
    const workloads = requests.map((e) => workloadTimeline(e, w.availability.get(e.name)));
    for (const e of workloads) this.logTimeline(e);
    return { intervalMs: t.intervalMs, workloads };
  }

  /** Removes what the probes created; what cannot be removed is a warning saying how. */
  private async removeObjects(): Promise<void> {
    const admin = await this.d.session.adminClient();
    const created = this.userCreated;
    this.userCreated = [];
    try {
      await removeUserObjects(admin, created);
    } catch (e) {
      this.d.session.reporter.warn(
        `[probes] could not remove the probe manifest's objects: ${(e as Error).message.split("\n")[0]}; delete them with "kubectl delete -f" on the manifest`,
      );
    }
    try {
      await removeProbeObjects(admin);
    } catch (e) {
      this.d.session.reporter.warn(
        `[probes] could not remove the namespace ${PROBE_NAMESPACE}: ${(e as Error).message.split("\n")[0]}; run "kubectl delete namespace ${PROBE_NAMESPACE}"`,
      );
    }
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
    if (running.dns) {
      [results.dns] = (await running.dns.stop()).endpoints;
      if (results.dns) this.logTimeline(results.dns);
    }
    if (this.d.options.apiProbes?.keep || this.d.options.workloadProbes?.keep) {
      this.log(`--keep-probes: the namespace ${PROBE_NAMESPACE} is kept`);
      if (this.userCreated.length > 0)
        this.log("--keep-probes: the probe manifest's objects are kept");
      return results;
    }
    await this.removeObjects();
    return results;
  }
}
