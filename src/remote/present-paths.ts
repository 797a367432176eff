import { CommandError, type Host } from "./host.js";

// "Which of these paths exist on the machine", asked in one command (one process start on the
// host, and one sudo, instead of one per path). Asked of the machine itself with exec, not
// through the Host's file operations: a dry run or a --rootfs run still sees the real
// distribution's layout and runtime sockets.

/** The `test` each path must pass: exists, or is a Unix socket. */
export type PathTest = "-e" | "-S";

/** The loop, for a script of its own: it prints each argument that passes, one per line. */
export function presentPathsLoop(test: PathTest): string {
  return `for p; do if [ ${test} "$p" ]; then echo "$p"; fi; done`;
}

/**
 * Which of `paths` pass `test`, in their order. `sudo`: as root (a runtime's folder need not be
 * open to a user reached through sudo). Throws naming the command when it could not run.
 */
export async function presentPaths(
  host: Host,
  test: PathTest,
  paths: readonly string[],
  opts: { sudo?: boolean } = {},
): Promise<string[]> {
  if (paths.length === 0) return [];
  const argv = ["sh", "-c", presentPathsLoop(test), "sh"];
  const r = await host.exec([...argv, ...paths], {
    readOnly: true,
    timeoutMs: 10_000,
    ...(opts.sudo ? { sudo: true } : {}),
  });
  if (r.code !== 0) throw new CommandError(host.name, argv, r);
  const found = new Set(r.stdout.split("\n"));
  return paths.filter((p) => found.has(p));
}
