import { type Command, Option } from "commander";
import { JOIN_CONTROL_PLANE_DONE, JOIN_WORKER_DONE, prepareJoin } from "../cluster/join.js";
import { requireEmptyRenderFolder } from "../cluster/render-folder.js";
import type { JoinFlags } from "../config/join-flags.js";
import { joinPhases } from "../phases/join/index.js";
import type { Phase } from "../workflow/phase.js";
import { TerminalReporter } from "../workflow/reporter.js";
import { hostFor, list, phaseTreeHelp, port, readConfig, runPrepared } from "./options.js";

// `kubeforge join [host:port]` and `kubeforge join phase <phase>`, with kubeadm's flag names.

interface JoinCommandOptions extends Omit<JoinFlags, "apiServerEndpoint"> {
  config?: string;
}

function addJoinOptions(cmd: Command): Command {
  return cmd
    .option("--config <file>", "path to a kubeadm JoinConfiguration file")
    .option("--rootfs <dir>", "place every host path under this folder")
    .option("--dry-run", "do not change the machine: discover for real, render files into a folder")
    .option("--dry-run-dir <dir>", "folder for --dry-run output (default: a new temporary folder)")
    .option("--skip-phases <phases>", "comma-separated phases to skip", list)
    .option("--token <token>", "token for both discovery and TLS bootstrap")
    .option("--discovery-token <token>", "token to validate the cluster's identity")
    .option("--tls-bootstrap-token <token>", "token the kubelet bootstraps with")
    .option(
      "--discovery-token-ca-cert-hash <sha256:hash>",
      "pin of the cluster CA's public key (repeatable)",
      list,
    )
    .option(
      "--discovery-token-unsafe-skip-ca-verification",
      "join without pinning the cluster CA (unsafe)",
    )
    .option(
      "--discovery-file <path|url>",
      "kubeconfig file or https URL to discover the cluster from",
    )
    .option("--control-plane", "join as a control-plane node")
    .option("--certificate-key <key>", "key to decrypt the kubeadm-certs Secret (control planes)")
    .option(
      "--apiserver-advertise-address <ip>",
      "address this control plane's API server advertises",
    )
    .addOption(
      new Option(
        "--apiserver-bind-port <port>",
        "port this control plane's API server binds",
      ).argParser(port),
    )
    .option("--node-name <name>", "node name")
    .option("--cri-socket <socket>", "CRI socket to connect to")
    .option(
      "--ignore-preflight-errors <checks>",
      "preflight checks whose errors become warnings (names, or all)",
      list,
    )
    .option("--patches <dir>", "folder with kubeadm patch files");
}

async function runJoin(
  endpoint: string | undefined,
  o: JoinCommandOptions,
  filterPhases: string[] | undefined,
): Promise<void> {
  if (o.dryRunDir !== undefined && !o.dryRun) throw new Error("--dry-run-dir needs --dry-run");
  // As up --dry-run: a second run would otherwise reuse the first one's files.
  if (o.dryRunDir !== undefined) await requireEmptyRenderFolder(o.dryRunDir, "the join");
  const reporter = new TerminalReporter();
  const { config, rootfs, dryRunDir, ...flags } = o;
  const prepared = await prepareJoin({
    config: await readConfig(config),
    flags: { ...flags, ...(endpoint !== undefined ? { apiServerEndpoint: endpoint } : {}) },
    host: await hostFor(rootfs),
    dryRun: o.dryRun === true,
    ...(dryRunDir !== undefined ? { dryRunDir } : {}),
    reporter,
    env: process.env,
    stdout: (text) => process.stdout.write(text),
  });
  await runPrepared(prepared, reporter, filterPhases);
  if (!filterPhases) {
    prepared.data.output(
      prepared.data.cfg.join.controlPlane ? JOIN_CONTROL_PLANE_DONE : JOIN_WORKER_DONE,
    );
  }
}

export function registerJoin(program: Command): void {
  const phases = joinPhases() as Phase<unknown>[];
  const join = addJoinOptions(
    program
      .command("join")
      .description("Run kubeadm's join workflow on this machine: a new node of an existing cluster")
      .argument("[api-server-endpoint]", "host:port of the cluster's API server (token discovery)")
      .addHelpText(
        "after",
        `\nJoin workflow phases (kubeadm's, in order):\n${phaseTreeHelp(phases)}\n`,
      ),
  ).action((endpoint: string | undefined, o: JoinCommandOptions) =>
    runJoin(endpoint, o, undefined),
  );

  addJoinOptions(
    join
      .command("phase")
      .description(
        "Run one phase of the join workflow: kubeforge join phase <phase> [<sub-phase>|all]",
      )
      .argument("<phase>", "top-level phase, e.g. kubelet-start")
      .argument("[sub-phase]", "sub-phase; 'all' runs every sub-phase")
      .argument("[api-server-endpoint]", "host:port of the cluster's API server")
      .addHelpText("after", `\nPhases:\n${phaseTreeHelp(phases)}\n`),
  ).action(
    (
      phase: string,
      sub: string | undefined,
      endpoint: string | undefined,
      _o: JoinCommandOptions,
      cmd: Command,
    ) => {
      const o = cmd.optsWithGlobals<JoinCommandOptions>();
      const top = phases.find((p) => p.name === phase);
      // A phase without sub-phases takes the endpoint as its second argument.
      if (!top?.phases && sub !== undefined && endpoint === undefined) {
        endpoint = sub;
        sub = undefined;
      }
      if (top?.phases && sub === undefined) {
        const names = ["all", ...top.phases.map((p) => p.name)].join(", ");
        throw new Error(
          `phase ${phase} has sub-phases: run "kubeforge join phase ${phase} <sub-phase>" with one of ${names}`,
        );
      }
      const path = sub === undefined || sub === "all" ? phase : `${phase}/${sub}`;
      return runJoin(endpoint ?? join.args[0], o, [path]);
    },
  );
}
