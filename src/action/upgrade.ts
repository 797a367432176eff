import { readFile, rm } from "node:fs/promises";
import semver from "semver";
import type { ClusterPorts } from "../cluster/ports.js";
import type { UpNode } from "../cluster/up/index.js";
import type { ClusterReading, UpgradeOptions } from "../cluster/upgrade/data.js";
import { upgradeCluster } from "../cluster/upgrade/index.js";
import { planUpgrade, renderUpgradePlan, versionRefusal } from "../cluster/upgrade/policy.js";
import { resolveRoute } from "../cluster/upgrade/route.js";
import { stableTimeline } from "../cluster/upgrade/probes/timeline.js";
import { thresholdsError, type UpgradeReport } from "../cluster/upgrade/report.js";
import type { ClusterSpec } from "../config/cluster/types.js";
import { CI_VERSION_PREFIX } from "../config/versions.js";
import { resolveKubernetesVersion } from "../node/release-version.js";
import type { Reporter } from "../workflow/reporter.js";
import * as core from "./core.js";
import { upgradeReportFiles } from "./state-folder.js";
import type { UpgradeSummary } from "./summary.js";
import type { ActionUpgrade } from "./upgrade-inputs.js";
import { nodeTimings } from "./upgrade-summary.js";

// The upgrade rehearsal in the action's main step (upgrade-to): the cluster `up` built is
// upgraded by the same workflow as `kubeforge upgrade -f cluster.yaml --to V` (cluster/upgrade),
// its report and JUnit written into the state folder, the outputs set from the report whatever
// the outcome. A dry run prints the plan the upgrade would follow and changes nothing.

/** The CLI's --node-timeout default (cli/upgrade-cluster.ts). */
const NODE_TIMEOUT_MS = 15 * 60_000;

/** The hop settled before anything is built: both versions exact, and how to upgrade. */
export interface UpgradeHop {
  /** The version the cluster is built at (kubernetes-version resolved). */
  from: string;
  /** upgrade-to resolved. */
  to: string;
  /** upgrade-via: every hop's target, resolved, the last one `to`. */
  hops?: string[];
  upgrade: ActionUpgrade;
  /** upgrade-to is a CI build (ci/…). */
  ciBuild?: boolean;
}

interface HopRequest {
  spec: ClusterSpec;
  upgrade: ActionUpgrade;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
}

/**
 * upgrade-to resolved and checked against the version the cluster is built at, before any host
 * is contacted: a pre-release, a downgrade or more than one minor is refused with one sentence
 * naming the input (the upgrade's own plan checks the cluster again once it is built).
 */
export async function settleHop({ spec, upgrade, reporter, env }: HopRequest): Promise<UpgradeHop> {
  const resolve = (version: string, field?: string, allowCI = false) =>
    resolveKubernetesVersion(version, {
      env,
      fetch: globalThis.fetch,
      warn: (m) => reporter.warn(m),
      ...(field ? { field } : {}),
      allowCI,
    });
  // The Cluster's kubernetesVersion (the input's, when given), as `up` resolves it.
  const from = (await resolve(spec.kubernetesVersion)).version;
  const target = await resolve(upgrade.to, "input upgrade-to", true);
  const to = target.version;
  // A CI build is a pre-release asked for by name; other pre-releases are not the action's.
  if (semver.prerelease(to) && !target.ciBuild) {
    throw new Error(
      `input upgrade-to: ${to} is a pre-release; the action upgrades to releases and to Kubernetes' CI builds (ci/latest-1.37) only (kubeforge upgrade -f --allow-experimental-upgrades does other pre-releases); nothing was changed`,
    );
  }
  const ci = target.ciBuild ? { ciBuild: true } : {};
  if (upgrade.via !== undefined) {
    const names = { to: "upgrade-to", via: "upgrade-via" };
    const hops = await resolveRoute(
      spec.name,
      from,
      to,
      upgrade.via,
      async (v, field) => (await resolve(v, `input ${field}`)).version,
      names,
    ).catch((e: unknown) => {
      throw new Error(`input upgrade-via: ${(e as Error).message}; nothing was changed`, {
        cause: e,
      });
    });
    return { from, to, hops, upgrade, ...ci };
  }
  const refusal = versionRefusal(spec.name, from, to, "upgrade-to", "upgrade-via");
  if (refusal) throw new Error(`input upgrade-to: ${refusal}; nothing was changed`);
  return { from, to, upgrade, ...ci };
}

function optionsOf(hop: UpgradeHop): UpgradeOptions {
  return {
    // A CI build goes on as one: the run takes its binaries and images from the CI locations.
    to: hop.ciBuild ? `${CI_VERSION_PREFIX}${hop.to}` : hop.to,
    // The route settled already: each hop exact, so the run resolves nothing again.
    ...(hop.hops ? { via: hop.hops.slice(0, -1) } : {}),
    workerBatch: hop.upgrade.workerBatch,
    drainTimeoutMs: hop.upgrade.drainTimeoutMs,
    nodeTimeoutMs: NODE_TIMEOUT_MS,
    allowExperimentalUpgrades: false,
    allowRCUpgrades: false,
    ...hop.upgrade.probes,
    ...(hop.upgrade.kubeletBinary !== undefined
      ? { kubeletBinary: hop.upgrade.kubeletBinary }
      : {}),
  };
}

