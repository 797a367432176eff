import type { Host } from "../../remote/host.js";

/**
 * Whether a Unix socket exists on the host. Asked of the host's own shell: /run and /var/run are
 * the machine's, also under --rootfs. As root: the runtime's folder need not be open to a user
 * reached through sudo.
 */
export async function socketExists(host: Host, path: string): Promise<boolean> {
  const r = await host.exec(["test", "-S", path], {
    sudo: true,
    readOnly: true,
    timeoutMs: 10_000,
  });
  return r.code === 0;
}
