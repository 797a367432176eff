import { mkdtemp, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { down } from "../cluster/down.js";
import { clusterPorts, type ClusterPorts } from "../cluster/ports.js";
import { FleetError } from "../remote/fleet.js";
import { up, upPhase, type UpRequest } from "../cluster/up/index.js";
import { upPhases } from "../cluster/up/phases.js";
import { renderPlan } from "../cluster/up/plan.js";
import { splitSkipPhases } from "../cluster/up/skip-phases.js";
import { stopLocalRegistry } from "../cluster/local-registry.js";
import { stopTunnelProcess, tunnelMain } from "../cluster/tunnel.js";
import { defaultClusterSpec, loadClusterSpec } from "../config/cluster/load.js";
import type { ClusterSpec } from "../config/cluster/types.js";
import type { Phase } from "../workflow/phase.js";
import { TerminalReporter, type Reporter } from "../workflow/reporter.js";
import { list, phaseTreeHelp } from "./options.js";
import { readInputFile, readInputFileSync } from "../remote/runner-files.js";

// `kubeforge up -f cluster.yaml`, `kubeforge up phase <phase> -f cluster.yaml` and `kubeforge
// down -f cluster.yaml`: the whole topology. Without -f, one control plane on this machine.

interface ClusterCommandOptions {
  file?: string;
  dryRun?: boolean;
  dryRunDir?: string;
  kubeconfig?: string;
  skipPhases?: string[];
}

export async function readSpec(file: string | undefined, reporter: Reporter): Promise<ClusterSpec> {
  if (file === undefined) return defaultClusterSpec();
  const path = resolve(file);
  const text = await readInputFile(path, "the Cluster file");
  return loadClusterSpec(text, file, {
    baseDir: dirname(path),
    home: homedir(),
    readFile: (p) => readInputFileSync(p, "kubeadm.configFile"),
    warn: (m) => reporter.warn(m),
  });
}

/** The runner-side tunnel's pid file, next to the admin.conf it serves. */
export function tunnelStateFile(kubeconfigPath: string): string {
  return `${kubeconfigPath}.tunnel.json`;
}

/** The local registry's state file (its pid or container), next to the tunnel's. */
export function registryStateFile(kubeconfigPath: string): string {
  return `${kubeconfigPath}.registry.json`;
}

/** Where admin.conf goes on the runner by default: one file per cluster name. */
export function defaultKubeconfigPath(name: string): string {
  return join(homedir(), ".kube", `kubeforge-${name}.conf`);
}

export function portsFor(
  spec: ClusterSpec,
  reporter: Reporter,
  kubeconfigPath: string,
): ClusterPorts {
  return clusterPorts({
    spec,
    reporter,
    env: process.env,
    cliPath: process.argv[1]!,
    tunnelStateFile: tunnelStateFile(kubeconfigPath),
    registryStateFile: registryStateFile(kubeconfigPath),
    // Each host's commands and file writes, as the action logs them in a debug run.
    ...(process.env.KUBEFORGE_DEBUG === "1"
      ? { trace: (line: string) => reporter.info(`[debug] ${line}`) }
      : {}),
  });
}

/** The Cluster file with --skip-phases added to its skipPhases, and what up needs beside it. */
async function upRequest(o: ClusterCommandOptions, reporter: TerminalReporter): Promise<UpRequest> {
  // Unknown names are refused before the Cluster file is read, naming the flag.
  if (o.skipPhases) splitSkipPhases(o.skipPhases, "--skip-phases");
  const file = await readSpec(o.file, reporter);
  const spec = o.skipPhases
    ? { ...file, skipPhases: [...(file.skipPhases ?? []), ...o.skipPhases] }
    : file;
  const kubeconfigPath = resolve(o.kubeconfig ?? defaultKubeconfigPath(spec.name));
  return {
    spec,
    ports: portsFor(spec, reporter, kubeconfigPath),
    reporter,
    dryRun: false,
    kubeconfigPath,
  };
}

async function runUp(o: ClusterCommandOptions): Promise<void> {
  const reporter = new TerminalReporter();
  if (o.dryRunDir !== undefined && !o.dryRun) {
    throw new Error("--dry-run-dir is only meaningful with --dry-run");
  }
  const request = await upRequest(o, reporter);
  const renderRoot = o.dryRun
    ? resolve(o.dryRunDir ?? (await mkdtemp(join(tmpdir(), "kubeforge-up-dryrun-"))))
    : undefined;
  const result = await up({
    ...request,
    dryRun: o.dryRun === true,
    ...(renderRoot !== undefined
      ? { renderInitDir: (node: string) => join(renderRoot, node) }
      : {}),
  });
  const { spec } = request;
  if (o.dryRun) {
    process.stdout.write(renderPlan(result.plan));
    if (result.renderedInit) {
      reporter.info(
        `[up] dry run: the first control plane's init is rendered under ${renderRoot}; its admin.conf is ${result.renderedInit.adminConfPath}`,
      );
    }
    return;
  }
  for (const n of result.nodes) {
    reporter.info(
      `[up] ${n.name}: ${n.role}, ${n.address}, ${n.action === "none" ? "already part of the cluster" : n.action}`,
    );
  }
  reporter.info(
    `[up] Cluster "${spec.name}" (Kubernetes ${result.kubernetesVersion}) is ready at ${result.apiServer}`,
  );
  if (result.kubeconfigPath) process.stdout.write(`${result.kubeconfigPath}\n`);
}

/** `up phase <phase> [<sub-phase>|all]`: the phase's path, as init's `phase` command takes it. */
function phasePath(phases: Phase<unknown>[], phase: string, sub: string | undefined): string {
  const top = phases.find((p) => p.name === phase);
  if (top?.phases && sub === undefined) {
    const names = ["all", ...top.phases.map((p) => p.name)].join(", ");
    throw new Error(
      `phase ${phase} has sub-phases: run "kubeforge up phase ${phase} <sub-phase>" with one of ${names}`,
    );
  }
  return sub === undefined || sub === "all" ? phase : `${phase}/${sub}`;
}

function addUpOptions(cmd: Command): Command {
  return cmd
    .option("-f, --file <cluster.yaml>", "the kubeforge.dev/v1alpha1 Cluster file")
    .option(
      "--kubeconfig <path>",
      "where admin.conf is written on this machine (default: ~/.kube/kubeforge-<name>.conf)",
    )
    .option(
      "--skip-phases <phases>",
      "comma-separated phases to skip: up's (below), or init's and join's on every node",
      list,
    );
}

export function registerUp(program: Command): void {
  const phases = upPhases() as Phase<unknown>[];
  const tree = `\nUp workflow phases, in order:\n${phaseTreeHelp(phases)}\n`;
  const upCommand = addUpOptions(
    program
      .command("up")
      .description("Build the cluster a Cluster file describes (default: one node on this machine)")
      .addHelpText("after", tree),
  )
    .option(
      "--dry-run",
      "connect and inspect every host, print the plan, render the first control plane's init, change nothing",
    )
    .option(
      "--dry-run-dir <dir>",
      "with --dry-run: where the first control plane's init is rendered, in <dir>/<node> (default: a new temporary folder)",
    )
    .action((o: ClusterCommandOptions) => runUp(o));

  addUpOptions(
    upCommand
      .command("phase")
      .description(
        "Run one phase of up against the Cluster file's hosts: kubeforge up phase <phase> [<sub-phase>|all]",
      )
      .argument("<phase>", "top-level phase, e.g. wait")
      .argument("[sub-phase]", "sub-phase, e.g. workers; 'all' runs every sub-phase")
      .addHelpText("after", tree),
  ).action(async (phase: string, sub: string | undefined, _o: unknown, cmd: Command) => {
    // Flags written before "phase" belong to `up`; the phase honours them as well.
    const o = cmd.optsWithGlobals<ClusterCommandOptions>();
    if (o.dryRun) throw new Error("--dry-run plans the whole of up; it cannot run one phase");
    const path = phasePath(phases, phase, sub);
    const reporter = new TerminalReporter();
    const { kubeconfigPath } = await upPhase(await upRequest(o, reporter), [path]);
    if (kubeconfigPath) process.stdout.write(`${kubeconfigPath}\n`);
  });

  program
    .command("down")
    .description(
      "Reset every host of the cluster a Cluster file describes; remove its docker nodes' containers, volumes and network",
    )
    .option("-f, --file <cluster.yaml>", "the kubeforge.dev/v1alpha1 Cluster file")
    .option("--dry-run", "connect to every host and report what would be removed")
    .option("--kubeconfig <path>", "the admin.conf `up` wrote, removed too")
    .action(async (o: ClusterCommandOptions) => {
      const reporter = new TerminalReporter();
      const spec = await readSpec(o.file, reporter);
      // Hosts that could not be reset are named at the end; the runner's side goes regardless.
      let notAllReset: FleetError | undefined;
      try {
        const kubeconfigPath = resolve(o.kubeconfig ?? defaultKubeconfigPath(spec.name));
        await down({
          spec,
          connect: portsFor(spec, reporter, kubeconfigPath).connect,
          reporter,
          dryRun: o.dryRun === true,
        });
      } catch (e) {
        if (!(e instanceof FleetError)) throw e;
        notAllReset = e;
      }
      if (!o.dryRun) {
        const kubeconfigPath = resolve(o.kubeconfig ?? defaultKubeconfigPath(spec.name));
        if (await stopTunnelProcess(tunnelStateFile(kubeconfigPath))) {
          reporter.info("[down] the SSH tunnel to the API servers was stopped");
        }
        const registry = await stopLocalRegistry(registryStateFile(kubeconfigPath));
        if (registry) reporter.info(`[down] removed ${registry}`);
        await rm(kubeconfigPath, { force: true });
        if (!notAllReset) {
          reporter.info(
            `[down] Cluster "${spec.name}": every host was reset; ${kubeconfigPath} removed`,
          );
        }
      }
      if (notAllReset) throw notAllReset;
    });

  // Internal: the runner-side tunnel `up` starts (cluster/tunnel.ts); its spec arrives on stdin.
  program
    .command("tunnel", { hidden: true })
    .description("Serve the runner-side tunnel to the API servers (started by kubeforge up)")
    .action(() => tunnelMain(process.stdin));
}
