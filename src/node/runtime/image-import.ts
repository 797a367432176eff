import type { Host } from "../../remote/host.js";

// Images loaded into a node's containerd without a registry, where the kubelet's CRI finds them:
// the namespace k8s.io (containerd's CRI plugin keeps its images there, so `ctr` in the default
// namespace would hide them from the kubelet). containerd's own import reads the archive from
// stdin — a `docker save` archive or an OCI image layout tar — and unpacks it with the default
// snapshotter, for the node's own platform (kind's `kind load` does the same:
// pkg/cluster/nodeutils/util.go LoadImageArchive).

/** The containerd namespace of the CRI plugin (containerd's pkg/cri constants.K8sContainerdNamespace). */
export const CRI_NAMESPACE = "k8s.io";

/** How long one node may take to import one archive. */
const IMPORT_TIMEOUT_MS = 10 * 60_000;

/**
 * Imports the archive into the node's containerd (as root) and returns the image names ctr
 * reports; an error names the host, `what` (the archive or images) and ctr's last line.
 */
export async function importImageArchive(
  host: Host,
  archive: Buffer,
  what: string,
): Promise<string[]> {
  const argv = ["ctr", "--namespace", CRI_NAMESPACE, "images", "import", "-"];
  const r = await host.exec(argv, { sudo: true, stdin: archive, timeoutMs: IMPORT_TIMEOUT_MS });
  if (r.code !== 0) {
    const said = (r.stderr || r.stdout).trim().split("\n").at(-1) ?? "";
    throw new Error(`${host.name}: importing ${what} into containerd failed: ${said}`);
  }
  // "unpacking docker.io/library/app:dev (sha256:…)...done" per image.
  return [...r.stdout.matchAll(/^unpacking (\S+) \(sha256:[0-9a-f]+\)/gm)].map((m) => m[1]!);
}
