import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { NodeClusterAccess } from "../kube/access.js";
import { DryRunClusterAccess } from "../kube/dry-run.js";
import type { ClusterAccess } from "../kube/types.js";
import { DryRunHost } from "../remote/dry-run.js";
import type { Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";

// A real run or a dry run, decided once for init and join alike: in a dry run node files go
// to a folder, commands that would change the machine are reported, API writes go to stdout,
// and results meant for stdout go to the log instead, so stdout carries only the objects.

export interface RunModeRequest {
  host: Host;
  dryRun: boolean;
  dryRunDir?: string;
  reporter: Reporter;
  stdout: (text: string) => void;
  cluster?: ClusterAccess;
}

export interface RunMode {
  /** The host phases write through: the machine, or its dry-run view. */
  host: Host;
  cluster: ClusterAccess;
  output: (text: string) => void;
  dryRunDir: string | undefined;
}

export async function runMode(request: RunModeRequest): Promise<RunMode> {
  const { reporter } = request;
  const info = (line: string) => reporter.info(line);
  if (!request.dryRun) {
    return {
      host: request.host,
      cluster: request.cluster ?? new NodeClusterAccess(request.host),
      output: request.stdout,
      dryRunDir: undefined,
    };
  }
  const dryRunDir = resolve(
    request.dryRunDir ?? (await mkdtemp(join(tmpdir(), "kubeforge-dry-run-"))),
  );
  return {
    host: new DryRunHost(request.host, dryRunDir, (name, argv) =>
      info(`[dryrun] Would run on ${name}: ${argv.join(" ")}`),
    ),
    cluster: request.cluster ?? new DryRunClusterAccess(request.stdout, info),
    output: (text) => {
      for (const line of text.replace(/\n$/, "").split("\n")) info(line);
    },
    dryRunDir,
  };
}
