import { writeRunnerFile } from "../remote/runner-files.js";
import { mkdir, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { clusterPorts } from "../cluster/ports.js";
import { up, type UpResult } from "../cluster/up/index.js";
import { restoreArtifacts } from "./artifact-cache.js";
import { restoreNodeImage } from "./node-image-cache.js";
import { DEFAULT_CLUSTER_NAME } from "../config/cluster/defaults.js";
import type { ClusterSpec, ClusterSshSpec } from "../config/cluster/types.js";
import type { UpgradeReport } from "../cluster/upgrade/report.js";
import {
  clusterFromInputs,
  fallbackStateDir,
  readInputs,
  SECRET_INPUTS,
  stateDirOf,
  registryStateFile,
  tunnelStateFile,
  type ActionInputs,
} from "./inputs.js";
import { causeChain, debugOn } from "./debug.js";
import { checkInputImages, loadInputImages } from "./images.js";
import { installTools, kubectlSkewWarning } from "./tools.js";
import { resolveKubernetesVersion } from "../node/release-version.js";
import { kubeletVersions } from "./kubelet-versions.js";
import { HostRecord } from "./main-state.js";
import { savePlan } from "./plan.js";
import { interruptOnSignals, interruption } from "../remote/interruption.js";
import * as core from "./core.js";
import { GitHubReporter } from "./reporter.js";
import { claimStateFolder } from "./state-folder.js";
import { summaryHTML, type SummaryInput } from "./summary.js";
import {
  planClusterUpgrade,
  settleHop,
  upgradeBuiltCluster,
  versionReached,
  type UpgradeRequest,
} from "./upgrade.js";

// The action's main step: `kubeforge up` for the Cluster the inputs describe (one node on the
// runner by default, or the hosts of a Cluster file over SSH), admin.conf in the state folder
// RUNNER_TEMP/kubeforge-<name>, KUBECONFIG exported, outputs set, a job summary. A dry run
// writes the plan and renders the first control plane's init there, and sets the outputs from
// those files. Secrets are registered with the runner before anything could print them; saved
// state holds none.

/** Registers every credential a Cluster carries (private key, passphrase, passwords). */
function maskSpecSecrets(spec: ClusterSpec, reporter: GitHubReporter): void {
  const maskSsh = (ssh: Partial<ClusterSshSpec> | undefined) => {
    for (const s of [ssh?.privateKey, ssh?.passphrase, ssh?.password, ssh?.sudoPassword]) {
      if (s) reporter.mask(s);
    }
  };
  maskSsh(spec.ssh);
  for (const node of spec.nodes) maskSsh(node.ssh);
}

/** dist/cli.js, next to this bundle (dist/main.js). */
function siblingCli(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "cli.js");
}

/** Dry run: each node's kubeadm documents as plan/<node>.yaml, the rendered init in plan/<node>/. */
const planDirOf = (stateDir: string) => join(stateDir, "plan");

/** Set once the step wrote its summary: a failure after it (a failed upgrade) adds none. */
let summaryWritten = false;

async function writeSummary(reporter: GitHubReporter, s: SummaryInput): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) return; // outside GitHub: no summary file
  // Nothing secret is put in; redaction is the second line of defence.
  await core.summary.addRaw(reporter.redact(summaryHTML(s))).write();
  summaryWritten = true;
}

/** kubeforge and kubectl on PATH for the next steps; with `kubectl`, its failure is only a warning. */
async function toolsOnPath(
  reporter: GitHubReporter,
  spec: ClusterSpec,
  kubernetesVersion: string | undefined,
  opts: { required: boolean },
): Promise<void> {
  const request = {
    env: process.env,
    cliPath: siblingCli(),
    spec,
    log: (l: string) => reporter.info(l),
  };
  let dir: string;
  try {
    dir = await installTools({
      ...request,
      ...(kubernetesVersion !== undefined ? { kubernetesVersion } : {}),
    });
  } catch (e) {
    if (opts.required) throw e;
    reporter.warn(
      `[tools] kubectl ${kubernetesVersion} could not be put on PATH (the runner's own kubectl, if any, stays): ${(e as Error).message}`,
    );
    dir = await installTools(request);
  }
  core.addPath(dir);
}

/**
 * The kubectl to put on PATH: the kubectl-version input's, resolved, with a warning when it is
 * outside kubectl's skew from the cluster's version; else `fallback`.
 */
