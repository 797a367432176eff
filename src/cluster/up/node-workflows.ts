import type { InitConfig } from "../../config/types.js";
import type { Release } from "../../config/release.js";
import { initNodeChecks } from "../../node/preflight/init-checks.js";
import { joinNodeChecks } from "../../node/preflight/join-checks.js";
import { runChecks, type Check } from "../../node/preflight/checks.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import type { Host } from "../../remote/host.js";
import type { Reporter } from "../../workflow/reporter.js";
import { PhaseError, type PhaseTiming } from "../../workflow/runner.js";
import { prepareInit, type PreparedInit } from "../init.js";
import { prepareJoin } from "../join.js";

// One node's kubeadm workflow run in-process against its Host: the same prepareInit/prepareJoin
// the `init` and `join` commands use, fed with the documents `up` generated for the node.

export interface NodeRun {
  host: Host;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  /** The kubeadm documents for this node (kubeadm-documents.ts). */
  documents: string;
  now?: () => Date;
}

export interface NodeRunResult {
  timings: PhaseTiming[];
  /** What the workflow printed as its result (join commands); never logged as is. */
  output: string;
}

function request(run: NodeRun, collect: (text: string) => void) {
  return {
    config: { text: run.documents, source: `the kubeadm configuration of ${run.host.name}` },
    host: run.host,
    dryRun: false,
    reporter: run.reporter,
    env: run.env,
    stdout: collect,
    ...(run.now ? { now: run.now } : {}),
  };
}

/** init, or only the named phases of it (`filterPhases`). */
export async function runInit(
  run: NodeRun,
  opts: { uploadCerts: boolean; filterPhases?: string[] },
): Promise<NodeRunResult> {
  let output = "";
  const prepared = await prepareInit({
    ...request(run, (t) => (output += t)),
    flags: { uploadCerts: opts.uploadCerts },
  });
  try {
    await prepared.runner.run(prepared.data, {
      skipPhases: prepared.skipPhases,
      ...(opts.filterPhases ? { filterPhases: opts.filterPhases } : {}),
    });
  } finally {
    prepared.data.keys.discard();
  }
  return { timings: prepared.runner.timings, output };
}

export async function runJoin(run: NodeRun): Promise<NodeRunResult> {
  let output = "";
  const prepared = await prepareJoin({ ...request(run, (t) => (output += t)), flags: {} });
  try {
    await prepared.runner.run(prepared.data, { skipPhases: prepared.skipPhases });
  } finally {
    prepared.data.keys.discard();
  }
  return { timings: prepared.runner.timings, output };
}

/** The first control plane's configuration as init would use it, without running anything. */
export async function prepareFirstControlPlane(run: NodeRun): Promise<PreparedInit> {
  return prepareInit({ ...request(run, () => {}), flags: {} });
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

/**
 * Init's checks on the first control plane before `up` changes any host. Not its image pull:
 * node preparation's pulls may still run; init's own preflight, once up has waited for them,
 * finds the images there.
 */
export async function preflightInit(run: NodeRun, pass: PreflightPass = {}): Promise<void> {
  const prepared = await prepareInit({ ...request(run, () => {}), flags: {} });
  prepared.data.keys.discard();
  const { out: outFor, keep } = selectedFor(pass);
  const out = outFor(run.reporter);
  const ignore = prepared.data.ignorePreflightErrors;
  await asPreflightPhase(async () => {
    // kubeadm: the root check alone first (RunRootCheckOnly), then the node checks.
    await runChecks(keep([isPrivilegedUserCheck(run.host)]), ignore, out);
    await runChecks(keep(await initNodeChecks(prepared.data, { warn: out.warn })), ignore, out);
  });
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
 * Join's node checks before the cluster exists (`up` checks every host before it changes any):
 * the cluster's configuration is the one init is about to create, so the checks need no API.
 */
export async function preflightJoin(
  run: NodeRun,
  cluster: { cfg: InitConfig; release: Release; proxyEnv: Readonly<Record<string, string>> },
  pass: PreflightPass = {},
): Promise<void> {
  const prepared = await prepareJoin({ ...request(run, () => {}), flags: {} });
  prepared.data.keys.discard();
  const { host } = run;
  const { out: outFor, keep } = selectedFor(pass);
  const out = outFor(run.reporter);
  const ignore = prepared.data.ignorePreflightErrors;
  const input = { cfg: cluster.cfg, release: cluster.release, host, proxyEnv: cluster.proxyEnv };
  const checks = [
    isPrivilegedUserCheck(host),
    ...(await joinNodeChecks(
      { join: prepared.data.cfg, host, proxyEnv: prepared.data.proxyEnv },
      { warn: out.warn, kubeadmMinor: cluster.release.minor },
    )),
  ];
  if (prepared.data.cfg.join.controlPlane) {
    const downloadCerts = prepared.data.certificateKey !== undefined;
    checks.push(
      ...(await initNodeChecks(input, {
        secondaryControlPlane: true,
        downloadCerts,
        warn: out.warn,
      })),
    );
  }
  await asPreflightPhase(() => runChecks(keep(checks), ignore, out));
}
