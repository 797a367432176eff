import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { ClusterSpec } from "../../config/cluster/types.js";
import { resolveKubernetesVersion } from "../../node/release-version.js";
import type { Reporter } from "../../workflow/reporter.js";
import { PhaseError, Runner } from "../../workflow/runner.js";
import type { ClusterPorts } from "../ports.js";
import { ClusterSession } from "../session.js";
import type {
  ClusterUpgradeData,
  ProbeResults,
  UpgradeOptions,
  UpgradePlan,
  UpgradeSettled,
} from "./data.js";
import { clusterUpgradePhases, DRY_RUN_PHASES, onlyPhases, PLAN_PHASES } from "./phases.js";
import { planUpgrade, refusals } from "./policy.js";
import { addonImages, readCluster, refuseUnfinishedHosts } from "./read.js";
import { SessionProbes } from "./probes/index.js";
import { junitXML, ReportRecorder, type UpgradeReport } from "./report.js";
import { HostUpgradeWork } from "./work.js";

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

/** The reading, the target and the plan: once per run (ClusterUpgradeData.settled). */
async function settle(
  d: Pick<ClusterUpgradeData, "session" | "ports" | "reporter" | "options" | "report">,
): Promise<UpgradeSettled> {
  const { spec } = d.session;
  const inventory = await d.session.inventory();
  refuseUnfinishedHosts(inventory, spec.name);
  const resolved = await resolveKubernetesVersion(d.options.to, {
    warn: (m) => d.reporter.warn(m),
    env: d.ports.env,
    fetch: d.ports.fetch,
    field: "--to",
  });
  const reading = await readCluster(d.session, inventory);
  const problems = refusals(spec.name, reading, resolved.version, d.options);
  if (problems.length > 0) {
    throw new Error(
      `cannot upgrade the cluster "${spec.name}" to ${resolved.version}; nothing was changed:\n${problems.map((p) => ` - ${p}`).join("\n")}`,
    );
  }
  const plan = planUpgrade(spec.name, reading, resolved.version, d.options.workerBatch);
  d.report.from = plan.from;
  d.report.to = plan.to;
  d.report.addons.coredns.before = reading.addons.coredns;
  d.report.addons.kubeProxy.before = reading.addons.kubeProxy;
  for (const n of reading.nodes) {
    const node = d.report.node(n.name, n.role);
    if (n.kubeletVersion) node.kubeletBefore = n.kubeletVersion;
  }
  return { reading, plan, inventory };
}

/** The addons' image tags as the run leaves them. */
async function recordAddonsAfter(session: ClusterSession, report: ReportRecorder): Promise<void> {
  const after = await addonImages(await session.adminClient());
  report.addons.coredns.after = after.coredns;
  report.addons.kubeProxy.after = after.kubeProxy;
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
  runner.selected(runOpts);
  const session = new ClusterSession(req.spec, req.ports, req.reporter);
  const report = new ReportRecorder(req.spec.name);
  report.thresholds = req.options.thresholds ?? {};
  let settled: Promise<UpgradeSettled> | undefined;
  const base = {
    session,
    ports: req.ports,
    reporter: req.reporter,
    options: req.options,
    dryRun: req.dryRun,
    dryRunDir: req.dryRunDir,
    report,
    settled: () => (settled ??= settle(base)),
  };
  const work = new HostUpgradeWork(base);
  const probes = new SessionProbes(base);
  const data: ClusterUpgradeData = { ...base, work, probes };
  const realRun = !req.planOnly && !req.dryRun;
  let failure: unknown;
  try {
    await runner.run(data, runOpts);
    const plan = (await data.settled()).plan;
    if (!realRun) return { plan };
    ({ api: report.api, workloads: report.workloads } = await probes.stop());
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
      await work.uncordonAll();
      // A refusal (the plan failed) changed nothing: no report of a run that did not happen.
      if (
        settled &&
        (await settled.then(
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
