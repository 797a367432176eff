import { writeRunnerFile } from "../remote/runner-files.js";
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { basename, join, relative, sep } from "node:path";
import { collectDiagnostics } from "../cluster/diagnostics.js";
import { redactSecrets } from "../cluster/diagnostics/redact.js";
import { down } from "../cluster/down.js";
import { connectNode } from "../cluster/connect.js";
import { isDockerNode } from "../cluster/docker-nodes.js";
import { readMarker } from "../cluster/node-state.js";
import { DEFAULT_CLUSTER_NAME } from "../config/cluster/defaults.js";
import type { ClusterNodeSpec, ClusterSpec, ClusterSshSpec } from "../config/cluster/types.js";
import { failuresOf, fleet, FleetError } from "../remote/fleet.js";
import { closeHosts, type Host } from "../remote/host.js";
import { stopLocalRegistry } from "../cluster/local-registry.js";
import { stopTunnelProcess } from "../cluster/tunnel.js";
import { saveArtifacts } from "./artifact-cache.js";
import { saveNodeImage } from "./node-image-cache.js";
import {
  clusterFromInputs,
  readInputs,
  SECRET_INPUTS,
  stateDirOf,
  registryStateFile,
  tunnelStateFile,
  type ActionInputs,
} from "./inputs.js";
import { parseNodeNames, REACHED_STATE, UNREACHABLE_STATE } from "./main-state.js";
import * as core from "./core.js";
import { GitHubReporter } from "./reporter.js";
import { selfHostedRunner, teardownScope } from "./teardown-scope.js";
import { upgradeReportFiles } from "./state-folder.js";
import { debugOn } from "./debug.js";
import { tracedHost } from "../remote/trace.js";
import { artifactURL, diagnosticsHTML } from "./summary.js";

// The action's post step (action.yml `post`). It runs after the job's other steps, with the same
// inputs as the main step (GitHub passes the same INPUT_* variables, defaults evaluated again, so
// job-status is the job's status now) and the main step's saved state (state-dir, phase,
// outcome — never a secret). When the main step failed or did not finish, or a later step of the
// job failed (the user's tests against the cluster), it collects every node's diagnostics into
// RUNNER_TEMP/kubeforge-<name>-diagnostics, prints their tails, and uploads the folder as an
// artifact (helm/kind-action exports nothing and deletes the nodes: engineering notes, "No logs
// when it matters"). Then it tears down what the `teardown` input says. Nothing here fails the
// job: problems are warnings, and a teardown that failed names the hosts it left behind.

/** Lines of each collected file printed in the job log (the whole files are in the artifact). */
const PRINTED_LINES = 40;

