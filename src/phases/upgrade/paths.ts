import { randomInt } from "node:crypto";
import { posix } from "node:path";
import { KUBERNETES_DIR, MANIFESTS_DIR } from "../../config/paths.js";
import type { Host } from "../../remote/host.js";
import { allOrFirstError } from "../../remote/fleet.js";

// The folders of a static Pod upgrade (kubeadm: phases/upgrade/staticpods.go
// KubeStaticPodPathManager, constants.CreateTempDir / CreateTimestampDir): new manifests are
// rendered into /etc/kubernetes/tmp/kubeadm-upgraded-manifests<random> (removed at the end),
// replaced ones are moved to /etc/kubernetes/tmp/kubeadm-backup-manifests-<date> and the etcd
// data folder is copied to kubeadm-backup-etcd-<date> (both kept: "will need to be cleared
// manually"). Every operation goes through the Host, so --rootfs, SSH and dry runs need
// nothing special.

/** /etc/kubernetes/tmp (constants.TempDir). */
export const KUBEADM_TMP_DIR = posix.join(KUBERNETES_DIR, "tmp");

/** constants.CreateTimestampDir's format: Go's "2006-01-02-15-04-05" (UTC here). */
export function timestamp(now: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${now.getUTCFullYear()}-${p(now.getUTCMonth() + 1)}-${p(now.getUTCDate())}-${p(now.getUTCHours())}-${p(now.getUTCMinutes())}-${p(now.getUTCSeconds())}`;
}

/** os.MkdirTemp's suffix: a random decimal number. */
export function randomSuffix(): string {
  return String(randomInt(0, 2 ** 32 - 1));
}

/** constants.CreateTempDir: `<parent>/<prefix><random>`, 0700. */
export async function createTempDir(host: Host, parent: string, prefix: string): Promise<string> {
  const dir = posix.join(parent, `${prefix}${randomSuffix()}`);
  await host.mkdirp(dir, 0o700);
  return dir;
}

/** constants.CreateTimestampDir: `<parent>/<prefix>-<date>`, 0700 (reused if it exists). */
export async function createTimestampDir(
  host: Host,
  parent: string,
  prefix: string,
  now: Date,
): Promise<string> {
  const dir = posix.join(parent, `${prefix}-${timestamp(now)}`);
  await host.mkdirp(dir, 0o700);
  return dir;
}

/**
 * kubeadm's MoveFile (a rename): on the host itself where it can, else through the Host (read,
 * write, remove); either way the file keeps its bytes and mode.
 */
export async function moveFile(host: Host, from: string, to: string): Promise<void> {
  if (host.rename) {
    try {
      return await host.rename(from, to);
    } catch (e) {
      throw renameError(e, from, to);
    }
  }
  const st = await host.stat(from);
  if (!st?.isFile) throw new Error(`rename ${from} ${to}: no such file or directory`);
  await host.writeFile(to, await host.readFile(from), st.mode & 0o7777);
  await host.remove(from);
}

/** A missing source said as Go's os.Rename says it. */
function renameError(e: unknown, from: string, to: string): unknown {
  return (e as NodeJS.ErrnoException).code === "ENOENT"
    ? new Error(`rename ${from} ${to}: no such file or directory`, { cause: e })
    : e;
}

/** moveFile for each pair in order, stopping at the first that fails: one command where it can. */
export async function moveFiles(host: Host, moves: readonly [string, string][]): Promise<void> {
  if (!host.renameAll || moves.length < 2) {
    for (const [from, to] of moves) await moveFile(host, from, to);
    return;
  }
  try {
    await host.renameAll(moves);
  } catch (e) {
    const failed = (e as NodeJS.ErrnoException).path;
    const [from, to] = moves.find(([f]) => f === failed) ?? moves[0]!;
    throw renameError(e, from, to);
  }
}

/**
 * Copies the contents of `src` onto `dst` (files replaced, others kept): on the host itself where
 * it can (an etcd data folder, tens of MB, must not travel to the runner and back), else file by
 * file through the Host.
 */
export async function copyTree(host: Host, src: string, dst: string): Promise<void> {
  if (host.copyTree) return host.copyTree(src, dst);
  const st = await host.stat(src);
  if (!st?.isDirectory) throw new Error(`cannot copy ${src}: not a folder`);
  await host.mkdirp(dst, st.mode & 0o7777);
  for (const name of await host.readDir(src)) {
    const from = posix.join(src, name);
    const to = posix.join(dst, name);
    const child = await host.stat(from);
    if (child?.isDirectory) await copyTree(host, from, to);
    else if (child?.isFile)
      await host.writeFile(to, await host.readFile(from), child.mode & 0o7777);
  }
}

export type StaticPodComponent =
  "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler";

/** kubeadm's StaticPodPathManager. */
export interface StaticPodPaths {
  readonly realManifestDir: string;
  readonly tempManifestDir: string;
  readonly backupManifestDir: string;
  readonly backupEtcdDir: string;
  /** Backups kept after success (manifests: always; etcd: with --etcd-upgrade and local etcd). */
  readonly keepManifestDir: boolean;
  readonly keepEtcdDir: boolean;
}

export const manifestFile = (dir: string, component: StaticPodComponent) =>
  posix.join(dir, `${component}.yaml`);

export class StaticPodPathManager {
  constructor(
    readonly host: Host,
    readonly paths: StaticPodPaths,
  ) {}

  realManifestPath(c: StaticPodComponent): string {
    return manifestFile(this.paths.realManifestDir, c);
  }
  tempManifestPath(c: StaticPodComponent): string {
    return manifestFile(this.paths.tempManifestDir, c);
  }
  backupManifestPath(c: StaticPodComponent): string {
    return manifestFile(this.paths.backupManifestDir, c);
  }
  moveFile(from: string, to: string): Promise<void> {
    return moveFile(this.host, from, to);
  }
  moveFiles(moves: [string, string][]): Promise<void> {
    return moveFiles(this.host, moves);
  }

  /** Removes the temporary folder, and the backups nobody asked to keep. */
  async cleanupDirs(): Promise<void> {
    await this.host.remove(this.paths.tempManifestDir, { recursive: true });
    if (!this.paths.keepManifestDir) {
      await this.host.remove(this.paths.backupManifestDir, { recursive: true });
    }
    if (!this.paths.keepEtcdDir) {
      await this.host.remove(this.paths.backupEtcdDir, { recursive: true });
    }
  }
}

/**
 * kubeadm's GetPathManagerForUpgrade: the three folders created now; the etcd backup is kept
 * when etcd is upgraded and local.
 */
export async function pathManagerForUpgrade(
  host: Host,
  now: Date,
  opts: { etcdUpgrade: boolean; externalEtcd: boolean },
): Promise<StaticPodPathManager> {
  // Three folders of their own: made at once, the first failure in kubeadm's order thrown.
  const [tempManifestDir, backupManifestDir, backupEtcdDir] = await allOrFirstError([
    createTempDir(host, KUBEADM_TMP_DIR, "kubeadm-upgraded-manifests"),
    createTimestampDir(host, KUBEADM_TMP_DIR, "kubeadm-backup-manifests", now),
    createTimestampDir(host, KUBEADM_TMP_DIR, "kubeadm-backup-etcd", now),
  ]);
  return new StaticPodPathManager(host, {
    realManifestDir: MANIFESTS_DIR,
    tempManifestDir,
    backupManifestDir,
    backupEtcdDir,
    keepManifestDir: true,
    keepEtcdDir: opts.etcdUpgrade && !opts.externalEtcd,
  });
}
