import { createInterface } from "node:readline/promises";
import type { Command } from "commander";
import { prepareReset, type ResetFlags } from "../cluster/reset.js";
import { resetPhases } from "../phases/reset/index.js";
import type { Phase } from "../workflow/phase.js";
import { TerminalReporter } from "../workflow/reporter.js";
import { summarizeTimings } from "../workflow/runner.js";
import { hostFor, list, phaseTreeHelp } from "./options.js";

// `kubeforge reset` and `kubeforge reset phase <phase>`, with kubeadm's flag names.

interface ResetCommandOptions extends Omit<ResetFlags, "certificatesDir"> {
  rootfs?: string;
  dryRun?: boolean;
  certDir?: string;
}

function addResetOptions(cmd: Command): Command {
  return cmd
    .option(
      "--rootfs <dir>",
      "the host's paths (/etc/kubernetes, /var/lib/kubelet, /var/lib/etcd...) are under this folder",
    )
    .option("-f, --force", "reset the node without prompting for confirmation")
    .option("--dry-run", "do not change anything; report what would be done")
    .option(
      "--cert-dir <dir>",
      "the certificates directory to clean (default: the cluster's, or /etc/kubernetes/pki)",
    )
    .option(
      "--cri-socket <socket>",
      "CRI socket of the container runtime to remove containers from",
    )
    .option("--cleanup-tmp-dir", 'also clean the "/etc/kubernetes/tmp" directory')
    .option(
      "--kubeconfig <file>",
      "kubeconfig to read the cluster's configuration with (default: /etc/kubernetes/admin.conf)",
    )
    .option("--skip-phases <phases>", "comma-separated phases to skip", list)
    .option(
      "--ignore-preflight-errors <checks>",
      "preflight checks whose errors become warnings (names, or all)",
      list,
    );
}

/** kubeadm's InteractivelyConfirmAction, at a terminal only: "y" or "yes" goes on. */
function terminalConfirm(): ((prompt: string) => Promise<boolean>) | undefined {
  if (!process.stdin.isTTY) return undefined;
  return async (prompt) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      const answer = (await rl.question(prompt)).trim().toLowerCase();
      return answer === "y" || answer === "yes";
    } finally {
      rl.close();
    }
  };
}

async function runReset(o: ResetCommandOptions, filterPhases: string[] | undefined): Promise<void> {
  const reporter = new TerminalReporter();
  const { rootfs, dryRun, certDir, ...flags } = o;
  const confirm = terminalConfirm();
  const prepared = await prepareReset({
    flags: { ...flags, ...(certDir !== undefined ? { certificatesDir: certDir } : {}) },
    host: await hostFor(rootfs),
    dryRun: dryRun === true,
    reporter,
    stdout: (text) => process.stdout.write(text),
    ...(confirm ? { confirm } : {}),
  });
  try {
    await prepared.runner.run(prepared.data, {
      skipPhases: prepared.skipPhases,
      ...(filterPhases ? { filterPhases } : {}),
      dryRun: prepared.data.dryRun,
    });
  } finally {
    reporter.info(`[kubeforge] Phase timings: ${summarizeTimings(prepared.runner.timings)}`);
  }
  // kubeadm prints its reminders after the whole workflow only, not after one phase.
  if (!filterPhases) prepared.done();
}

export function registerReset(program: Command): void {
  const phases = resetPhases() as Phase<unknown>[];
  const reset = addResetOptions(
    program
      .command("reset")
      .description(
        "Performs a best effort revert of changes made to this host by 'kubeforge init' or 'kubeforge join'",
      )
      .addHelpText(
        "after",
        `\nReset workflow phases (kubeadm's, in order):\n${phaseTreeHelp(phases)}\n`,
      ),
  ).action((o: ResetCommandOptions) => runReset(o, undefined));

  addResetOptions(
    reset
      .command("phase")
      .description("Run one phase of the reset workflow: kubeforge reset phase <phase>")
      .argument("<phase>", "phase, e.g. cleanup-node")
      .addHelpText("after", `\nPhases:\n${phaseTreeHelp(phases)}\n`),
  ).action((phase: string, _o: ResetCommandOptions, cmd: Command) =>
    runReset(cmd.optsWithGlobals<ResetCommandOptions>(), [phase]),
  );
}
