import { mkdtemp } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import type { UpgradeOptions } from "../cluster/upgrade/data.js";
import { upgradeCluster } from "../cluster/upgrade/index.js";
import { clusterUpgradePhases } from "../cluster/upgrade/phases.js";
import { renderUpgradePlan } from "../cluster/upgrade/policy.js";
import { thresholdsError } from "../cluster/upgrade/report.js";
import { DEFAULT_PROBE_INTERVAL, probeOptions } from "../cluster/upgrade/probes/options.js";
import { upgradeTargetVersion } from "../config/cluster/version.js";
import { viaOption } from "../cluster/upgrade/route.js";
import { parseGoDuration } from "../config/duration.js";
import { readInputFileSync } from "../remote/runner-files.js";
import type { Phase } from "../workflow/phase.js";
import { TerminalReporter } from "../workflow/reporter.js";
import { list, phaseTreeHelp } from "./options.js";
import { defaultKubeconfigPath, portsFor, readSpec } from "./up.js";

// `kubeforge upgrade -f cluster.yaml --to V`: the cluster-level upgrade rehearsal on the hosts
// of a Cluster file (src/cluster/upgrade). stdout carries the report's path (or the plan with
// --plan), as `up` prints admin.conf's; progress goes to stderr.

interface ClusterUpgradeCommandOptions {
  file?: string;
  to?: string;
  via?: string[];
  workerBatch?: number;
  drainTimeout: string;
  nodeTimeout: string;
  plan?: boolean;
  dryRun?: boolean;
  dryRunDir?: string;
  allowExperimentalUpgrades?: boolean;
  allowReleaseCandidateUpgrades?: boolean;
  skipPhases?: string[];
  phase?: string[];
  kubeletBinary?: string;
  report?: string;
  junit?: string;
  probe: string[];
  probeInterval: string;
  keepProbes?: boolean;
  probeManifest?: string;
  probeCommand?: string;
  settle?: string;
  maxApiDowntime?: string;
  maxWorkloadErrorRate?: string;
  maxWorkloadDowntime?: string;
}

const PROBE_FLAGS = {
  probes: "--probe",
  interval: "--probe-interval",
  maxApiDowntime: "--max-api-downtime",
  settle: "--settle",
  maxWorkloadErrorRate: "--max-workload-error-rate",
  maxWorkloadDowntime: "--max-workload-downtime",
  manifest: "--probe-manifest",
  command: "--probe-command",
};

function positive(value: string): number {
  if (!/^[1-9]\d*$/.test(value)) {
    throw new InvalidArgumentError(`"${value}" is not a whole number of at least 1`);
  }
  return Number(value);
}

/** --probe-manifest's file, read whole before any host is contacted. */
const probeManifest = (file: string) => ({
  path: resolve(file),
  read: (path: string) => readInputFileSync(path, "the probe manifest"),
});

/** Where the report goes by default: beside the admin.conf `up` wrote, one folder per cluster. */
export function defaultReportDir(name: string): string {
  return join(homedir(), ".kube", `kubeforge-${name}-upgrade`);
}

async function runClusterUpgrade(o: ClusterUpgradeCommandOptions): Promise<void> {
  if (o.file === undefined) {
    throw new Error(
      'kubeforge upgrade needs -f cluster.yaml and --to <version> to upgrade a whole cluster, or one of "plan", "diff", "apply", "node" to upgrade this node',
    );
  }
  if (o.to === undefined) throw new Error("--to <version> is required: the version to upgrade to");
  if (o.dryRunDir !== undefined && !o.dryRun) throw new Error("--dry-run-dir needs --dry-run");
  if (o.plan && o.dryRun)
    throw new Error("--plan and --dry-run do not go together: --dry-run plans too");
  if (o.phase && (o.plan || o.dryRun)) {
    throw new Error(
      `--phase does not go with ${o.plan ? "--plan" : "--dry-run"}: it changes the cluster`,
    );
  }
  const reporter = new TerminalReporter();
  const spec = await readSpec(o.file, reporter);
  const options: UpgradeOptions = {
    ...probeOptions(
      {
        probes: o.probe,
        interval: o.probeInterval,
        keep: o.keepProbes === true,
        ...(o.settle !== undefined ? { settle: o.settle } : {}),
        ...(o.maxApiDowntime !== undefined ? { maxApiDowntime: o.maxApiDowntime } : {}),
        ...(o.maxWorkloadErrorRate !== undefined
          ? { maxWorkloadErrorRate: o.maxWorkloadErrorRate }
          : {}),
        ...(o.maxWorkloadDowntime !== undefined
          ? { maxWorkloadDowntime: o.maxWorkloadDowntime }
          : {}),
        ...(o.probeManifest !== undefined ? { manifest: probeManifest(o.probeManifest) } : {}),
        ...(o.probeCommand !== undefined ? { command: o.probeCommand } : {}),
      },
      PROBE_FLAGS,
    ),
    // "1.36" means its newest patch, as in a Cluster's kubernetesVersion ("stable-1.36").
    to: upgradeTargetVersion(o.to, "--to"),
    ...(o.via !== undefined ? { via: viaOption(o.via, "--via") } : {}),
    workerBatch: o.workerBatch ?? 1,
    drainTimeoutMs: parseGoDuration(o.drainTimeout, "--drain-timeout"),
    nodeTimeoutMs: parseGoDuration(o.nodeTimeout, "--node-timeout"),
    allowExperimentalUpgrades: o.allowExperimentalUpgrades === true,
    allowRCUpgrades: o.allowReleaseCandidateUpgrades === true,
    ...(o.kubeletBinary !== undefined ? { kubeletBinary: o.kubeletBinary } : {}),
  };
  const reportDir = defaultReportDir(spec.name);
  const reportPath = resolve(o.report ?? join(reportDir, "upgrade-report.json"));
  const dryRunDir = o.dryRun
    ? resolve(o.dryRunDir ?? (await mkdtemp(join(tmpdir(), "kubeforge-upgrade-dryrun-"))))
    : undefined;
  const result = await upgradeCluster({
    spec,
    ports: portsFor(spec, reporter, resolve(defaultKubeconfigPath(spec.name))),
    reporter,
    options,
    planOnly: o.plan === true,
    dryRun: o.dryRun === true,
    ...(dryRunDir !== undefined ? { dryRunDir } : {}),
    ...(o.skipPhases ? { skipPhases: o.skipPhases } : {}),
    ...(o.phase ? { phases: o.phase } : {}),
    reportPath,
    junitPath: resolve(o.junit ?? join(reportDir, "junit-upgrade.xml")),
  });
  if (!result.report) {
    process.stdout.write(renderUpgradePlan(result.plan));
    if (dryRunDir !== undefined) {
      reporter.info(
        `[upgrade] dry run: the first control plane's upgrade apply is rendered under ${dryRunDir}`,
      );
    }
    return;
  }
  const { report } = result;
  reporter.info(
    o.phase
      ? `[upgrade] Phase(s) ${o.phase.join(", ")} of the upgrade of "${spec.name}" to ${report.to} done in ${report.durationSeconds}s`
      : `[upgrade] Cluster "${spec.name}" upgraded from ${report.from} to ${report.to} in ${report.durationSeconds}s`,
  );
  process.stdout.write(`${reportPath}\n`);
  if (report.result === "thresholds-violated") throw thresholdsError(report, reportPath);
}

