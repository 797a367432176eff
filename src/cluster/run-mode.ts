import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { decodeConfigDocuments } from "../config/load.js";
import type { ConfigDocuments } from "../config/types.js";
import { NodeClusterAccess } from "../kube/access.js";
import { DryRunClusterAccess } from "../kube/dry-run.js";
import type { ClusterAccess } from "../kube/types.js";
import { DryRunHost, wouldRunLine } from "../remote/dry-run.js";
import type { Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";

// A real run or a dry run, decided once for init and join alike: in a dry run node files go
// to a folder, commands that would change the machine are reported, API writes go to stdout,
// and results meant for stdout go to the log instead, so stdout carries only the objects.

/** What an edge (CLI, action) hands to init or join besides the configuration and flags. */
export interface WorkflowRequest {
  /**
   * The configuration, when one is given: the `--config` file's contents and name, or documents
   * decoded already (`up` decodes the Cluster file's once and builds each node's from them).
   */
  config?: { text: string; source: string } | { documents: ConfigDocuments; source: string };
  /** The machine to work on (its `rootfs`, if any, is already applied). */
  host: Host;
  /** Render into a folder instead of changing the machine. */
  dryRun: boolean;
  /** Where a dry run writes; a new temporary folder when absent. */
  dryRunDir?: string;
  reporter: Reporter;
  /** The environment kubeforge runs in: proxy variables, KUBEFORGE_RELEASE_BASE_URL. */
  env: NodeJS.ProcessEnv;
  /** How release labels are fetched (default: the global fetch). */
  fetch?: typeof fetch;
  /** The command's standard output: dry-run API objects, or the closing message. */
  stdout: (text: string) => void;
  /** How to reach the API; default: the node's own kubeconfig files, or the dry-run recorder. */
  api?: ClusterAccess;
  now?: () => Date;
}

/** The request's documents, decoded (once: documents given decoded are taken as they are). */
export function documentsOf(config: WorkflowRequest["config"]): ConfigDocuments {
  if (!config) return { ignoredKinds: [] };
  return "documents" in config
    ? config.documents
    : decodeConfigDocuments(config.text, config.source);
}

export type RunModeRequest = Pick<
  WorkflowRequest,
  "host" | "dryRun" | "dryRunDir" | "reporter" | "stdout" | "api"
>;

export interface RunMode {
  /** The host phases write through: the machine, or its dry-run view. */
  host: Host;
  api: ClusterAccess;
  output: (text: string) => void;
  dryRunDir: string | undefined;
}

export async function runMode(request: RunModeRequest): Promise<RunMode> {
  const { reporter } = request;
  const info = (line: string) => reporter.info(line);
  if (!request.dryRun) {
    return {
      host: request.host,
      api: request.api ?? new NodeClusterAccess(request.host),
      output: request.stdout,
      dryRunDir: undefined,
    };
  }
  const dryRunDir = resolve(
    request.dryRunDir ?? (await mkdtemp(join(tmpdir(), "kubeforge-dry-run-"))),
  );
  return {
    host: new DryRunHost(request.host, dryRunDir, (name, argv) => info(wouldRunLine(name, argv))),
    api: request.api ?? new DryRunClusterAccess(request.stdout, info),
    output: (text) => {
      for (const line of text.replace(/\n$/, "").split("\n")) info(line);
    },
    dryRunDir,
  };
}
