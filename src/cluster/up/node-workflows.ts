import type { ConfigDocuments, InitConfig } from "../../config/types.js";
import type { Release } from "../../config/release.js";
import { initNodeChecks } from "../../node/preflight/init-checks.js";
import { joinNodeChecks } from "../../node/preflight/join-checks.js";
import { runChecks, type Check } from "../../node/preflight/checks.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import type { Host } from "../../remote/host.js";
import type { Reporter } from "../../workflow/reporter.js";
import { PhaseError, type PhaseTiming } from "../../workflow/runner.js";
import { prepareInit, type PreparedInit } from "../init.js";
import { pinDiscovery, prepareJoin, type PreparedJoin } from "../join.js";

// One node's kubeadm workflow run in-process against its Host: the same prepareInit/prepareJoin
// the `init` and `join` commands use, fed with the documents `up` built for the node. A node's
// workflow is prepared once and serves both preflight passes and the run.

export interface NodeTarget {
  host: Host;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  now?: () => Date;
}

export interface NodeRunResult {
  timings: PhaseTiming[];
  /** What the workflow printed as its result (join commands); never logged as is. */
  output: string;
}

/** A workflow's output, kept for the result instead of printed (it holds the token). */
class Output {
  text = "";
  readonly write = (t: string) => void (this.text += t);
}

function request(target: NodeTarget, documents: ConfigDocuments, stdout: (t: string) => void) {
  return {
    config: { documents, source: `the kubeadm configuration of ${target.host.name}` },
    host: target.host,
    dryRun: false,
    reporter: target.reporter,
    env: target.env,
    stdout,
    ...(target.now ? { now: target.now } : {}),
  };
}

/** The first control plane's init, prepared from its documents; run later, or only checked. */
export interface InitWork {
  prepared: PreparedInit;
  output: Output;
}

/**
 * Prepares init (nothing runs, nothing is written). With `renderInto`, a dry run: the node's
 * files are rendered into that folder on the runner (render-init.ts).
 */
export async function prepareNodeInit(
  target: NodeTarget,
  documents: ConfigDocuments,
  opts: { uploadCerts: boolean; renderInto?: string },
): Promise<InitWork> {
  const output = new Output();
  const prepared = await prepareInit({
    ...request(target, documents, output.write),
    ...(opts.renderInto !== undefined
      ? { dryRun: true, dryRunDir: opts.renderInto, stdout: () => {} }
      : {}),
    flags: { uploadCerts: opts.uploadCerts },
  });
  return { prepared, output };
}

/** Runs the prepared init, or only the named phases of it (`filterPhases`). */
export async function runInit(
  work: InitWork,
  opts: { filterPhases?: string[]; skipPhases?: string[] } = {},
): Promise<NodeRunResult> {
  const { prepared } = work;
  try {
    await prepared.runner.run(prepared.data, {
      skipPhases: [...new Set([...prepared.skipPhases, ...(opts.skipPhases ?? [])])],
      ...(opts.filterPhases ? { filterPhases: opts.filterPhases } : {}),
      dryRun: prepared.data.dryRun,
    });
  } finally {
    prepared.data.keys.discard();
  }
  return { timings: [...prepared.runner.timings], output: work.output.text };
}

/** A node's join, prepared from its documents before the cluster exists (its CA pin comes later). */
export interface JoinWork {
  prepared: PreparedJoin;
  output: Output;
}

export async function prepareNodeJoin(
  target: NodeTarget,
  documents: ConfigDocuments,
): Promise<JoinWork> {
  const output = new Output();
  const prepared = await prepareJoin({ ...request(target, documents, output.write), flags: {} });
  return { prepared, output };
}

/** Runs the prepared join, its discovery pinned to the cluster's CAs. */
export async function runJoin(
  work: JoinWork,
  caCertHashes: readonly string[],
): Promise<NodeRunResult> {
  const { prepared } = work;
  pinDiscovery(prepared.data, caCertHashes);
  try {
    await prepared.runner.run(prepared.data, { skipPhases: prepared.skipPhases });
  } finally {
    prepared.data.keys.discard();
  }
  return { timings: [...prepared.runner.timings], output: work.output.text };
}