/** Every credential a Cluster carries: cut from collected files, masked in the log. */
function specSecrets(spec: ClusterSpec | undefined, inputs: ActionInputs | undefined): string[] {
  const out: string[] = [];
  const add = (ssh: Partial<ClusterSshSpec> | undefined) => {
    for (const s of [ssh?.privateKey, ssh?.passphrase, ssh?.password, ssh?.sudoPassword]) {
      if (s) out.push(s);
    }
  };
  add(spec?.ssh);
  for (const node of spec?.nodes ?? []) add(node.ssh);
  if (inputs?.sshPrivateKey) out.push(inputs.sshPrivateKey);
  return out;
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** A host the main step could not connect to: the post step does not go through the retries again. */
class NotReachedByMain extends Error {
  constructor(node: string) {
    super(
      `the main step could not connect to ${node} (its error is in kubeforge.log); not tried again`,
    );
  }
}

/** Node connections, opened once and shared by diagnostics and teardown. */
class Connections {
  private readonly open = new Map<string, Promise<Host>>();

  constructor(
    private readonly spec: ClusterSpec,
    private readonly log: (line: string) => void,
    /** Nodes the main step tried and failed to connect to. */
    private readonly unreachableInMain: ReadonlySet<string>,
    /** Debug logs: each host's commands (remote/trace.ts). */
    private readonly trace?: (line: string) => void,
  ) {}

  private async openHost(node: ClusterNodeSpec): Promise<Host> {
    const host = await connectNode(this.spec, node, {
      readFile: (p) => readFile(p),
      env: process.env,
      log: this.log,
    });
    const { trace } = this;
    return trace ? tracedHost(host, (line) => trace(`${node.name}: ${line}`)) : host;
  }

  connect = (node: ClusterNodeSpec): Promise<Host> => {
    let host = this.open.get(node.name);
    if (!host) {
      host = this.unreachableInMain.has(node.name)
        ? Promise.reject(new NotReachedByMain(node.name))
        : this.openHost(node);
      // A failed connection is remembered, not tried again by the next user (teardown after
      // diagnostics): one round of retries per host is enough. Handled here; callers see it.
      host.catch(() => undefined);
      this.open.set(node.name, host);
    }
    return host;
  };

  async closeAll(): Promise<void> {
    const hosts = await Promise.all([...this.open.values()].map((h) => h.catch(() => undefined)));
    await closeHosts(hosts.filter((h): h is Host => h !== undefined));
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

async function printTails(outDir: string, files: string[]): Promise<void> {
  const byGroup = new Map<string, string[]>();
  for (const f of files) {
    // <node>/... are a node's files; files at the top are kubeforge's own (its phase log).
    const parts = relative(outDir, f).split(sep);
    const group = parts.length > 1 ? parts[0]! : "kubeforge";
    byGroup.set(group, [...(byGroup.get(group) ?? []), f]);
  }
  for (const [group, groupFiles] of byGroup) {
    await core.group(`kubeforge diagnostics: ${group}`, async () => {
      const lines: string[] = [];
      const others: string[] = [];
      for (const f of groupFiles) {
        const name = relative(outDir, f);
        // Logs tell what happened; manifests and configuration are for reading in the artifact.
        if (!/\.(log|txt)$/.test(name)) {
          others.push(name);
          continue;
        }
        const text = (await readFile(f, "utf8")).replace(/\n$/, "");
        const all = text === "" ? [] : text.split("\n");
        const shown = all.slice(-PRINTED_LINES);
        const skipped = all.length - shown.length;
        lines.push(
          `==> ${name}${skipped > 0 ? ` (last ${shown.length} of ${all.length} lines)` : ""} <==`,
          ...shown,
          "",
        );
      }
      if (others.length > 0) lines.push(`Also collected: ${others.join(", ")}`);
      core.printInert(lines);
    });
  }
}

/** Where the diagnostics went: an artifact, or why none (the folder stays on the runner). */
type Upload = { artifact: { name: string; id?: number; bytes?: number } } | { notUploaded: string };

async function upload(name: string, outDir: string, files: string[]): Promise<Upload> {
  const env = process.env;
  if (!env.ACTIONS_RUNTIME_TOKEN || !env.ACTIONS_RESULTS_URL) {
    core.notice(
      `kubeforge: the diagnostics are in ${outDir} on the runner (not uploaded as an artifact: ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL are only set when GitHub Actions runs the action)`,
    );
    return { notUploaded: "this is not a GitHub Actions run (no ACTIONS_RUNTIME_TOKEN)" };
  }
  const { DefaultArtifactClient } = await import("@actions/artifact");
  const client = new DefaultArtifactClient();
  const attempt = async (artifact: string): Promise<Upload> => {
    const r = await client.uploadArtifact(artifact, files, outDir);
    core.info(
      `kubeforge: diagnostics uploaded as the artifact "${artifact}" (${r.size ?? 0} bytes)`,
    );
    return {
      artifact: {
        name: artifact,
        ...(r.id !== undefined ? { id: r.id } : {}),
        ...(r.size !== undefined ? { bytes: r.size } : {}),
      },
    };
  };
  let error: unknown;
  try {
    return await attempt(name);
  } catch (e) {
    error = e;
  }
  // Artifact names are unique per workflow run: matrix jobs building clusters of one name
  // collide. One retry under a name of this job's own.
  if (/already exists|Conflict|409/i.test(messageOf(error))) {
    try {
      return await attempt(`${name}-${env.GITHUB_JOB ?? "job"}-${randomBytes(3).toString("hex")}`);
    } catch (e) {
      error = e;
    }
  }
  core.warning(
    `kubeforge: the diagnostics could not be uploaded (${messageOf(error)}); they are in ${outDir} on the runner`,
  );
  return { notUploaded: `the upload failed (${messageOf(error)})` };
}

/** The post step's job summary: why diagnostics were collected and the artifact's link. */
async function summarize(
  cluster: string,
  reason: string,
  files: number,
  uploaded: Upload,
  redact: (text: string) => string,
): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) return; // outside GitHub: no summary file
  const env = process.env;
  const html = diagnosticsHTML(
    "artifact" in uploaded
      ? {
          cluster,
          reason,
          files,
          artifact: {
            ...uploaded.artifact,
            ...(artifactURL(uploaded.artifact.id, env)
              ? { url: artifactURL(uploaded.artifact.id, env)! }
              : {}),
          },
        }
      : { cluster, reason, files, notUploaded: uploaded.notUploaded },
    env,
  );
  await core.summary.addRaw(redact(html)).write();
}

interface Collect {
  spec: ClusterSpec | undefined;
  name: string;
  stateDir: string | undefined;
  connections: Connections | undefined;
  secrets: string[];
  /** Why they are collected, for the summary ("the main step failed (in join)"). */
  reason: string;
  reporter: GitHubReporter;
}

async function collect({
  spec,
  name,
  stateDir,
  connections,
  secrets,
  reason,
  reporter,
}: Collect): Promise<void> {
  const outDir = stateDirOf(`${name}-diagnostics`, process.env);
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true, mode: 0o700 });
  if (spec && connections) {
    await fleet(
      spec.nodes,
      (n) => n.name,
      async (node) => {
        let host: Host;
        try {
          host = await connections.connect(node);
        } catch (e) {
          // The main step's own error already named a host it could not reach.
          const say = e instanceof NotReachedByMain ? core.info : core.warning;
          say(`kubeforge: no diagnostics from ${node.name}: ${messageOf(e)}`);
          const note = `# kubeforge diagnostics: could not connect to ${node.name}: ${messageOf(e)}\n`;
          await mkdir(join(outDir, node.name), { recursive: true });
          const file = join(outDir, node.name, "connection.txt");
          await writeRunnerFile(file, redactSecrets(note, secrets), 0o600);
          return;
        }
        await collectDiagnostics(host, node.name, {
          outDir,
          secrets,
          log: (line) => core.info(`kubeforge: ${line}`),
        });
      },
      { concurrency: spec.concurrency },
    ).catch((e: unknown) => core.warning(`kubeforge: diagnostics incomplete: ${messageOf(e)}`));
  }
  // kubeforge's own phase log from the main step (the reporter already replaced known secrets).
  const log = stateDir
    ? await readFile(join(stateDir, "kubeforge.log"), "utf8").catch(() => undefined)
    : undefined;
  if (log !== undefined) {
    await writeRunnerFile(join(outDir, "kubeforge.log"), redactSecrets(log, secrets), 0o600);
  }
  // The upgrade rehearsal's report and JUnit (upgrade-to), with every node's steps and backups.
  for (const file of stateDir ? Object.values(upgradeReportFiles(stateDir)) : []) {
    const text = await readFile(file, "utf8").catch(() => undefined);
    if (text !== undefined) {
      await writeRunnerFile(join(outDir, basename(file)), redactSecrets(text, secrets), 0o600);
    }
  }
  const files = await filesUnder(outDir);
  if (files.length === 0) {
    core.info("kubeforge: no diagnostics could be collected");
    return;
  }
  await printTails(outDir, files);
  const uploaded = await upload(`kubeforge-${name}-diagnostics`, outDir, files);
  await summarize(name, reason, files.length, uploaded, (t) => reporter.redact(t)).catch(
    (e: unknown) =>
      core.warning(`kubeforge: the job summary could not be written: ${messageOf(e)}`),
  );
}

