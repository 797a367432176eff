import { createInterface } from "node:readline";
import { type Command, InvalidArgumentError, Option } from "commander";
import { runUpgradeDiff, type DiffFlags } from "../phases/upgrade/diff.js";
import { applyPhases, nodePhases } from "../phases/upgrade/index.js";
import { runPreparedUpgrade } from "../phases/upgrade/node-workflows.js";
import { runUpgradePlan, type PlanFlags } from "../phases/upgrade/plan.js";
import { prepareUpgrade, type UpgradeFlags } from "../phases/upgrade/prepare.js";
import type { Phase } from "../workflow/phase.js";
import { TerminalReporter } from "../workflow/reporter.js";
import { summarizeTimings } from "../workflow/runner.js";
import { hostFor, list, phaseTreeHelp, readConfig } from "./options.js";
import { addClusterUpgrade } from "./upgrade-cluster.js";

// `kubeforge upgrade plan|diff|apply|node` and `upgrade apply|node phase <phase>`, with
// kubeadm's flag names (cmd/upgrade/*.go, v1.35) plus kubeforge's --rootfs and --dry-run-dir.

interface UpgradeCommandOptions extends Omit<UpgradeFlags, "allowRCUpgrades"> {
  config?: string;
  rootfs?: string;
  dryRunDir?: string;
  allowReleaseCandidateUpgrades?: boolean;
}

interface PlanCommandOptions extends Omit<PlanFlags, "allowRCUpgrades"> {
  config?: string;
  rootfs?: string;
  output?: string;
  allowReleaseCandidateUpgrades?: boolean;
}

interface DiffCommandOptions extends DiffFlags {
  config?: string;
  rootfs?: string;
  kubeconfig?: string;
}

/** A pflag bool: `--flag` is true, `--flag=false` false. */
function bool(value: string | undefined): boolean {
  if (value === undefined) return true;
  if (/^(1|t|true)$/i.test(value)) return true;
  if (/^(0|f|false)$/i.test(value)) return false;
  throw new InvalidArgumentError(`"${value}" is not a boolean; write --flag=false to turn it off`);
}

