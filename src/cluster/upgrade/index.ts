import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { ClusterSpec } from "../../config/cluster/types.js";
import { resolveKubernetesVersion } from "../../node/release-version.js";
import type { Reporter } from "../../workflow/reporter.js";
import { PhaseError, Runner } from "../../workflow/runner.js";
import type { ClusterPorts } from "../ports.js";
import { ClusterSession } from "../session.js";
import type {
  ClusterReading,
  ClusterUpgradeData,
  ProbeResults,
  UpgradeOptions,
  UpgradePlan,
  UpgradeProbes,
  UpgradeSettled,
} from "./data.js";
import { clusterUpgradePhases, DRY_RUN_PHASES, onlyPhases, PLAN_PHASES } from "./phases.js";
import { planUpgrade, refusals } from "./policy.js";
import { addonImages, readCluster, refuseUnfinishedHosts } from "./read.js";
import { SessionProbes } from "./probes/index.js";
import { junitXML, ReportRecorder, type UpgradeReport } from "./report.js";
import { resolveRoute, routeStart } from "./route.js";
import { DisruptionWatcher } from "./disruptions.js";
import { HostUpgradeWork } from "./work.js";
import { whenApiAnswers } from "../../kube/after-failure.js";
import { loadClientNode } from "../../kube/client.js";

// `kubeforge upgrade -f cluster.yaml --to V`: the cluster-level upgrade rehearsal. The hosts
// are connected and inspected, what the cluster runs is read, the target resolved and the plan
// settled (everything that cannot be upgraded refused with nothing changed), then the phases
// (phases.ts) change the nodes in kubeadm's order. Nodes the run cordoned are uncordoned on
// every way out; the report and its JUnit twin are written whatever the outcome.

export type { UpgradeOptions, UpgradePlan } from "./data.js";
export type { UpgradeReport } from "./report.js";

export interface ClusterUpgradeRequest {
  spec: ClusterSpec;
  ports: ClusterPorts;
  reporter: Reporter;
  options: UpgradeOptions;
  /** Stop after the plan (`--plan`). */
  planOnly: boolean;
  /** Plan, then render the first control plane's `upgrade apply` into dryRunDir/<node>. */
  dryRun: boolean;
  dryRunDir?: string;
  /** --skip-phases: this workflow's phase names. */
  skipPhases?: string[];
  /** --phase: run only these phases (with the plan and what they read). */
  phases?: string[];
  /** Where the report and the JUnit XML go (a real run). */
  reportPath: string;
  junitPath: string;
}

export interface ClusterUpgradeResult {
  plan: UpgradePlan;
  /** Absent for --plan and --dry-run. */
  report?: UpgradeReport;
}

/** A chained run's hops (route.ts), settled by its first hop's plan; absent without --via. */
interface Route {
  hops?: string[];
  /** The exact version of a --to that is a CI build. */
  ciBuild?: string;
}

const refused = (cluster: string, to: string, problems: string[]) =>
  new Error(
    `cannot upgrade the cluster "${cluster}" to ${to}; nothing was changed:\n${problems.map((p) => ` - ${p}`).join("\n")}`,
  );

/** A hop's target: an exact version, and whether it is a CI build (only --to may be one). */
interface HopTarget {
  version: string;
  ciBuild: boolean;
}

/** This hop's target: --to resolved, or with --via the hop's place on the route. */
async function hopTarget(
  d: Pick<ClusterUpgradeData, "session" | "ports" | "reporter" | "options">,
  reading: ClusterReading,
  route: Route,
  hop: number,
): Promise<HopTarget> {
  const atTo = (version: string) => ({ version, ciBuild: version === route.ciBuild });
  if (hop > 0) return atTo(route.hops![hop]!);
  const resolve = (version: string, field: string, allowCI = false) =>
    resolveKubernetesVersion(version, {
      warn: (m) => d.reporter.warn(m),
      env: d.ports.env,
      fetch: d.ports.fetch,
      field,
      allowCI,
    });
  const to = await resolve(d.options.to, "--to", true);
  if (to.ciBuild) {
    route.ciBuild = to.version;
    d.reporter.info(
      `[upgrade] ${d.options.to} is the CI build ${to.version} (${to.source}): its binaries come from the CI bucket, its control-plane images from the CI registry, and it implies --allow-experimental-upgrades`,
    );
  }
  if (d.options.via === undefined) return atTo(to.version);
  try {
    route.hops = await resolveRoute(
      d.session.spec.name,
      routeStart(reading),
      to.version,
      d.options.via,
      async (v, field) => (await resolve(v, field)).version,
    );
  } catch (e) {
    throw refused(d.session.spec.name, to.version, [(e as Error).message]);
  }
  return atTo(route.hops[0]!);
}