/** The cluster-level options and action on `kubeforge upgrade` (its subcommands are node-level). */
export function addClusterUpgrade(upgrade: Command): void {
  const phases = clusterUpgradePhases() as Phase<unknown>[];
  upgrade
    .option("-f, --file <cluster.yaml>", "upgrade the whole cluster this Cluster file describes")
    .option(
      "--to <version>",
      "the version to upgrade to: exact (v1.36.2), minor (1.36) or label (stable-1.36)",
    )
    .option(
      "--via <versions>",
      "upgrade through these comma-separated versions first, one minor per hop, or auto (the newest patch of every minor in between)",
      list,
    )
    .option("--worker-batch <n>", "workers upgraded at once (default 1)", positive)
    .option("--drain-timeout <duration>", "per worker, for its drain to finish", "5m")
    .option(
      "--node-timeout <duration>",
      "per node, for its kubelet to come back Ready at the target",
      "15m",
    )
    .option("--plan", "connect, read the cluster, print the plan and stop; nothing changes")
    .option(
      "--dry-run",
      "print the plan and render the first control plane's upgrade apply; nothing changes",
    )
    .option("--dry-run-dir <dir>", "with --dry-run: where the rendering goes, in <dir>/<node>")
    .option("--allow-experimental-upgrades", "allow alpha, beta and release candidate targets")
    .option("--allow-release-candidate-upgrades", "allow release candidate targets")
    .option("--skip-phases <phases>", "comma-separated phases of the cluster upgrade to skip", list)
    .option(
      "--phase <phases>",
      "run only these comma-separated phases (after the plan, with the staging they need)",
      list,
    )
    .option(
      "--kubelet-binary <path|url>",
      "your kubelet build of the target for every node, instead of the released one (#sha256=<hex> pins a URL)",
    )
    .option(
      "--report <file>",
      "where upgrade-report.json goes (default ~/.kube/kubeforge-<name>-upgrade/)",
    )
    .option("--junit <file>", "where the JUnit XML goes (default beside the report)")
    .option(
      "--probe <probes>",
      "what to measure while the nodes change, a list: api (every control plane's /readyz, a read and a write through admin.conf's server), workload (a canary Deployment on the workers, asked over HTTP on its NodePort through the nodes the runner reaches, else through the API server's service proxy), dns (with workload: kubernetes.default looked up in a canary Pod), or none",
      (value: string) => list(value),
      ["api"],
    )
    .option(
      "--probe-interval <duration>",
      "how often each endpoint is probed",
      DEFAULT_PROBE_INTERVAL,
    )
    .option(
      "--probe-manifest <file>",
      "your workloads as the workload probe, instead of the canary: objects created when missing; each kubeforge.dev/probe-url annotation (an http(s) URL asked from the runner, or on a Service a path asked through the API server's service proxy) is probed, each Deployment's availability recorded",
    )
    .option(
      "--probe-command <command>",
      "a command /bin/sh runs on the runner every probe interval as the workload probe, instead of the canary; exit status 0 is up",
    )
    .option("--keep-probes", "keep the namespace kubeforge-probes the probes write in")
    .option(
      "--settle <duration>",
      "with the workload probe: how long the next worker batch waits for DaemonSets and the canary to be back (default 5m; then the run fails naming them)",
    )
    .option(
      "--max-api-downtime <duration>",
      "fail the run (after the upgrade) when the longest outage through admin.conf's server is longer",
    )
    .option(
      "--max-workload-error-rate <rate>",
      "fail the run (after the upgrade) when a probed workload failed a larger share of requests (0.01 or 1%)",
    )
    .option(
      "--max-workload-downtime <duration>",
      "fail the run (after the upgrade) when a probed workload's longest outage is longer",
    )
    .addHelpText(
      "after",
      `\nCluster upgrade phases (kubeforge upgrade -f), in order:\n${phaseTreeHelp(phases)}\n`,
    )
    .action((o: ClusterUpgradeCommandOptions) => runClusterUpgrade(o));
}
