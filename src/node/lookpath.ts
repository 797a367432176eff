import type { Host } from "../remote/host.js";

/** How commands are found on the host. */
export interface LookupOptions {
  /**
   * The PATH to search instead of the host's own (tests point it at a folder they control).
   * Executables found are then run by their absolute path.
   */
  searchPath?: string;
}

/**
 * The absolute path of an executable on the host's PATH, or undefined (Go's exec.LookPath, run
 * on the host itself so that it also works over SSH). Uses the POSIX `command -v` of `sh`, as
 * root: kubeadm runs as root and so does every command kubeforge runs on a node, so a user
 * reached through sudo must find what root finds (sudo's secure_path has /usr/sbin and
 * /usr/local/sbin, a login user's PATH may not).
 */
export async function lookPath(
  host: Host,
  name: string,
  opts: LookupOptions = {},
): Promise<string | undefined> {
  const argv =
    opts.searchPath === undefined
      ? ["sh", "-c", 'command -v "$1"', "sh", name]
      : ["sh", "-c", 'PATH="$2"; command -v "$1"', "sh", name, opts.searchPath];
  const r = await host.exec(argv, { sudo: true, readOnly: true, timeoutMs: 10_000 });
  const found = r.stdout.trim().split("\n")[0] ?? "";
  // `command -v` prints a builtin's bare name; only a path is an executable on disk.
  return r.code === 0 && found.startsWith("/") ? found : undefined;
}