/** The reading, the target and the plan: once per hop (ClusterUpgradeData.settled). */
async function settle(
  d: Pick<ClusterUpgradeData, "session" | "ports" | "reporter" | "options" | "report">,
  route: Route,
  hop: number,
): Promise<UpgradeSettled> {
  const { spec } = d.session;
  const inspected = d.session.inventory();
  // The cluster is read beside the hosts' inspection (both only read); the reading counts once
  // every host is known to be a finished node of this cluster, and that refusal comes first.
  const read = readCluster(d.session, inspected);
  read.catch(() => {});
  const inventory = await inspected;
  refuseUnfinishedHosts(inventory, spec.name);
  const reading = await read;
  const { version: target, ciBuild } = await hopTarget(d, reading, route, hop);
  const problems = refusals(spec.name, reading, target, {
    ...d.options,
    // Kubernetes' CI builds are pre-releases: asking for one is the permission.
    allowExperimentalUpgrades: d.options.allowExperimentalUpgrades || ciBuild,
  });
  if (problems.length > 0) throw refused(spec.name, target, problems);
  const plan = planUpgrade(spec.name, reading, target, d.options.workerBatch);
  if (route.hops) plan.hops = route.hops;
  if (ciBuild) plan.ciBuild = true;
  // The report spans the run: where it started, where it ends, every hop on the way.
  if (hop === 0) {
    d.report.from = plan.from;
    d.report.to = route.hops?.at(-1) ?? plan.to;
    d.report.addons.coredns.before = reading.addons.coredns;
    d.report.addons.kubeProxy.before = reading.addons.kubeProxy;
    if (route.hops) d.report.route(route.hops);
  }
  d.report.startHop(hop, plan.from);
  for (const n of reading.nodes) {
    const node = d.report.node(n.name, n.role);
    if (n.kubeletVersion) node.kubeletBefore ??= n.kubeletVersion;
  }
  return { reading, plan, inventory };
}

/** The addons' image tags as the run leaves them (after a failure, once the API answers). */
async function recordAddonsAfter(session: ClusterSession, report: ReportRecorder): Promise<void> {
  const admin = await session.adminClient();
  const after = await whenApiAnswers("the API server to read the addons", () => addonImages(admin));
  report.addons.coredns.after = after.coredns;
  report.addons.kubeProxy.after = after.kubeProxy;
}

/** The workloads' disruptions watched from here on; a watch that cannot start is a warning. */
async function watchDisruptions(
  session: ClusterSession,
  report: ReportRecorder,
): Promise<DisruptionWatcher | undefined> {
  let watcher: DisruptionWatcher | undefined;
  try {
    watcher = new DisruptionWatcher({
      client: await session.adminClient(),
      during: () => report.current(),
    });
    await watcher.start();
    return watcher;
  } catch (e) {
    watcher?.stop();
    session.reporter.warn(
      `[probes] the workloads are not watched (no disruption accounting): ${(e as Error).message}`,
    );
    return undefined;
  }
}

/**
 * The run's probes as its phases use them: started once, by whoever asks first (the staging,
 * else the probes phase); a stop waits for a start still under way, so that what it makes is
 * stopped and removed too.
 */
export function probeControl(
  probes: Pick<SessionProbes, "start" | "stop" | "settle">,
  watch: () => Promise<DisruptionWatcher | undefined>,
  report: Pick<ReportRecorder, "disruptions">,
): UpgradeProbes {
  let starting: Promise<void> | undefined;
  let disruptions: DisruptionWatcher | undefined;
  return {
    start: () => {
      starting ??= (async () => {
        // The watch counts only Pods seen Ready and workloads seen available, so it starts
        // beside the probes: the canary they create is not counted as disrupted.
        const watching = watch();
        try {
          await probes.start();
        } finally {
          disruptions = await watching;
        }
      })();
      return starting;
    },
    stop: async () => {
      await starting?.catch(() => {});
      report.disruptions ??= disruptions?.stop();
      return probes.stop();
    },
    settle: (batch) => probes.settle(batch),
    evictionRefused: (pod, node, reason) => disruptions?.evictionRefused(pod, node, reason),
  };
}

