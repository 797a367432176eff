import { writeRunnerFile } from "../remote/runner-files.js";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ClusterSpec } from "../config/cluster/types.js";

// The state folder RUNNER_TEMP/kubeforge-<cluster name> holds one cluster's files on the runner
// (admin.conf, kubeforge.log, tunnel.json, the plan). Two steps of one job that give two
// different clusters the same name would share it: the second would overwrite the first's
// admin.conf and orphan its tunnel. The folder records whose it is, and a step building another
// cluster there is refused before anything is written.

/** Who a state folder belongs to: the cluster's name and where its first control plane is. */
interface FolderOwner {
  cluster: string;
  firstControlPlane: string;
}

const OWNER_FILE = "cluster.json";

function ownerOf(spec: ClusterSpec): FolderOwner {
  const first = spec.nodes.find((n) => n.role === "control-plane") ?? spec.nodes[0]!;
  return { cluster: spec.name, firstControlPlane: first.host };
}

/**
 * Claims `stateDir` for `spec`: records the owner when the folder has none, and refuses (one
 * sentence naming the folder and the `name` input) when it belongs to another cluster. The same
 * cluster again (a re-run, a dry run first, nodes added) is the owner and may use it.
 */
export async function claimStateFolder(stateDir: string, spec: ClusterSpec): Promise<void> {
  const file = join(stateDir, OWNER_FILE);
  const mine = ownerOf(spec);
  const text = await readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return undefined;
    throw new Error(`cannot read ${file}: ${e.message}`, { cause: e });
  });
  if (text !== undefined) {
    let recorded: Partial<FolderOwner> = {};
    try {
      recorded = JSON.parse(text) as Partial<FolderOwner>;
    } catch {
      // Unreadable: not ours to judge; recorded anew below.
    }
    if (
      recorded.firstControlPlane !== undefined &&
      recorded.firstControlPlane !== mine.firstControlPlane
    ) {
      throw new Error(
        `the folder ${stateDir} holds another cluster named "${mine.cluster}" (first control plane ${recorded.firstControlPlane}; this one's is ${mine.firstControlPlane}), built by an earlier step of this job: give this step a different \`name\` input`,
      );
    }
    if (recorded.cluster === mine.cluster) return;
  }
  await writeRunnerFile(file, `${JSON.stringify(mine)}\n`, 0o600);
}

/**
 * The upgrade rehearsal's UpgradeReport and its JUnit twin in the state folder: the main step
 * writes them (the upgrade-report output), the post step uploads them with the diagnostics.
 */
export function upgradeReportFiles(stateDir: string): { report: string; junit: string } {
  return {
    report: join(stateDir, "upgrade-report.json"),
    junit: join(stateDir, "junit-upgrade.xml"),
  };
}
