import { posix } from "node:path";
import { EtcdClient } from "../../etcd/client.js";
import { etcdClientCredentials } from "../../phases/upgrade/etcd-access.js";
import { timestamp } from "../../phases/upgrade/paths.js";
import type { Host } from "../../remote/host.js";
import { routeThrough } from "../../remote/route.js";
import { stagingDir } from "./binaries.js";

// The etcd snapshot an upgrade takes before its first change (kubeadm-upgrade.md §5.4 "Backup"):
// etcd's own Maintenance.Snapshot of the first control plane's member, what `etcdctl snapshot
// save` writes and `etcdctl snapshot restore` reads, kept on that control plane beside the
// staged binaries of the target, 0600 (it holds every Secret of the cluster, so it never goes to
// the runner or an artifact). kubeadm itself only copies the data folder of the member it
// upgrades (kubeadm-backup-etcd-<date>); kubespray snapshots etcd before it restarts it.

/** The member's loopback client URL: kubeadm's etcd listens there and its certificate names it. */
const LOCAL_ETCD = "https://127.0.0.1:2379";

const SNAPSHOT_FILE = /^etcd-snapshot-[0-9-]+\.db$/;

/** The newest snapshot an earlier run of the upgrade to `version` left on the host. */
export async function existingSnapshot(host: Host, version: string): Promise<string | undefined> {
  const dir = stagingDir(version);
  const names = (await host.readDir(dir).catch(() => [] as string[]))
    .filter((n) => SNAPSHOT_FILE.test(n))
    .sort();
  return names.length > 0 ? posix.join(dir, names.at(-1)!) : undefined;
}

/**
 * Streams a snapshot of the host's etcd member (reached along the host's route) and writes it
 * to `<staging dir>/etcd-snapshot-<date>.db`, 0600. A Host's writeFile is atomic (a hidden
 * temporary name, then a rename): a file with the final name is always a whole snapshot.
 */
export async function takeSnapshot(
  host: Host,
  certificatesDir: string,
  version: string,
  now: Date,
): Promise<{ path: string; bytes: number }> {
  const client = new EtcdClient({
    endpoints: [LOCAL_ETCD],
    tls: await etcdClientCredentials(host, certificatesDir),
    route: routeThrough(host),
  });
  const data = await client.snapshot(LOCAL_ETCD);
  const dir = stagingDir(version);
  const path = posix.join(dir, `etcd-snapshot-${timestamp(now)}.db`);
  // Its folder, when missing, is made 0755 as the staging makes it.
  await host.writeFile(path, data, 0o600);
  return { path, bytes: data.length };
}