async function writeReport(req: ClusterUpgradeRequest, report: UpgradeReport): Promise<void> {
  for (const [path, text] of [
    [req.reportPath, `${JSON.stringify(report, null, 2)}\n`],
    [req.junitPath, junitXML(report)],
  ] as const) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text, { mode: 0o644 });
  }
}

export async function upgradeCluster(req: ClusterUpgradeRequest): Promise<ClusterUpgradeResult> {
  // Every plan reads the cluster through the API: its client loads while the hosts connect.
  loadClientNode().catch(() => {});
  const runner = new Runner(clusterUpgradePhases(), req.reporter);
  const filterPhases = req.planOnly
    ? PLAN_PHASES
    : req.dryRun
      ? DRY_RUN_PHASES
      : req.phases && req.phases.length > 0
        ? onlyPhases(req.phases)
        : undefined;
  const runOpts = {
    skipPhases: req.skipPhases ?? [],
    ...(filterPhases ? { filterPhases } : {}),
    dryRun: req.dryRun,
  };
  // Names and skipped dependencies are checked before any host is contacted.
  const selected = runner.selected(runOpts);
  const session = new ClusterSession(req.spec, req.ports, req.reporter);
  const report = new ReportRecorder(req.spec.name);
  report.thresholds = req.options.thresholds ?? {};
  const route: Route = {};
  const hops: ClusterUpgradeData[] = [];
  let firstPlan: Promise<UpgradeSettled> | undefined;
  /** Hop `i`'s data: its own plan and work; the session, report and probes span the run. */
  const hopData = (i: number): ClusterUpgradeData => {
    let settled: Promise<UpgradeSettled> | undefined;
    const base = {
      session,
      ports: req.ports,
      reporter: req.reporter,
      options: req.options,
      dryRun: req.dryRun,
      dryRunDir: req.dryRunDir,
      report,
      selects: (phase: string) => selected.get(phase) === true,
      settled: () => {
        settled ??= settle(base, route, i);
        if (i === 0) firstPlan = settled;
        return settled;
      },
    };
    const data = { ...base, work: new HostUpgradeWork({ ...base, probes }), probes };
    hops.push(data);
    return data;
  };
  // The probes measure the whole run: started by the first hop that changes a node.
  const sessionProbes = new SessionProbes({
    session,
    options: req.options,
    report,
    settled: () => hops.at(-1)!.settled(),
  });
  const probes = probeControl(sessionProbes, () => watchDisruptions(session, report), report);
  const realRun = !req.planOnly && !req.dryRun;
  let failure: unknown;
  try {
    // One hop after another (--via); --plan, --dry-run and --phase go as far as the first.
    for (
      let i = 0;
      i === 0 || (realRun && !req.phases?.length && i < (route.hops?.length ?? 1));
      i++
    ) {
      // A later hop inspects the hosts again: the markers the hop before it left.
      if (i > 0) session.reinspect();
      await runner.run(hopData(i), runOpts);
      report.endHop(i);
    }
    const plan = (await hops[0]!.settled()).plan;
    if (!realRun) return { plan };
    ({ api: report.api, workloads: report.workloads, dns: report.dns } = await probes.stop());
    await recordAddonsAfter(session, report);
    return { plan, report: report.report() };
  } catch (e) {
    failure = e instanceof PhaseError ? e.cause : e;
    throw failure;
  } finally {
    if (realRun) {
      // After a failure the probes are stopped here; their timeline still goes into the report.
      const none: ProbeResults = {};
      const late = await probes.stop().catch(() => none);
      report.api ??= late.api;
      report.workloads ??= late.workloads;
      report.dns ??= late.dns;
      // A run that stopped before a node's turn leaves nothing started ahead running.
      for (const hop of hops) await hop.work.aheadSettled();
      for (const hop of hops) await hop.work.uncordonAll();
      // A refusal of the first plan changed nothing: no report of a run that did not happen.
      if (
        firstPlan &&
        (await firstPlan.then(
          () => true,
          () => false,
        ))
      ) {
        // A failed run records the addons it left too (a half-done hop may have changed them).
        if (failure !== undefined) {
          await recordAddonsAfter(session, report).catch((e: unknown) =>
            req.reporter.warn(
              `[upgrade] could not read the addons' images after the failure: ${(e as Error).message}`,
            ),
          );
        }
        await writeReport(req, report.report(failure));
      }
    }
    await session.close();
  }
}