async function teardown(
  spec: ClusterSpec,
  inputs: ActionInputs,
  connections: Connections,
  reporter: GitHubReporter,
  /** Nodes the main step connected to: the only ones it can have changed. */
  reachedByMain: ReadonlySet<string>,
): Promise<void> {
  const { covered, kept } = teardownScope(spec.nodes, inputs.teardown, process.env);
  if (kept.length > 0) {
    core.info(
      `kubeforge: teardown ${inputs.teardown} keeps ${kept.map((n) => `${n.name} (${n.host})`).join(", ")}`,
    );
  }
  if (inputs.teardown === "auto" && selfHostedRunner(process.env)) {
    core.info("kubeforge: a self-hosted runner outlives the job: teardown auto resets it too");
  }
  if (covered.length === 0) return;
  await core.group("kubeforge: teardown", async () => {
    // Only hosts kubeforge set up for this cluster are reset: a host the main step refused
    // (another cluster's, or kubeadm's own) is someone else's.
    // Docker nodes are ours by their containers' labels (down removes only what carries them),
    // with or without a marker: a container the main step made before any marker goes too.
    const ours = new Set<string>(covered.filter(isDockerNode).map((n) => n.name));
    const unreachable = await failuresOf(
      fleet(
        covered.filter((n) => !isDockerNode(n)),
        (n) => n.name,
        async (node) => {
          const marker = await readMarker(await connections.connect(node));
          if (marker?.cluster === spec.name) ours.add(node.name);
          else if (marker) {
            core.info(`${node.name}: left alone: it belongs to the cluster "${marker.cluster}"`);
          } else
            core.info(`${node.name}: nothing of kubeforge's on it (no node marker); left as it is`);
        },
        { concurrency: spec.concurrency },
      ),
    );
    const nodes = spec.nodes.filter((n) => ours.has(n.name));
    // A host the main step never reached holds nothing of this run's: not "left behind".
    for (const u of unreachable.filter((f) => !reachedByMain.has(f.name))) {
      core.info(
        `${u.name}: left as it is: the main step could not connect to it, so nothing of this run's is there`,
      );
    }
    let failed = unreachable.filter((f) => reachedByMain.has(f.name));
    if (nodes.length > 0) {
      try {
        await down({
          spec: { ...spec, nodes },
          connect: connections.connect,
          reporter,
          dryRun: false,
        });
        core.info(`kubeforge: reset ${nodes.map((n) => n.name).join(", ")}`);
      } catch (e) {
        failed = [
          ...failed,
          ...(e instanceof FleetError
            ? e.failures
            : [{ name: nodes.map((n) => n.name).join(", "), error: e }]),
        ];
      }
    }
    if (failed.length > 0) {
      const detail = failed.map((f) => ` - ${f.name}: ${messageOf(f.error)}`).join("\n");
      core.warning(
        `kubeforge: teardown failed; these hosts were left behind: ${failed.map((f) => f.name).join(", ")}\n${detail}`,
      );
    }
  });
}

