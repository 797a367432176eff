// File and directory checks: kubeadm's FileAvailableCheck, DirAvailableCheck,
// FileExistingCheck and FileContentCheck (preflight/checks.go, kubernetes/kubernetes@00b6a4c7,
// ≈ v1.35). Paths are host paths; the Host maps them under --rootfs (or the dry-run folder),
// except /proc, /sys and /dev, which always show the running kernel.
import type { Host } from "../../remote/host.js";
import { type Check, fail, makeCheck, pass, pathLabel } from "./checks.js";

/** Error when the file already exists ("FileAvailable-<path>"). */
export function fileAvailableCheck(host: Host, path: string, label?: string): Check {
  return makeCheck(label ?? `FileAvailable-${pathLabel(path)}`, async () =>
    (await host.exists(path)) ? fail(`${path} already exists`) : pass(),
  );
}

/**
 * Error when the directory exists and is not empty ("DirAvailable-<path>"). Like kubeadm,
 * a path that exists but is not a directory cannot be listed and counts as "not empty".
 */
export function dirAvailableCheck(host: Host, path: string, label?: string): Check {
  return makeCheck(label ?? `DirAvailable-${pathLabel(path)}`, async () => {
    const st = await host.stat(path);
    if (st === undefined) return pass();
    if (!st.isDirectory || (await host.readDir(path)).length > 0) {
      return fail(`${path} is not empty`);
    }
    return pass();
  });
}

/** Error when the file does not exist ("FileExisting-<path>", or a label). */
export function fileExistingCheck(host: Host, path: string, label?: string): Check {
  return makeCheck(label ?? `FileExisting-${pathLabel(path)}`, async () =>
    (await host.exists(path)) ? pass() : fail(`${path} doesn't exist`),
  );
}

/**
 * Error unless the file starts with `content` ("FileContent-<path>"): kubeadm compares only
 * the first len(content) bytes, so "1\n" in /proc/sys/net/ipv4/ip_forward matches "1".
 */
export function fileContentCheck(host: Host, path: string, content: string, label?: string): Check {
  return makeCheck(label ?? `FileContent-${pathLabel(path)}`, async () => {
    let data: Buffer;
    try {
      data = await host.readFile(path);
    } catch (e) {
      // kubeadm: any failure to open is "does not exist"; a failed read (a directory opens
      // but cannot be read) is "could not be read".
      const code = (e as NodeJS.ErrnoException).code;
      return fail(code === "EISDIR" ? `${path} could not be read` : `${path} does not exist`);
    }
    const expected = Buffer.from(content);
    return data.subarray(0, expected.length).equals(expected)
      ? pass()
      : fail(`${path} contents are not set to ${content}`);
  });
}
