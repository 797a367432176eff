import { mkdtemp, readFile, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { down } from "../cluster/down.js";
import { FleetError } from "../remote/fleet.js";
import { up } from "../cluster/up/index.js";
import { connectNode, runnerAddresses } from "../cluster/up/connect.js";
import { resetNode } from "../cluster/up/reset-node.js";
import { publishedApiServerOf } from "../cluster/docker-nodes.js";
import { startTunnelProcess, stopTunnelProcess, tunnelMain } from "../cluster/tunnel.js";
import { defaultClusterSpec, loadClusterSpec } from "../config/cluster/load.js";
import type { ClusterSpec } from "../config/cluster/types.js";
import { TerminalReporter, type Reporter } from "../workflow/reporter.js";
import { readInputFile, readInputFileSync } from "../remote/runner-files.js";

// `kubeforge up -f cluster.yaml` and `kubeforge down -f cluster.yaml`: the whole topology.
// Without -f, one control plane on this machine.

interface ClusterCommandOptions {
  file?: string;
  dryRun?: boolean;
  dryRunDir?: string;
  kubeconfig?: string;
}

async function readSpec(file: string | undefined, reporter: Reporter): Promise<ClusterSpec> {
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

/** Where admin.conf goes on the runner by default: one file per cluster name. */
export function defaultKubeconfigPath(name: string): string {
  return join(homedir(), ".kube", `kubeforge-${name}.conf`);
}

/** `docker: "create"` makes the docker nodes' containers (up); else they must exist. */
function connector(spec: ClusterSpec, reporter: Reporter, docker: "create" | "existing") {
  return (node: ClusterSpec["nodes"][number]) =>
    connectNode(spec, node, {
      readFile: (p) => readFile(p),
      env: process.env,
      log: (line) => reporter.info(line),
      docker,
    });
}

export function registerUp(program: Command): void {
  program
    .command("up")
    .description("Build the cluster a Cluster file describes (default: one node on this machine)")
    .option("-f, --file <cluster.yaml>", "the kubeforge.dev/v1alpha1 Cluster file")
    .option(
      "--dry-run",
      "connect and inspect every host, print the plan, render the first control plane's init, change nothing",
    )
    .option(
      "--dry-run-dir <dir>",
      "with --dry-run: where the first control plane's init is rendered, in <dir>/<node> (default: a new temporary folder)",
    )
    .option(
      "--kubeconfig <path>",
      "where admin.conf is written on this machine (default: ~/.kube/kubeforge-<name>.conf)",
    )
    .action(async (o: ClusterCommandOptions) => {
      const reporter = new TerminalReporter();
      const spec = await readSpec(o.file, reporter);
      const kubeconfigPath = resolve(o.kubeconfig ?? defaultKubeconfigPath(spec.name));
      if (o.dryRunDir !== undefined && !o.dryRun) {
        throw new Error("--dry-run-dir is only meaningful with --dry-run");
      }
      const renderRoot = o.dryRun
        ? resolve(o.dryRunDir ?? (await mkdtemp(join(tmpdir(), "kubeforge-up-dryrun-"))))
        : undefined;
      const result = await up({
        spec,
        connect: connector(spec, reporter, o.dryRun ? "existing" : "create"),
        reset: (host, r) => resetNode(host, r),
        reporter,
        env: process.env,
        dryRun: o.dryRun === true,
        ...(renderRoot !== undefined
          ? { renderInitDir: (node: string) => join(renderRoot, node) }
          : {}),
        kubeconfigPath,
        stdout: (text) => process.stdout.write(text),
        runnerAddresses,
        publishedApiServer: publishedApiServerOf(spec),
        tunnel: (targets) =>
          startTunnelProcess(
            { cluster: spec, targets },
            {
              cliPath: process.argv[1]!,
              stateFile: tunnelStateFile(kubeconfigPath),
              env: process.env,
            },
          ),
      });
      if (o.dryRun) {
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
      process.stdout.write(`${kubeconfigPath}\n`);
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
        await down({
          spec,
          connect: connector(spec, reporter, "existing"),
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
