import { posix } from "node:path";
import { CommandError, type Host } from "../../remote/host.js";

// Unmounting what the kubelet mounted under its directory (volumes, projected secrets), before
// that directory is emptied: kubeadm's unmountKubeletDirectory (cmd/phases/reset/unmount_linux.go,
// v1.35). Every /proc/mounts entry strictly below the directory is unmounted (the directory
// itself may be a mount and stays); any failure stops the reset, because deleting the contents
// of a directory that still has a file system mounted inside would delete that file system's
// data too.
// Differences from kubeadm, for the Host port: `umount` runs as a command (kubeadm calls
// unmount(2) with ResetConfiguration.unmountFlags, none by default); mounts are unmounted
// deepest first (reverse /proc/mounts order) so a mount inside another does not make its parent
// busy; /proc/mounts escapes (\040 for a space) are decoded.

/** kubeadm: constants.KubeletRunDirectory. */
export const KUBELET_RUN_DIR = "/var/lib/kubelet";

/** Decodes the octal escapes the kernel writes in /proc/mounts fields (space, tab, \n, \\). */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * Mount points of `procMounts` (the text of /proc/mounts) strictly below `dir`, in the order to
 * unmount them: the last mounted first.
 */
export function mountPointsUnder(procMounts: string, dir: string): string[] {
  // kubeadm adds a trailing "/" so that a mount of the directory itself is skipped.
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  return procMounts
    .split("\n")
    .map((line) => line.split(" "))
    .filter((fields) => fields.length >= 2)
    .map((fields) => unescapeMountField(fields[1]!))
    .filter((mountPoint) => mountPoint.startsWith(prefix))
    .reverse();
}

/**
 * The folder a Host maps "/" to (LocalHost's --rootfs). Command arguments and /proc/mounts are
 * the machine's own paths, which the Host's file operations translate but commands do not.
 */
export function rootfsOf(host: Host): string | undefined {
  const rootfs = (host as { rootfs?: unknown }).rootfs;
  return typeof rootfs === "string" && rootfs !== "" ? rootfs : undefined;
}

/** The machine path of a host path: under the rootfs, if any. */
export function machinePath(host: Host, path: string): string {
  const rootfs = rootfsOf(host);
  return rootfs ? posix.join(rootfs, path) : path;
}

export type KubeletDirResolution =
  { ok: true; realPath: string } | { ok: false; missing: boolean; reason: string };

/**
 * kubeadm's filepath.EvalSymlinks(KubeletRunDirectory): the directory with every symbolic link
 * resolved, as the kernel names it in /proc/mounts; an error when it does not exist.
 */
export async function resolveKubeletDir(host: Host): Promise<KubeletDirResolution> {
  if (!(await host.exists(KUBELET_RUN_DIR))) {
    return {
      ok: false,
      missing: true,
      reason: `lstat ${KUBELET_RUN_DIR}: no such file or directory`,
    };
  }
  const path = machinePath(host, KUBELET_RUN_DIR);
  const r = await host.exec(["readlink", "-f", path], { readOnly: true, timeoutMs: 10_000 });
  const resolved = r.stdout.trim();
  if (r.code !== 0 || !resolved.startsWith("/")) {
    return {
      ok: false,
      missing: false,
      reason: new CommandError(host.name, ["readlink", "-f", path], r).message,
    };
  }
  return { ok: true, realPath: resolved };
}

/**
 * Unmounts every mount strictly below `realDir` (a machine path). Throws one error listing
 * every mount that could not be unmounted.
 */
export async function unmountUnder(host: Host, realDir: string): Promise<string[]> {
  const procMounts = (await host.readFile("/proc/mounts")).toString("utf8");
  const mountPoints = mountPointsUnder(procMounts, realDir);
  const failures: string[] = [];
  for (const mountPoint of mountPoints) {
    const argv = ["umount", mountPoint];
    const r = await host.exec(argv, { sudo: true, timeoutMs: 60_000 });
    if (r.code !== 0) {
      failures.push(
        `failed to unmount "${mountPoint}": ${new CommandError(host.name, argv, r).message}`,
      );
    }
  }
  if (failures.length > 0) {
    throw new Error(
      `encountered the following errors while unmounting directories in "${realDir}/": [${failures.join(", ")}]`,
    );
  }
  return mountPoints;
}
