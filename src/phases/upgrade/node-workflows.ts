import type { ClusterAccess } from "../../kube/types.js";
import type { Host } from "../../remote/host.js";
import type { Reporter } from "../../workflow/reporter.js";
import type { PhaseTiming } from "../../workflow/runner.js";
import type { UpgradeTiming } from "./data.js";
import { prepareUpgrade, type PreparedUpgrade, type UpgradeFlags } from "./prepare.js";

// `upgrade apply` and `upgrade node` run in-process against one node's Host — this machine, a
// --rootfs folder, or a remote machine over SSH — as src/cluster/up/node-workflows.ts runs
// init and join: the cluster-level rehearsal calls these on every node in kubeadm's order
// (first control plane, the other control planes, then the workers).

export interface UpgradeNodeRun {
  host: Host;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  /** An UpgradeConfiguration (v1beta4) for the node, when the caller has one. */
  config?: { text: string; source: string };
  /** Flags as kubeadm's; never `--config`-mixed ones when `config` is given. */
  flags?: UpgradeFlags;
  /** How the node's kubeconfig turns into a client; default through the Host and its route. */
  cluster?: ClusterAccess;
  /** Run only these phases ("control-plane", "addon/coredns", ...). */
  filterPhases?: string[];
  dryRunDir?: string;
  now?: () => Date;
  timing?: Partial<UpgradeTiming>;
}

export interface UpgradeNodeResult {
  timings: PhaseTiming[];
  /** What the workflow printed as its result (dry-run objects, the closing message). */
  output: string;
  /** The version the node was brought to. */
  version: string;
  dryRunDir: string | undefined;
}

/** kubeadm's closing lines of `upgrade apply`. */
export function applySuccessMessage(version: string): string {
  return `\n[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "${version}".\n\n[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.\n`;
}

/** kubeadm's closing line of an `upgrade apply` dry run (apply.go); `upgrade node` says nothing. */
export const DRY_RUN_SUCCESS_MESSAGE = "[upgrade/successful] Finished dryrunning successfully!\n";

/** Runs a prepared upgrade, then says what kubeadm says after the whole workflow. */
export async function runPreparedUpgrade(
  prepared: PreparedUpgrade,
  opts: { filterPhases?: string[]; skipPhases?: string[]; say: (text: string) => void },
): Promise<void> {
  const { data, runner } = prepared;
  try {
    await runner.run(data, {
      skipPhases: [...prepared.skipPhases, ...(opts.skipPhases ?? [])],
      ...(opts.filterPhases ? { filterPhases: opts.filterPhases } : {}),
      dryRun: data.dryRun,
    });
  } finally {
    data.keys.discard();
  }
  // kubeadm prints after the whole apply workflow only; `upgrade node` returns nodeRunner.Run.
  if (opts.filterPhases || data.command !== "apply") return;
  opts.say(
    data.dryRun ? DRY_RUN_SUCCESS_MESSAGE : applySuccessMessage(data.cfg.cluster.kubernetesVersion),
  );
}

/**
 * `upgrade apply|node` prepared on the node once (its configuration read from the cluster and
 * the node), its phases run in one or more parts: a cluster upgrade runs the preflight ahead of
 * the node's turn and the rest at its turn.
 */
export interface PreparedNodeUpgrade {
  /**
   * Runs the phases `filterPhases` names (every phase when absent) but `skipPhases`, as
   * kubeadm's `phase` subcommands and `--skip-phases` select them. What a part writes is dated
   * when the part starts (backup folders, renewed certificates).
   */
  run(opts?: { filterPhases?: string[]; skipPhases?: string[] }): Promise<UpgradeNodeResult>;
}

export async function prepareNodeUpgrade(
  command: "apply" | "node",
  run: UpgradeNodeRun,
  version: string | undefined,
): Promise<PreparedNodeUpgrade> {
  let output = "";
  const collect = (text: string) => (output += text);
  let partStarted: Date | undefined;
  const prepared = await prepareUpgrade({
    command,
    ...(version !== undefined ? { version } : {}),
    ...(run.config ? { config: run.config } : {}),
    // Never interactive: a rehearsal answers "yes" for the user, as `-y`.
    flags: { ...(command === "apply" ? { yes: true } : {}), ...run.flags },
    host: run.host,
    ...(run.dryRunDir ? { dryRunDir: run.dryRunDir } : {}),
    reporter: run.reporter,
    env: run.env,
    stdout: collect,
    ...(run.cluster ? { cluster: run.cluster } : {}),
    now: run.now ?? (() => partStarted ?? new Date()),
    ...(run.timing ? { timing: run.timing } : {}),
  });
  return {
    run: async (opts = {}) => {
      output = "";
      partStarted = new Date();
      await runPreparedUpgrade(prepared, { ...opts, say: collect });
      return {
        timings: [...prepared.runner.timings],
        output,
        version: prepared.data.cfg.cluster.kubernetesVersion,
        dryRunDir: prepared.dryRunDir,
      };
    },
  };
}

/** Prepares and runs the whole workflow, or the phases `run.filterPhases` names. */
async function runUpgrade(
  command: "apply" | "node",
  run: UpgradeNodeRun,
  version: string | undefined,
): Promise<UpgradeNodeResult> {
  const prepared = await prepareNodeUpgrade(command, run, version);
  return prepared.run(run.filterPhases ? { filterPhases: run.filterPhases } : {});
}

/** `upgrade apply <version>` on the first control plane (non-interactive). */
export function runUpgradeApply(
  run: UpgradeNodeRun,
  version: string | undefined,
): Promise<UpgradeNodeResult> {
  return runUpgrade("apply", run, version);
}

/** `upgrade node` on any other node: the version kube-system/kubeadm-config names. */
export function runUpgradeNode(run: UpgradeNodeRun): Promise<UpgradeNodeResult> {
  return runUpgrade("node", run, undefined);
}
