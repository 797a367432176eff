import type { Host } from "../../remote/host.js";

/**
 * The absolute path of an executable as root finds it (`command -v` under sudo), or undefined.
 * Node preparation runs its tools as root, and root's PATH is not a login user's: Debian gives
 * users no /usr/sbin (iptables, sysctl, modprobe live there) while sudo's secure_path has it.
 */
export async function whichAsRoot(host: Host, name: string): Promise<string | undefined> {
  const r = await host.exec(["sh", "-c", 'command -v "$1"', "sh", name], {
    sudo: true,
    readOnly: true,
    timeoutMs: 10_000,
  });
  const found = r.stdout.trim().split("\n")[0] ?? "";
  // `command -v` prints a builtin's bare name; only a path is an executable on disk.
  return r.code === 0 && found.startsWith("/") ? found : undefined;
}
