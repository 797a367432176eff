import { isAbsolute, join, normalize } from "node:path";

// The kernel's own views are never relocated: preflight reads the machine it runs on
// even when node state (/etc/kubernetes, /var/lib/kubelet...) lives under a rootfs.
const KERNEL_PATHS = ["/proc", "/sys", "/dev"];

/**
 * Maps an absolute host path under `root` (the `--rootfs` or dry-run folder).
 * Paths under /proc, /sys and /dev stay where they are.
 */
export function mapPath(root: string | undefined, path: string): string {
  if (!isAbsolute(path)) throw new Error(`host paths must be absolute, got "${path}"`);
  const clean = normalize(path);
  if (!root || KERNEL_PATHS.some((k) => clean === k || clean.startsWith(`${k}/`))) return clean;
  return join(root, clean);
}