async function post(): Promise<void> {
  const reporter = new GitHubReporter();
  for (const name of SECRET_INPUTS) reporter.mask(core.getInput(name, { trimWhitespace: false }));
  let inputs: ActionInputs;
  try {
    inputs = readInputs((n) => core.getInput(n, { trimWhitespace: false }));
  } catch (e) {
    // The main step stopped at the same problem, before it touched any host: nothing new to say.
    core.info(`kubeforge post: ${messageOf(e)}; nothing to collect or tear down`);
    return;
  }
  // The folder the main step claimed; none when it stopped before (then none of its files exist).
  const stateDir = core.getState("state-dir") || undefined;
  const outcome = core.getState("outcome");
  const phase = core.getState("phase");
  const reachedByMain = parseNodeNames(core.getState(REACHED_STATE));
  const unreachableInMain = parseNodeNames(core.getState(UNREACHABLE_STATE));
  const mainFailed = outcome !== "success";
  // The user's own steps against the cluster failing is when logs matter most.
  const jobFailed = inputs.jobStatus === "failure" || inputs.jobStatus === "cancelled";
  const failed = mainFailed || jobFailed;

  let spec: ClusterSpec | undefined;
  try {
    spec = (await clusterFromInputs(inputs, process.env)).spec;
  } catch (e) {
    if (mainFailed && reachedByMain.size === 0) {
      // The main step failed on this very problem before it reached a host.
      core.info(`kubeforge post: ${messageOf(e)}; nothing to collect or tear down`);
      return;
    }
    core.warning(`kubeforge post: ${messageOf(e)}; no node can be reached`);
  }
  const secrets = specSecrets(spec, inputs);
  for (const s of secrets) reporter.mask(s);
  const name = spec?.name ?? inputs.name ?? DEFAULT_CLUSTER_NAME;
  const mainFailure = `the main step ${outcome === "failure" ? "failed" : "did not finish"}${phase ? ` (in ${phase})` : ""}`;

  // A good run's downloads, kept for the next run (after the job's own steps, off their path).
  const artifactCache = core.getState("artifact-cache");
  const version = core.getState("kubernetes-version");
  if (!mainFailed && !inputs.dryRun && artifactCache !== "" && version !== "") {
    await saveArtifacts(
      process.env,
      version,
      artifactCache === "miss" ? undefined : artifactCache,
      (l) => core.info(`kubeforge: ${l}`),
    );
  }
  if (!mainFailed && !inputs.dryRun && spec) {
    await saveNodeImage(spec, core.getState("node-image-cache"), process.env, (l) =>
      core.info(`kubeforge: ${l}`),
    );
  }
  if (inputs.dryRun) {
    // Nothing was changed on a node: their files say nothing new. Why the plan failed is in
    // kubeforge's own log.
    if (mainFailed) {
      core.info(`kubeforge: ${mainFailure}: collecting its log`);
      try {
        await collect({
          spec: undefined,
          name,
          stateDir,
          connections: undefined,
          secrets,
          reason: mainFailure,
          reporter,
        });
      } catch (e) {
        core.warning(`kubeforge: diagnostics could not be collected: ${messageOf(e)}`);
      }
    }
    core.info(
      `kubeforge: dry run: nothing was changed, nothing to tear down${stateDir ? `; files in ${stateDir}` : ""}`,
    );
    return;
  }
  if (inputs.installOnly) {
    core.info("kubeforge: install-only: no cluster was built, nothing to collect or tear down");
    return;
  }
  // Only the hosts the main step tried: one it never connected to holds nothing of this run's
  // (it stopped before, e.g. at another cluster's state folder), and is left alone.
  const tried = (n: ClusterNodeSpec) => reachedByMain.has(n.name) || unreachableInMain.has(n.name);
  const untried = spec?.nodes.filter((n) => !tried(n)) ?? [];
  if (spec && untried.length > 0) {
    core.info(
      `kubeforge: the main step did not connect to ${untried.map((n) => n.name).join(", ")}: nothing of this run's is there, left alone`,
    );
    spec = { ...spec, nodes: spec.nodes.filter(tried) };
  }
  const connections =
    spec && spec.nodes.length > 0
      ? new Connections(
          spec,
          (line) => core.info(line),
          unreachableInMain,
          debugOn(inputs.verbosity, core.isDebug()) ? (line) => core.info(line) : undefined,
        )
      : undefined;
  try {
    if (failed) {
      const reason = mainFailed
        ? mainFailure
        : inputs.jobStatus === "cancelled"
          ? "the job was cancelled"
          : "a later step of the job failed";
      core.info(`kubeforge: ${reason}: collecting diagnostics`);
      try {
        await collect({ spec, name, stateDir, connections, secrets, reason, reporter });
      } catch (e) {
        core.warning(`kubeforge: diagnostics could not be collected: ${messageOf(e)}`);
      }
    }
    if (spec && connections) {
      await teardown(spec, inputs, connections, reporter, reachedByMain);
    }
  } finally {
    await connections?.closeAll();
    // The job's steps are over: the runner-side tunnel to the API servers is not needed.
    if (stateDir && (await stopTunnelProcess(tunnelStateFile(stateDir)).catch(() => false))) {
      core.info("kubeforge: the tunnel to the API servers was stopped");
    }
    // Nor the local registry (a registry:2 container goes with the docker nodes, too).
    const registry = stateDir
      ? await stopLocalRegistry(registryStateFile(stateDir)).catch(() => undefined)
      : undefined;
    if (registry) core.info(`kubeforge: removed ${registry}`);
  }
}

try {
  await post();
} catch (error) {
  // A post step never fails the job: whatever went wrong is a warning.
  core.warning(`kubeforge post: ${messageOf(error)}`);
}
