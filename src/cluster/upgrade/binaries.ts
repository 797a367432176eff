import { posix } from "node:path";
import type { ClusterSpec } from "../../config/cluster/types.js";
import { goArch, releaseArtifacts } from "../../node/artifacts/catalog.js";
import {
  artifactCacheDir,
  fetchArtifact,
  fetchKubeletOverride,
  type FetchedArtifact,
} from "../../node/artifacts/fetch.js";
import { commandPath, installArtifacts } from "../../node/artifacts/install.js";
import { getInitSystem, type InitSystem } from "../../node/init-system.js";
import { CommandError, type Host } from "../../remote/host.js";

// The target kubelet and kubectl: downloaded on the runner once per architecture (checksums and
// cache, as node preparation does: node/artifacts), copied to a staging folder on every node
// while nothing active changes, then — when the node's turn comes — put in place with the
// previous binary kept beside it as `<name>.kubeforge-prev`, and the kubelet restarted.

/** Where the target binaries wait on a node until its turn. */
export const stagingDir = (version: string) => `/var/lib/kubeforge/upgrade/${version}`;
/** The suffix of the binary a swap replaced (kept for a rollback by hand). */
export const PREVIOUS_SUFFIX = ".kubeforge-prev";

const STAGED = ["kubelet", "kubectl"] as const;

/**
 * Downloads the target kubelet and kubectl for every architecture among the nodes; with
 * `kubeletBinary` (the user's build: a runner path or URL, as a Cluster's kubeletBinary) that
 * kubelet instead of the released one, refused for a node of another architecture.
 */
export async function downloadTargetBinaries(
  spec: ClusterSpec,
  version: string,
  nodes: readonly { name: string; arch: string }[],
  opts: {
    env: NodeJS.ProcessEnv;
    log: (line: string) => void;
    kubeletBinary?: string;
    /** `version` is a CI build: from the Cluster's downloads.kubernetesCI. */
    ciBuild?: boolean;
  },
): Promise<Map<string, FetchedArtifact[]>> {
  const out = new Map<string, FetchedArtifact[]>();
  const fetchOpts = { cacheDir: artifactCacheDir(opts.env), log: opts.log };
  const custom =
    opts.kubeletBinary === undefined
      ? undefined
      : await fetchKubeletOverride(opts.kubeletBinary, fetchOpts);
  for (const node of nodes) {
    if (custom && custom.arch !== goArch(node.arch)) {
      throw new Error(
        `the custom kubelet ${custom.source} is built for ${custom.arch}, but node ${node.name} is ${goArch(node.arch)}`,
      );
    }
  }
  for (const nodeArch of new Set(nodes.map((n) => n.arch))) {
    const wanted = releaseArtifacts(version, nodeArch, spec.prepare.downloads, {
      ciBuild: opts.ciBuild === true,
    }).filter(
      (a) => (STAGED as readonly string[]).includes(a.name) && !(custom && a.name === "kubelet"),
    );
    const fetched = await Promise.all(wanted.map((a) => fetchArtifact(a, fetchOpts)));
    out.set(goArch(nodeArch), custom ? [...fetched, custom] : fetched);
  }
  return out;
}

/**
 * Copies the binaries to the node's staging folder (a re-run copies nothing that is there). The
 * folder is made 0755 by the first write into it (a Host's writeFile makes missing parents so).
 */
export async function stageBinaries(
  host: Host,
  fetched: readonly FetchedArtifact[],
  version: string,
  log: (line: string) => void,
): Promise<void> {
  const dir = stagingDir(version);
  const staged = fetched.map((f) => ({
    ...f,
    files: f.files.map((file) => ({ ...file, to: posix.join(dir, posix.basename(file.to)) })),
  }));
  await installArtifacts(host, staged, { log });
}

// One round trip for every binary of a node: the node's turn is on the upgrade's critical path.
// Per binary (staged, in use, previous): a binary that is the staged one already (a resumed run)
// is left alone; else the one in use is copied beside it and the staged one renamed over it (a
// running kubelet is replaced, never truncated). One line per binary: "kept" when a previous
// binary was kept (now, or by the run that swapped it).
const SWAP_SCRIPT = `set -e
while [ "$#" -gt 0 ]; do
  staged=$1 target=$2 previous=$3
  shift 3
  kept=none
  if [ -e "$target" ]; then
    if cmp -s -- "$staged" "$target"; then
      if [ -e "$previous" ]; then echo kept; else echo none; fi
      continue
    fi
    cp -p -- "$target" "$previous"
    kept=kept
  fi
  cp -p -- "$staged" "$target.kubeforge-new"
  mv -f -- "$target.kubeforge-new" "$target"
  echo "$kept"
done`;

/**
 * Puts the staged binaries in place, the one in use kept as `<path>.kubeforge-prev`. Returns
 * the paths of the kept binaries.
 */
export async function swapBinaries(
  host: Host,
  fetched: readonly FetchedArtifact[],
  version: string,
): Promise<string[]> {
  const files = fetched.flatMap((f) => f.files);
  const args = files.flatMap((file) => [
    commandPath(host, posix.join(stagingDir(version), posix.basename(file.to))),
    commandPath(host, file.to),
    commandPath(host, `${file.to}${PREVIOUS_SUFFIX}`),
  ]);
  const argv = ["sh", "-c", SWAP_SCRIPT, "sh", ...args];
  const r = await host.exec(argv, { sudo: true, timeoutMs: 120_000 });
  const lines = r.stdout.trim().split("\n");
  if (r.code !== 0 || lines.length !== files.length) throw new CommandError(host.name, argv, r);
  return files.filter((_, i) => lines[i] === "kept").map((f) => `${f.to}${PREVIOUS_SUFFIX}`);
}

/**
 * The kubelet's init system, its unit files reloaded (systemd's daemon-reload, kubeadm's first
 * half of a restart): asked while the binaries are swapped, which it does not read.
 */
export async function kubeletInitSystem(host: Host): Promise<InitSystem> {
  const init = await getInitSystem(host);
  if (!init) {
    throw new Error(`${host.name}: no supported init system detected to restart the kubelet`);
  }
  await init.reloadUnits();
  return init;
}
