import { type Command, Option } from "commander";
import { relative } from "node:path";
import { prepareInit } from "../cluster/init.js";
import { requireEmptyRenderFolder } from "../cluster/render-folder.js";
import type { InitFlags } from "../config/flags.js";
import { initPhases } from "../phases/init/index.js";
import type { Phase } from "../workflow/phase.js";
import { TerminalReporter } from "../workflow/reporter.js";
import { listFiles } from "./files.js";
import { hostFor, list, phaseTreeHelp, port, readConfig, runPrepared } from "./options.js";

// `kubeforge init` and `kubeforge init phase <phase> [<sub>|all]`, with kubeadm's flag names.

interface InitCommandOptions extends InitFlags {
  config?: string;
  rootfs?: string;
  dryRunDir?: string;
}

/** kubeadm's `init` flags plus kubeforge's --rootfs and --dry-run-dir. */
function addInitOptions(cmd: Command): Command {
  return cmd
    .option(
      "--config <file>",
      "path to a kubeadm configuration file (InitConfiguration, ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration)",
    )
    .option(
      "--rootfs <dir>",
      "place every host path (/etc/kubernetes, /var/lib/kubelet, /var/lib/etcd...) under this folder",
    )
    .option(
      "--dry-run",
      "do not change the machine: render the node files into a folder and report what would be run",
    )
    .option(
      "--dry-run-dir <dir>",
      "folder for --dry-run output (default: a new temporary folder, printed)",
    )
    .option("--skip-phases <phases>", "comma-separated phases to skip", list)
    .option(
      "--apiserver-advertise-address <ip>",
      "IP address the API server advertises it is listening on",
    )
    .addOption(
      new Option("--apiserver-bind-port <port>", "port for the API server to bind to").argParser(
        port,
      ),
    )
    .option(
      "--control-plane-endpoint <host[:port]>",
      "stable IP address or DNS name for the control plane",
    )
    .option("--pod-network-cidr <cidr>", "range of IP addresses for the pod network")
    .option("--service-cidr <cidr>", "range of IP addresses for service VIPs")
    .option("--service-dns-domain <domain>", "alternative domain for services")
    .option("--kubernetes-version <version>", "Kubernetes version: v1.35.2, stable, stable-1.35")
    .option("--node-name <name>", "node name")
    .option("--cert-dir <dir>", "folder where certificates are stored")
    .option(
      "--apiserver-cert-extra-sans <sans>",
      "extra Subject Alternative Names for the API server certificate",
      list,
    )
    .option("--cri-socket <socket>", "CRI socket to connect to")
    .option("--token <token>", "bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})")
    .option("--token-ttl <duration>", "how long the bootstrap token lasts (0 = forever)")
    .option("--upload-certs", "upload control-plane certificates to the kubeadm-certs Secret")
    .option(
      "--certificate-key <key>",
      "hex AES-256 key used to encrypt the control-plane certificates",
    )
    .option(
      "--ignore-preflight-errors <checks>",
      "preflight checks whose errors become warnings (names, or all)",
      list,
    )
    .option("--patches <dir>", "folder with kubeadm patch files")
    .option("--feature-gates <gates>", "kubeadm feature gates: Name=true,Other=false")
    .option("--image-repository <registry>", "container registry to pull control-plane images from")
    .option("--skip-token-print", "do not print the bootstrap token")
    .option("--skip-certificate-key-print", "do not print the certificate key");
}

function initFlags(o: InitCommandOptions): InitFlags {
  // Only flags the user typed: commander leaves the others undefined (no defaults declared).
  const { config: _c, rootfs: _r, dryRunDir: _d, ...flags } = o;
  return flags;
}

async function runInit(o: InitCommandOptions, filterPhases: string[] | undefined): Promise<void> {
  if (o.dryRunDir !== undefined && !o.dryRun) throw new Error("--dry-run-dir needs --dry-run");
  // As up --dry-run: a second run would otherwise reuse the first one's certificates and keys.
  if (o.dryRunDir !== undefined) await requireEmptyRenderFolder(o.dryRunDir, "the init");
  const reporter = new TerminalReporter();
  const prepared = await prepareInit({
    config: await readConfig(o.config),
    flags: initFlags(o),
    host: await hostFor(o.rootfs),
    dryRun: o.dryRun === true,
    ...(o.dryRunDir !== undefined ? { dryRunDir: o.dryRunDir } : {}),
    reporter,
    env: process.env,
    stdout: (text) => process.stdout.write(text),
  });
  reporter.info(
    `[init] Using Kubernetes version: ${prepared.resolved.version} (${prepared.resolved.source})`,
  );
  await runPrepared(prepared, reporter, filterPhases);
  if (prepared.dryRunDir) {
    const files = await listFiles(prepared.dryRunDir);
    reporter.info(`[dryrun] ${files.length} files rendered under ${prepared.dryRunDir}:`);
    for (const f of files) reporter.info(`[dryrun]   /${relative(prepared.dryRunDir, f)}`);
  }
}

export function registerInit(program: Command): void {
  const phases = initPhases() as Phase<unknown>[];
  const init = addInitOptions(
    program
      .command("init")
      .description("Run kubeadm's init workflow on this machine: a new control-plane node")
      .addHelpText(
        "after",
        `\nInit workflow phases (kubeadm's, in order):\n${phaseTreeHelp(phases)}\n`,
      ),
  ).action((o: InitCommandOptions) => runInit(o, undefined));

  addInitOptions(
    init
      .command("phase")
      .description(
        "Run one phase of the init workflow: kubeforge init phase <phase> [<sub-phase>|all]",
      )
      .argument("<phase>", "top-level phase, e.g. certs")
      .argument("[sub-phase]", "sub-phase, e.g. apiserver; 'all' runs every sub-phase")
      .addHelpText("after", `\nPhases:\n${phaseTreeHelp(phases)}\n`),
  ).action((phase: string, sub: string | undefined, _o: InitCommandOptions, cmd: Command) => {
    // Flags written before "phase" belong to `init`; the phase honours them as well.
    const o = cmd.optsWithGlobals<InitCommandOptions>();
    const top = phases.find((p) => p.name === phase);
    if (top?.phases && sub === undefined) {
      const names = ["all", ...top.phases.map((p) => p.name)].join(", ");
      throw new Error(
        `phase ${phase} has sub-phases: run "kubeforge init phase ${phase} <sub-phase>" with one of ${names}`,
      );
    }
    const path = sub === undefined || sub === "all" ? phase : `${phase}/${sub}`;
    return runInit(o, [path]);
  });
}