async function kubectlVersionOf(
  reporter: GitHubReporter,
  inputs: ActionInputs,
  clusterVersion: string,
  fallback: string | undefined,
): Promise<string | undefined> {
  if (inputs.kubectlVersion === undefined) return fallback;
  const { version } = await resolveKubernetesVersion(inputs.kubectlVersion, {
    env: process.env,
    fetch: globalThis.fetch,
    warn: (m) => reporter.warn(m),
    field: "input kubectl-version",
  });
  const skew = kubectlSkewWarning(version, clusterVersion);
  if (skew) reporter.warn(skew);
  return version;
}

/** install-only: the tools on PATH, for the cluster's version; no host is contacted. */
async function installOnly(
  reporter: GitHubReporter,
  inputs: ActionInputs,
  spec: ClusterSpec,
): Promise<void> {
  const { version } = await resolveKubernetesVersion(spec.kubernetesVersion, {
    env: process.env,
    fetch: globalThis.fetch,
    warn: (m) => reporter.warn(m),
  });
  const kubectl = (await kubectlVersionOf(reporter, inputs, version, version))!;
  await toolsOnPath(reporter, spec, kubectl, { required: true });
  core.setOutput("kubernetes-version", version);
  reporter.info(
    `[kubeforge] install-only: kubeforge and kubectl ${kubectl} are on PATH; no cluster was built`,
  );
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

interface DryRunEnd {
  spec: ClusterSpec;
  stateDir: string;
  result: UpResult;
  /** What every summary of this step shows. */
  common: Omit<SummaryInput, "nodes">;
  /** With upgrade-to: the upgrade to plan. */
  upgrading: Omit<UpgradeRequest, "stepsSoFar"> | undefined;
}

/** A dry run's outputs from the plan and the rendered init, then the upgrade's plan. */
async function finishDryRun(
  reporter: GitHubReporter,
  { spec, stateDir, result, common, upgrading }: DryRunEnd,
): Promise<void> {
  const saved = { planFile: join(stateDir, "plan.yaml"), nodeDir: planDirOf(stateDir) };
  const nodes = await savePlan(result.plan, saved);
  const rendered = result.renderedInit;
  core.setOutput("kubernetes-version", result.kubernetesVersion);
  core.setOutput("api-server", result.apiServer);
  core.setOutput("nodes", JSON.stringify(nodes));
  core.setOutput("plan", saved.planFile);
  core.setOutput("plan-dir", saved.nodeDir);
  if (rendered) {
    // What a real run would hand over, from the rendered files; masked as in a real run.
    const adminConf = await readFile(rendered.adminConfPath, "utf8");
    reporter.maskKubeconfig(adminConf);
    reporter.mask(result.joinCommand);
    core.setOutput("kubeconfig", rendered.adminConfPath);
    core.setOutput("admin-conf", adminConf);
    core.setOutput("join-command", result.joinCommand);
    core.setOutput("token", result.token);
    core.setOutput("ca-cert-hash", result.caCertHash);
    core.setOutput("certificate-key", result.certificateKey ?? "");
  }
  await toolsOnPath(reporter, spec, undefined, { required: true });
  reporter.info(
    `[kubeforge] dry run: the plan is in ${saved.planFile}${rendered ? `; the first control plane's init is rendered beside it, admin.conf in ${rendered.adminConfPath}` : ""}`,
  );
  const upgrade = upgrading
    ? await planClusterUpgrade({ ...upgrading, stepsSoFar: reporter.steps.length, planned: nodes })
    : undefined;
  await writeSummary(reporter, {
    ...common,
    nodes,
    ...(upgrade ? { upgrade: upgrade.summary } : {}),
  });
}

async function run(
  reporter: GitHubReporter,
  inputs: ActionInputs,
  { spec, source }: { spec: ClusterSpec; source: string },
  stateDir: string,
) {
  if (inputs.installOnly) return installOnly(reporter, inputs, spec);
  const debug = debugOn(inputs.verbosity, core.isDebug());
  reporter.info(
    `[kubeforge] cluster "${spec.name}" from ${source}: ${spec.nodes.length} node${spec.nodes.length === 1 ? "" : "s"}${inputs.dryRun ? " (dry run: nothing is changed)" : ""}; files in ${stateDir}`,
  );
  const kubeconfigPath = join(stateDir, "admin.conf");
  // upgrade-to is checked against the version to build before anything is built.
  const hop = inputs.upgrade
    ? await settleHop({ spec, upgrade: inputs.upgrade, reporter, env: process.env })
    : undefined;
  if (!inputs.dryRun && spec.prepare.enabled) {
    // Release artifacts from an earlier run; the post step saves them after a good run.
    const restored = await restoreArtifacts(process.env, spec.kubernetesVersion, (l) =>
      reporter.info(l),
    );
    // "miss" or the key restored; absent: node preparation is off, nothing to cache.
    core.saveState("artifact-cache", restored ?? "miss");
  }
  if (!inputs.dryRun) {
    // kubeforge's node image for docker nodes, from an earlier run's cache.
    core.saveState(
      "node-image-cache",
      await restoreNodeImage(spec, process.env, (l) => reporter.info(l)),
    );
  }
  // The plan folder is this action's own: an earlier dry run's plan and rendering go.
  if (inputs.dryRun) await rm(planDirOf(stateDir), { recursive: true, force: true });
  // Which hosts this step reached: the post step tears down only what it may have changed.
  const hostRecord = new HostRecord((name, value) => core.saveState(name, value));
  // The runner-side tunnel is the CLI bundle next to this one, detached; it outlives the step
  // (the runner ends a job's leftover processes when the job ends).
  const ports = clusterPorts({
    spec,
    reporter,
    env: process.env,
    cliPath: siblingCli(),
    tunnelStateFile: tunnelStateFile(stateDir),
    registryStateFile: registryStateFile(stateDir),
    trackConnect: (connect) => hostRecord.track(connect),
    ...(debug ? { trace: (line: string) => reporter.info(line) } : {}),
  });
  const upgrading = hop ? { spec, reporter, hop, ports, stateDir } : undefined;
  const result = await up({
    spec,
    ports,
    reporter,
    dryRun: inputs.dryRun,
    kubeconfigPath,
    // A dry run renders the first control plane's init here, on the runner.
    renderInitDir: (node) => join(planDirOf(stateDir), node),
    // The same step again after a failed or interrupted upgrade resumes it.
    ...(hop ? { upgradingTo: hop.to } : {}),
  });
  core.saveState("kubernetes-version", result.kubernetesVersion);
  // up registered the token and certificate key when it made them; the rest is new here.
  reporter.mask(result.token);
  if (result.certificateKey) reporter.mask(result.certificateKey);
  if (result.joinCommand) reporter.mask(result.joinCommand);

  // The step's process started with it: from there to a cluster that passed up's readiness gate.
  const readyMs = performance.now();
  const common = {
    cluster: spec.name,
    dryRun: inputs.dryRun,
    kubernetesVersion: result.kubernetesVersion,
    apiServer: result.apiServer,
    steps: reporter.steps,
    env: process.env,
  };
  if (inputs.dryRun) {
    await finishDryRun(reporter, { spec, stateDir, result, common, upgrading });
    return;
  }

  const adminConf = await readFile(kubeconfigPath, "utf8");
  reporter.maskKubeconfig(adminConf);
  core.setOutput("kubeconfig", kubeconfigPath);
  core.setOutput("admin-conf", adminConf);
  core.setOutput("api-server", result.apiServer);
  core.setOutput("kubernetes-version", result.kubernetesVersion);
  core.setOutput("nodes", JSON.stringify(result.nodes));
  core.setOutput("join-command", result.joinCommand);
  core.setOutput("token", result.token);
  core.setOutput("ca-cert-hash", result.caCertHash);
  core.setOutput("certificate-key", result.certificateKey ?? "");
  core.setOutput("registry", result.registry?.host ?? "");
  core.setOutput("registry-for-nodes", result.registry?.servers.join(",") ?? "");
  core.exportVariable("KUBECONFIG", kubeconfigPath);
  await loadInputImages(inputs.loadImages, spec, ports.connect, reporter);
  // kubectl from the download node preparation made (cached): none when preparation is off,
  // whose hosts were prepared elsewhere and whose runner may reach no release server, unless
  // kubectl-version asks for one.
  const kubectl = await kubectlVersionOf(
    reporter,
    inputs,
    result.kubernetesVersion,
    spec.prepare.enabled ? result.kubernetesVersion : undefined,
  ).catch((e: unknown) => {
    reporter.warn(`[tools] ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  });
  await toolsOnPath(reporter, spec, kubectl, { required: false });
  for (const n of result.nodes) {
    reporter.info(
      `[kubeforge] ${n.name}: ${n.role}, ${n.address}, ${n.action === "none" ? "already part of the cluster" : n.action}`,
    );
  }
  reporter.info(
    `[kubeforge] cluster "${spec.name}" (Kubernetes ${result.kubernetesVersion}) is ready at ${result.apiServer}; KUBECONFIG=${kubeconfigPath}`,
  );
  const upgraded = upgrading
    ? await upgradeBuiltCluster({ ...upgrading, stepsSoFar: reporter.steps.length })
    : undefined;
  // What each kubelet reports (a custom kubelet's own version); the summary only, never fatal.
  const versions = await kubeletVersions(adminConf, kubeconfigPath).catch((e: unknown) => {
    reporter.info(
      `[kubeforge] the nodes' kubelet versions could not be read: ${e instanceof Error ? e.message : String(e)}`,
    );
    return new Map<string, string>();
  });
  await writeSummary(reporter, {
    ...common,
    ...withVersionReached(upgraded?.summary.report),
    nodes: result.nodes,
    kubeletVersions: versions,
    phases: result.timings,
    readyMs,
    ...(upgraded ? { upgrade: upgraded.summary } : {}),
    ...(upgraded?.error !== undefined ? { error: reporter.redact(messageOf(upgraded.error)) } : {}),
  });
  if (upgraded?.error !== undefined) throw upgraded.error;
}

/** The summary's Kubernetes version after an upgrade that moved the cluster. */
function withVersionReached(report: UpgradeReport | undefined): { kubernetesVersion?: string } {
  const reached = report ? versionReached(report) : undefined;
  return reached !== undefined ? { kubernetesVersion: reached } : {};
}

async function main(): Promise<void> {
  const reporter = new GitHubReporter({ onGroup: (title) => core.saveState("phase", title) });
  interruptOnSignals((line) => core.info(line));
  // Secret inputs are registered before the inputs are even checked: nothing can print them first.
  for (const name of SECRET_INPUTS) reporter.mask(core.getInput(name, { trimWhitespace: false }));
  let stateDir: string | undefined;
  let inputs: ActionInputs | undefined;
  let clusterName: string | undefined;
  try {
    inputs = readInputs((name) => core.getInput(name, { trimWhitespace: false }));
    // The Cluster first: its name names the state folder. A Cluster that cannot be read still
    // gets its log written (in the name input's folder, or the default's) before the step fails.
    // Images and archives to load are checked with the Cluster, before anything is written.
    const toLoad = inputs.loadImages;
    const loaded = await clusterFromInputs(inputs, process.env, {
      warn: (m) => reporter.warn(m),
    })
      .then(async (cluster) => {
        await checkInputImages(toLoad);
        return cluster;
      })
      .then(
        (cluster) => ({ cluster }),
        (error: unknown) => ({ error }),
      );
    if ("cluster" in loaded) {
      maskSpecSecrets(loaded.cluster.spec, reporter);
      clusterName = loaded.cluster.spec.name;
    }
    const dir = clusterName
      ? stateDirOf(clusterName, process.env)
      : fallbackStateDir(inputs, process.env);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Another cluster's folder is refused before its log or admin.conf is overwritten.
    if ("cluster" in loaded) await claimStateFolder(dir, loaded.cluster.spec);
    stateDir = dir;
    const logFile = join(stateDir, "kubeforge.log");
    await writeRunnerFile(logFile, "", 0o600);
    reporter.logTo(logFile);
    core.saveState("state-dir", stateDir);
    if ("error" in loaded) throw loaded.error;
    await run(reporter, inputs, loaded.cluster, stateDir);
    core.saveState("outcome", "success");
  } catch (error) {
    core.saveState("outcome", "failure");
    const failure = error instanceof Error ? error.message : String(error);
    // Cancelled with the job: say so first; the commands' own errors follow.
    const message = interruption.aborted
      ? `${(interruption.reason as Error).message}: ${failure}`
      : failure;
    reporter.record(`ERROR: ${message}`);
    if (debugOn(inputs?.verbosity, core.isDebug())) {
      // Printed through the reporter: the runner masks what it registered, the log file too.
      for (const line of causeChain(error)) reporter.info(`[debug] ${line}`);
    }
    if (!summaryWritten) {
      await writeSummary(reporter, {
        cluster: clusterName ?? inputs?.name ?? DEFAULT_CLUSTER_NAME,
        dryRun: inputs?.dryRun ?? false,
        steps: reporter.steps,
        error: reporter.redact(message),
        env: process.env,
      }).catch(() => undefined);
    }
    // A non-Error throw must fail the step too.
    core.setFailed(message);
  }
}

await main();