function count(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a number`);
  return Number(value);
}

const boolOption = (flags: string, description: string) =>
  new Option(flags, description).argParser(bool);

function addCommon(cmd: Command): Command {
  return cmd
    .option("--config <file>", "path to a kubeadm UpgradeConfiguration (kubeadm.k8s.io/v1beta4)")
    .option(
      "--kubeconfig <file>",
      "kubeconfig to talk to the cluster with (default: /etc/kubernetes/admin.conf; kubelet.conf on a worker for `node`)",
    )
    .option(
      "--rootfs <dir>",
      "place every host path (/etc/kubernetes, /var/lib/kubelet, /var/lib/etcd...) under this folder",
    )
    .option(
      "--ignore-preflight-errors <checks>",
      "preflight checks whose errors become warnings (names, or all)",
      list,
    );
}

/** The flags `apply` and `node` share (kubeadm's addUpgradeNodeFlags and apply's own). */
function addNodeLevel(cmd: Command): Command {
  return addCommon(cmd)
    .option("--dry-run", "do not change any state, just output what actions would be performed")
    .option(
      "--dry-run-dir <dir>",
      "folder for --dry-run output (default: a new temporary folder, printed)",
    )
    .addOption(
      boolOption(
        "--etcd-upgrade [bool]",
        "perform the upgrade of etcd (default true; --etcd-upgrade=false to skip)",
      ),
    )
    .addOption(
      boolOption(
        "--certificate-renewal [bool]",
        "renew the certificates of the components upgraded (default true; --certificate-renewal=false to keep them)",
      ),
    )
    .option("--patches <dir>", "folder with kubeadm patch files")
    .option("--skip-phases <phases>", "comma-separated phases to skip", list);
}

function addApplyOptions(cmd: Command): Command {
  return addNodeLevel(cmd)
    .option("-y, --yes", "perform the upgrade and do not prompt for confirmation")
    .option(
      "-f, --force",
      "force upgrading although some requirements might not be met; implies non-interactive mode",
    )
    .option(
      "--allow-experimental-upgrades",
      "allow upgrading to alpha, beta or release candidate versions",
    )
    .option("--allow-release-candidate-upgrades", "allow upgrading to release candidate versions")
    .option("--print-config", "print the configuration that will be used in the upgrade");
}

/** kubeadm's InteractivelyConfirmAction: one line from standard input, "y" or "yes" goes on. */
function stdinConfirm(question: string): Promise<boolean> {
  process.stderr.write(`[upgrade] ${question} [y/N]: `);
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin });
    let answered = false;
    rl.once("line", (line) => {
      answered = true;
      rl.close();
      resolve(/^(y|yes)$/i.test(line.trim()));
    });
    rl.once("close", () => {
      if (!answered) resolve(false);
    });
  });
}

async function runNodeLevel(
  command: "apply" | "node",
  version: string | undefined,
  o: UpgradeCommandOptions,
  filterPhases: string[] | undefined,
): Promise<void> {
  if (o.dryRunDir !== undefined && !o.dryRun) throw new Error("--dry-run-dir needs --dry-run");
  const reporter = new TerminalReporter();
  const { config, rootfs, dryRunDir, allowReleaseCandidateUpgrades, ...rest } = o;
  const flags: UpgradeFlags = {
    ...rest,
    ...(allowReleaseCandidateUpgrades !== undefined
      ? { allowRCUpgrades: allowReleaseCandidateUpgrades }
      : {}),
  };
  const prepared = await prepareUpgrade({
    command,
    ...(version !== undefined ? { version } : {}),
    config: await readConfig(config),
    flags,
    host: await hostFor(rootfs),
    ...(dryRunDir !== undefined ? { dryRunDir } : {}),
    reporter,
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    confirm: stdinConfirm,
  });
  if (prepared.dryRunDir) {
    reporter.info(
      `[dryrun] Rendering node files into ${prepared.dryRunDir}; nothing on this machine changes`,
    );
  }
  try {
    await runPreparedUpgrade(prepared, {
      ...(filterPhases ? { filterPhases } : {}),
      say: (text) => process.stdout.write(text),
    });
  } finally {
    reporter.info(`[kubeforge] Phase timings: ${summarizeTimings(prepared.runner.timings)}`);
  }
}

function phasePath(
  phases: Phase<unknown>[],
  command: string,
  phase: string,
  sub: string | undefined,
): string {
  const top = phases.find((p) => p.name === phase);
  if (top?.phases && sub === undefined) {
    const names = ["all", ...top.phases.map((p) => p.name)].join(", ");
    throw new Error(
      `phase ${phase} has sub-phases: run "kubeforge upgrade ${command} phase ${phase} <sub-phase>" with one of ${names}`,
    );
  }
  return sub === undefined || sub === "all" ? phase : `${phase}/${sub}`;
}

/** kubeadm's flag names the user set on plan (for the --config mixing rule). */
function givenPlanFlags(o: PlanCommandOptions): string[] {
  const names: Record<string, string> = {
    kubeconfig: "kubeconfig",
    allowExperimentalUpgrades: "allow-experimental-upgrades",
    allowReleaseCandidateUpgrades: "allow-release-candidate-upgrades",
    ignorePreflightErrors: "ignore-preflight-errors",
    printConfig: "print-config",
    output: "output",
  };
  return Object.keys(names)
    .filter((k) => (o as Record<string, unknown>)[k] !== undefined)
    .map((k) => names[k]!);
}

function givenDiffFlags(o: DiffCommandOptions): string[] {
  const names: Record<string, string> = {
    kubeconfig: "kubeconfig",
    apiServerManifest: "api-server-manifest",
    controllerManagerManifest: "controller-manager-manifest",
    schedulerManifest: "scheduler-manifest",
    contextLines: "context-lines",
  };
  return Object.keys(names)
    .filter((k) => (o as Record<string, unknown>)[k] !== undefined)
    .map((k) => names[k]!);
}

export function registerUpgrade(program: Command): void {
  const upgrade = program
    .command("upgrade")
    .description(
      "Upgrade a whole cluster (-f cluster.yaml --to V), or this node of a kubeadm/kubeforge cluster as kubeadm upgrade does (plan, diff, apply, node)",
    );
  addClusterUpgrade(upgrade);

  addCommon(
    upgrade
      .command("plan")
      .description(
        "Check which versions are available to upgrade to and validate whether the cluster can be upgraded",
      )
      .argument("[version]", "the version to plan for (skips the release lookup)"),
  )
    .option("--allow-experimental-upgrades", "show alpha, beta and release candidate versions")
    .option("--allow-release-candidate-upgrades", "show release candidate versions")
    .option("--print-config", "print the configuration that will be used in the upgrade")
    .addOption(
      new Option("-o, --output <format>", "output format").choices(["text", "json", "yaml"]),
    )
    .action(async (version: string | undefined, o: PlanCommandOptions) => {
      const { config, rootfs, output, allowReleaseCandidateUpgrades, ...rest } = o;
      await runUpgradePlan(
        {
          ...(version !== undefined ? { version } : {}),
          config: await readConfig(config),
          flags: {
            ...rest,
            ...(allowReleaseCandidateUpgrades !== undefined
              ? { allowRCUpgrades: allowReleaseCandidateUpgrades }
              : {}),
          },
          given: givenPlanFlags(o),
          host: await hostFor(rootfs),
          reporter: new TerminalReporter(),
          env: process.env,
          stdout: (text) => process.stdout.write(text),
        },
        (output ?? "text") as "text" | "json" | "yaml",
      );
    });

  upgrade
    .command("diff")
    .description("Show what differences would be applied to existing static pod manifests")
    .argument("[version]", "the version to compare with (default: the cluster's)")
    .option("--config <file>", "path to a kubeadm UpgradeConfiguration (kubeadm.k8s.io/v1beta4)")
    .option("--kubeconfig <file>", "kubeconfig to talk to the cluster with (default: admin.conf)")
    .option("--rootfs <dir>", "place every host path under this folder")
    .option("--api-server-manifest <file>", "path to API server manifest")
    .option("--controller-manager-manifest <file>", "path to controller manifest")
    .option("--scheduler-manifest <file>", "path to scheduler manifest")
    .addOption(
      new Option(
        "-c, --context-lines <n>",
        "how many lines of context in the diff (default 3)",
      ).argParser(count),
    )
    .action(async (version: string | undefined, o: DiffCommandOptions) => {
      const { config, rootfs, kubeconfig, ...diff } = o;
      await runUpgradeDiff({
        ...(version !== undefined ? { version } : {}),
        config: await readConfig(config),
        flags: kubeconfig !== undefined ? { kubeconfig } : {},
        given: givenDiffFlags(o),
        host: await hostFor(rootfs),
        reporter: new TerminalReporter(),
        env: process.env,
        stdout: (text) => process.stdout.write(text),
        diff,
      });
    });

  const applyList = applyPhases() as Phase<unknown>[];
  const apply = addApplyOptions(
    upgrade
      .command("apply")
      .description("Upgrade your Kubernetes cluster to the specified version")
      .argument("[version]", "the version to upgrade to (or apply.kubernetesVersion in --config)")
      .addHelpText(
        "after",
        `\nUpgrade apply phases (kubeadm's, in order):\n${phaseTreeHelp(applyList)}\n`,
      ),
  ).action((version: string | undefined, o: UpgradeCommandOptions) =>
    runNodeLevel("apply", version, o, undefined),
  );
  addApplyOptions(
    apply
      .command("phase")
      .description(
        "Run one phase of upgrade apply: kubeforge upgrade apply phase <phase> [<sub>|all]",
      )
      .argument("<phase>", "top-level phase, e.g. control-plane")
      .argument("[sub-phase]", "sub-phase; 'all' runs every sub-phase")
      .argument("[version]", "the version to upgrade to")
      .addHelpText("after", `\nPhases:\n${phaseTreeHelp(applyList)}\n`),
  ).action(
    (
      phase: string,
      sub: string | undefined,
      version: string | undefined,
      _o: UpgradeCommandOptions,
      cmd: Command,
    ) => {
      const top = applyList.find((p) => p.name === phase);
      // A phase without sub-phases takes the version as its second argument.
      if (!top?.phases && sub !== undefined && version === undefined) {
        version = sub;
        sub = undefined;
      }
      return runNodeLevel("apply", version, cmd.optsWithGlobals<UpgradeCommandOptions>(), [
        phasePath(applyList, "apply", phase, sub),
      ]);
    },
  );

  const nodeList = nodePhases() as Phase<unknown>[];
  const node = addNodeLevel(
    upgrade
      .command("node")
      .description("Upgrade this node (another control plane or a worker) to the cluster's version")
      .addHelpText(
        "after",
        `\nUpgrade node phases (kubeadm's, in order):\n${phaseTreeHelp(nodeList)}\n`,
      ),
  ).action((o: UpgradeCommandOptions) => runNodeLevel("node", undefined, o, undefined));
  addNodeLevel(
    node
      .command("phase")
      .description(
        "Run one phase of upgrade node: kubeforge upgrade node phase <phase> [<sub>|all]",
      )
      .argument("<phase>", "top-level phase, e.g. kubelet-config")
      .argument("[sub-phase]", "sub-phase; 'all' runs every sub-phase")
      .addHelpText("after", `\nPhases:\n${phaseTreeHelp(nodeList)}\n`),
  ).action((phase: string, sub: string | undefined, _o: UpgradeCommandOptions, cmd: Command) =>
    runNodeLevel("node", undefined, cmd.optsWithGlobals<UpgradeCommandOptions>(), [
      phasePath(nodeList, "node", phase, sub),
    ]),
  );
}
