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
import { getInitSystem } from "../../node/init-system.js";
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

/** Copies the binaries to the node's staging folder (a re-run copies nothing that is there). */
export async function stageBinaries(
  host: Host,
  fetched: readonly FetchedArtifact[],
  version: string,
  log: (line: string) => void,
): Promise<void> {
  const dir = stagingDir(version);
  await host.mkdirp(dir, 0o755);
  const staged = fetched.map((f) => ({
    ...f,
    files: f.files.map((file) => ({ ...file, to: posix.join(dir, posix.basename(file.to)) })),
  }));
  await installArtifacts(host, staged, { log });
}

async function run(host: Host, argv: string[]): Promise<void> {
  const r = await host.exec(argv, { sudo: true, timeoutMs: 120_000 });
  if (r.code !== 0) throw new CommandError(host.name, argv, r);
}

/**
 * Puts the staged binaries in place: the one in use is copied to `<path>.kubeforge-prev`, the
 * staged one renamed over it (a running kubelet is replaced, never truncated). A binary that is
 * the staged one already (a resumed run) is left alone. Returns the paths of the kept binaries.
 */
export async function swapBinaries(
  host: Host,
  fetched: readonly FetchedArtifact[],
  version: string,
): Promise<string[]> {
  const kept: string[] = [];
  for (const file of fetched.flatMap((f) => f.files)) {
    const staged = commandPath(host, posix.join(stagingDir(version), posix.basename(file.to)));
    const target = commandPath(host, file.to);
    const previous = `${file.to}${PREVIOUS_SUFFIX}`;
    if (await host.exists(file.to)) {
      const same = await host.exec(["cmp", "-s", "--", staged, target], {
        sudo: true,
        readOnly: true,
        timeoutMs: 120_000,
      });
      if (same.code === 0) {
        if (await host.exists(previous)) kept.push(previous);
        continue;
      }
      await run(host, ["cp", "-p", "--", target, commandPath(host, previous)]);
      kept.push(previous);
    }
    await run(host, ["cp", "-p", "--", staged, `${target}.kubeforge-new`]);
    await run(host, ["mv", "-f", "--", `${target}.kubeforge-new`, target]);
  }
  return kept;
}

/** `systemctl daemon-reload && systemctl restart kubelet`. */
export async function restartKubelet(host: Host): Promise<void> {
  const init = await getInitSystem(host);
  if (!init)
    throw new Error(`${host.name}: no supported init system detected to restart the kubelet`);
  await init.serviceRestart("kubelet");
}