/**
 * Which checks a preflight pass runs. `beforePreparation`: only those whose answer node
 * preparation cannot change (ports, files and folders in the way, the machine's size, proxy
 * settings), quietly: the full pass after preparation prints their warnings.
 */
export interface PreflightPass {
  beforePreparation?: boolean;
}

/**
 * kubeadm checks node preparation has no part in: what is in the way (a port taken, a manifest,
 * kubelet.conf or CA already there, a non-empty etcd folder), the machine itself, the proxy.
 * The rest (binaries, kubelet version, runtime, swap, kernel settings) are what preparation sets.
 */
const INDEPENDENT_OF_PREPARATION =
  /^(Port-\d+|FileAvailable-.*|DirAvailable-.*|NumCPU|Mem|Hostname|HTTPProxy|HTTPProxyCIDR|IsPrivilegedUser|KubernetesVersion|Firewalld)$/i;

export function independentOfPreparation(checkName: string): boolean {
  return INDEPENDENT_OF_PREPARATION.test(checkName);
}

function selectedFor(pass: PreflightPass) {
  const out = (log: Reporter) =>
    pass.beforePreparation
      ? { info: () => {}, warn: () => {} }
      : { info: (l: string) => log.info(l), warn: (l: string) => log.warn(l) };
  const keep = (checks: Check[]) =>
    pass.beforePreparation ? checks.filter((c) => independentOfPreparation(c.name())) : checks;
  return { out, keep };
}

/** A failure reads as the workflow's own would: "error execution phase preflight: ...". */
async function asPreflightPhase(checks: () => Promise<void>): Promise<void> {
  try {
    await checks();
  } catch (e) {
    throw new PhaseError("preflight", e);
  }
}

/**
 * Init's checks on the first control plane before `up` changes any host. Not its image pull:
 * node preparation's pulls may still run; init's own preflight, once up has waited for them,
 * finds the images there.
 */
export async function preflightInit(
  target: NodeTarget,
  work: InitWork,
  pass: PreflightPass = {},
): Promise<void> {
  const { data } = work.prepared;
  const { out: outFor, keep } = selectedFor(pass);
  const out = outFor(target.reporter);
  await asPreflightPhase(async () => {
    // kubeadm: the root check alone first (RunRootCheckOnly), then the node checks.
    await runChecks(keep([isPrivilegedUserCheck(target.host)]), data.ignorePreflightErrors, out);
    await runChecks(
      keep(await initNodeChecks(data, { warn: out.warn })),
      data.ignorePreflightErrors,
      out,
    );
  });
}

/** The cluster init is about to create, as join's checks need it (no API to ask yet). */
export interface ClusterView {
  cfg: InitConfig;
  release: Release;
  proxyEnv: Readonly<Record<string, string>>;
}

/**
 * Join's node checks before the cluster exists (`up` checks every host before it changes any):
 * the cluster's configuration is the one init is about to create, so the checks need no API.
 */
export async function preflightJoin(
  target: NodeTarget,
  work: JoinWork,
  cluster: ClusterView,
  pass: PreflightPass = {},
): Promise<void> {
  const { data } = work.prepared;
  const { host } = target;
  const { out: outFor, keep } = selectedFor(pass);
  const out = outFor(target.reporter);
  const input = { cfg: cluster.cfg, release: cluster.release, host, proxyEnv: cluster.proxyEnv };
  const checks = [
    isPrivilegedUserCheck(host),
    ...(await joinNodeChecks(
      { join: data.cfg, host, proxyEnv: data.proxyEnv },
      {
        warn: out.warn,
        kubeadm: { version: cluster.cfg.cluster.kubernetesVersion, release: cluster.release },
      },
    )),
  ];
  if (data.cfg.join.controlPlane) {
    const downloadCerts = data.certificateKey !== undefined;
    checks.push(
      ...(await initNodeChecks(input, {
        secondaryControlPlane: true,
        downloadCerts,
        warn: out.warn,
      })),
    );
  }
  await asPreflightPhase(() => runChecks(keep(checks), data.ignorePreflightErrors, out));
}