export interface UpgradeRequest {
  spec: ClusterSpec;
  reporter: Reporter;
  hop: UpgradeHop;
  ports: ClusterPorts;
  stateDir: string;
  /** The step's log groups so far (GitHubReporter.steps): where the upgrade's begin. */
  stepsSoFar: number;
}

/** What the summary needs, and the failure to fail the step with (after the summary). */
export interface UpgradeOutcome {
  summary: UpgradeSummary;
  error?: Error;
}

async function readReport(path: string): Promise<UpgradeReport | undefined> {
  const text = await readFile(path, "utf8").catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as UpgradeReport);
}

/**
 * upgrade-result, upgrade-from, upgrade-report, node-timings, api-downtime-seconds (the longest
 * outage through the stable endpoint, what upgrade-max-api-downtime holds), workload-error-rate
 * (the highest of the probed workloads) and, once upgraded (or through a hop of upgrade-via),
 * kubernetes-version.
 */
function setOutputs(report: UpgradeReport, reportPath: string): void {
  core.setOutput("upgrade-result", report.result);
  core.setOutput("upgrade-from", report.from);
  core.setOutput("upgrade-report", reportPath);
  core.setOutput("node-timings", JSON.stringify(nodeTimings(report)));
  const stable = stableTimeline(report.api);
  if (stable) core.setOutput("api-downtime-seconds", String(stable.longestOutageSeconds));
  const workloads = report.workloads?.workloads ?? [];
  if (workloads.length > 0) {
    core.setOutput("workload-error-rate", String(Math.max(...workloads.map((w) => w.errorRate))));
  }
  const reached = versionReached(report);
  if (reached !== undefined) core.setOutput("kubernetes-version", reached);
}

/**
 * The version the run left the cluster at: the target unless it failed (a threshold exceeded
 * fails the step after the upgrade finished); a chained run that failed still moved the cluster
 * through the hops that succeeded; undefined when none did.
 */
export function versionReached(report: UpgradeReport): string | undefined {
  return report.result !== "failed"
    ? report.to
    : report.hops?.filter((h) => h.result === "succeeded").at(-1)?.to;
}

/** `kubeforge upgrade -f`'s workflow on the cluster; its report and JUnit in the state folder. */
function runUpgrade(req: UpgradeRequest, planOnly: boolean) {
  const files = upgradeReportFiles(req.stateDir);
  return upgradeCluster({
    spec: req.spec,
    ports: req.ports,
    reporter: req.reporter,
    options: optionsOf(req.hop),
    planOnly,
    dryRun: false,
    reportPath: files.report,
    junitPath: files.junit,
  });
}

/** The built cluster upgraded; the outputs set from the report even when the run failed. */
export async function upgradeBuiltCluster(req: UpgradeRequest): Promise<UpgradeOutcome> {
  const files = upgradeReportFiles(req.stateDir);
  // An earlier run's report is not this one's: a run refused by its plan writes none.
  await Promise.all([rm(files.report, { force: true }), rm(files.junit, { force: true })]);
  let error: Error | undefined;
  try {
    await runUpgrade(req, false);
  } catch (e) {
    error = e instanceof Error ? e : new Error(String(e));
  }
  const report = await readReport(files.report);
  if (report) {
    setOutputs(report, files.report);
    req.reporter.info(
      `[upgrade] cluster "${req.spec.name}" ${report.result === "failed" ? "not upgraded" : "upgraded"} from ${report.from} to ${report.to} in ${report.durationSeconds}s; the report is ${files.report}, its JUnit ${files.junit}`,
    );
    if (report.result === "thresholds-violated") error ??= thresholdsError(report, files.report);
  } else if (error) core.setOutput("upgrade-result", "failed");
  const summary = { firstStep: req.stepsSoFar, ...(report ? { report } : {}) };
  return error === undefined ? { summary } : { summary, error };
}

/** What the cluster would run once `up` built it: every node at `from`, Ready. */
function readingOfBuild(spec: ClusterSpec, from: string): ClusterReading {
  return {
    clusterVersion: from,
    nodes: spec.nodes.map((n) => ({
      name: n.name,
      role: n.role,
      kubeletVersion: from,
      ready: true,
      ...(n.role === "control-plane" ? { apiServerVersion: from } : {}),
    })),
    etcdProblem: undefined,
    addons: {},
  };
}

/**
 * Dry run: the plan the upgrade would follow. A cluster that exists already (every node
 * "none" in up's plan) is read as `kubeforge upgrade --plan` reads it; one still to be built is
 * planned from the Cluster, every node at the version it would be built at.
 */
export async function planClusterUpgrade(
  req: UpgradeRequest & { planned: readonly UpNode[] },
): Promise<UpgradeOutcome> {
  const built = req.planned.length > 0 && req.planned.every((n) => n.action === "none");
  const first = req.hop.hops?.[0] ?? req.hop.to;
  const plan = built
    ? (await runUpgrade(req, true)).plan
    : {
        ...planUpgrade(
          req.spec.name,
          readingOfBuild(req.spec, req.hop.from),
          first,
          req.hop.upgrade.workerBatch,
        ),
        ...(req.hop.hops ? { hops: req.hop.hops } : {}),
        ...(req.hop.ciBuild && first === req.hop.to ? { ciBuild: true } : {}),
      };
  const text = renderUpgradePlan(plan);
  for (const line of text.trimEnd().split("\n")) req.reporter.info(`[upgrade] ${line}`);
  core.setOutput("upgrade-from", plan.from);
  return { summary: { firstStep: req.stepsSoFar, plan: text } };
}
