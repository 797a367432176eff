import { NodeClusterAccess } from "../../../kube/access.js";
import { currentEntries } from "../../../kubeconfig/parse.js";
import { ADMIN_CONF } from "../../session.js";
import type { ClusterUpgradeData, UpgradeProbes } from "../data.js";
import {
  createProbeObjects,
  PROBE_NAMESPACE,
  readyzTarget,
  removeProbeObjects,
  stableTarget,
} from "./api-targets.js";
import { ApiProber, type ProbeClock, type ProbeTarget } from "./prober.js";
import { describeOutage, endpointLabel, type ApiTimeline } from "./timeline.js";

// The API probes of a cluster upgrade, from the runner (kubeadm-upgrade.md §5.5): every control
// plane at the address its kube-apiserver manifest advertises, and admin.conf's server, each
// reached as the cluster workflow reaches the nodes (directly, or over the node's SSH
// connection), with admin.conf's credentials — which never leave the client. Started before the
// first node changes, stopped after the last; the samples are tagged with the report's running
// steps, so every outage is attributed.

/** Bound on one probe. */
export const PROBE_TIMEOUT_MS = 5_000;

export class SessionApiProbes implements UpgradeProbes {
  private prober: ApiProber | undefined;

  constructor(
    private readonly d: Pick<ClusterUpgradeData, "session" | "options" | "report" | "settled">,
    private readonly clock?: ProbeClock,
  ) {}

  private async targets(): Promise<ProbeTarget[]> {
    const { session } = this.d;
    const { reading } = await this.d.settled();
    const targets: ProbeTarget[] = [];
    for (const n of reading.nodes) {
      if (n.role !== "control-plane" || !n.apiServerEndpoint) continue;
      const url = `https://${n.apiServerEndpoint}`;
      const access = new NodeClusterAccess(session.hostOf(n.name), {
        requestTimeoutMs: PROBE_TIMEOUT_MS,
      });
      targets.push(readyzTarget(n.name, url, await access.clientFor(ADMIN_CONF, { server: url })));
    }
    const first = session.firstControlPlane.name;
    const stableURL = currentEntries(await session.adminConf(), ADMIN_CONF).cluster.server ?? "";
    const access = new NodeClusterAccess(session.hostOf(first), {
      requestTimeoutMs: PROBE_TIMEOUT_MS,
    });
    targets.push(stableTarget(stableURL, await access.clientFor(ADMIN_CONF)));
    return targets;
  }

  async start(): Promise<void> {
    const probes = this.d.options.apiProbes;
    if (!probes || this.prober) return;
    const log = this.d.session.reporter;
    // Clients first: a failure there leaves nothing behind in the cluster.
    const targets = await this.targets();
    await createProbeObjects(await this.d.session.adminClient());
    this.prober = new ApiProber(targets, {
      intervalMs: probes.intervalMs,
      timeoutMs: PROBE_TIMEOUT_MS,
      during: () => this.d.report.current(),
      ...(this.clock ? { clock: this.clock } : {}),
    });
    this.prober.start();
    for (const t of targets) {
      log.info(`[probes] ${endpointLabel(t)} ${t.url}: ${t.checks} every ${probes.intervalMs} ms`);
    }
  }

  async stop(): Promise<ApiTimeline | undefined> {
    const prober = this.prober;
    if (!prober) return undefined;
    this.prober = undefined;
    const timeline = await prober.stop();
    const log = this.d.session.reporter;
    for (const e of timeline.endpoints) {
      log.info(
        `[probes] ${endpointLabel(e)}: ${e.samples} samples, ${e.failures} failed, longest outage ${e.longestOutageSeconds} s`,
      );
      for (const o of e.outages) log.info(`[probes] outage: ${describeOutage(e, o)}`);
    }
    if (this.d.options.apiProbes?.keep) {
      log.info(`[probes] --keep-probes: the namespace ${PROBE_NAMESPACE} is kept`);
      return timeline;
    }
    try {
      await removeProbeObjects(await this.d.session.adminClient());
    } catch (e) {
      log.warn(
        `[probes] could not remove the namespace ${PROBE_NAMESPACE}: ${(e as Error).message.split("\n")[0]}; run "kubectl delete namespace ${PROBE_NAMESPACE}"`,
      );
    }
    return timeline;
  }
}
