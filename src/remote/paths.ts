import { existsSync } from "node:fs";
import { isAbsolute, join, normalize } from "node:path";

// Host paths under a `--rootfs` or dry-run folder. The kernel's own views (/proc, /sys, /dev) are
// read from the machine: preflight checks the machine it runs on even when node state
// (/etc/kubernetes, /var/lib/kubelet...) lives under a rootfs. Writes and deletes never leave the
// folder, kernel paths included (a --cert-dir under /dev/shm must not put real private keys
// there, nor a reset delete real files), and what was written there is read back from there.
const KERNEL_PATHS = ["/proc", "/sys", "/dev"];

function absolute(path: string): string {
  if (!isAbsolute(path)) throw new Error(`host paths must be absolute, got "${path}"`);
  return normalize(path);
}

const isKernelPath = (clean: string) =>
  KERNEL_PATHS.some((k) => clean === k || clean.startsWith(`${k}/`));

/** Where a write or a delete of `path` goes: always under `root` when there is one. */
export function mapWritePath(root: string | undefined, path: string): string {
  const clean = absolute(path);
  return root ? join(root, clean) : clean;
}

/**
 * Where a read of `path` goes: under `root`, except a kernel path nothing was written to under
 * `root`, which is read from the machine.
 */
export function mapReadPath(root: string | undefined, path: string): string {
  const clean = absolute(path);
  if (!root) return clean;
  const mapped = join(root, clean);
  return isKernelPath(clean) && !existsSync(mapped) ? clean : mapped;
}
