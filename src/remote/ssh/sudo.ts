import { endableAsRoot, timeLimited } from "../command-limits.js";
import { shellJoin } from "./quote.js";

// How a command becomes root on the remote side. No PTY ever: a PTY mixes "\r\n" into output
// and echoes input (KubeKey#3007). With a password, `sudo -S` reads it from stdin once; `-k`
// makes sudo ask every time, so the password line is always consumed and never reaches the
// command; `-p ''` keeps the prompt out of stderr.

export type SudoMode =
  | { kind: "root" }
  | { kind: "nopasswd" }
  | { kind: "password" }
  | { kind: "unavailable"; reason: string };

/** The argv prefix that runs a command as root in this mode ([] when already root). */
export function sudoPrefix(mode: SudoMode): string[] {
  switch (mode.kind) {
    case "root":
      return [];
    case "nopasswd":
      return ["sudo", "-n", "--"];
    case "password":
      return ["sudo", "-S", "-k", "-p", "", "--"];
    case "unavailable":
      throw new Error(`sudo is unavailable: ${mode.reason}`);
  }
}

/**
 * The command line sent to sshd. A time limit runs the command under coreutils `timeout`
 * inside sudo, so the timer runs as root and can end a root process tree (it signals its
 * whole process group), even after the channel is gone. Through sudo every command runs
 * under `timeout`, so that a cancel ends it too (command-limits.ts); a root login needs no
 * such help, kubeforge signals the command's process group itself.
 */
export function remoteCommand(
  argv: readonly string[],
  opts: { sudo?: SudoMode; timeoutMs?: number } = {},
): string {
  const throughSudo = opts.sudo !== undefined && opts.sudo.kind !== "root";
  return shellJoin([
    ...(opts.sudo ? sudoPrefix(opts.sudo) : []),
    ...(throughSudo ? endableAsRoot : timeLimited)(argv, opts.timeoutMs),
  ]);
}

/** Run at connect: the uid, and for a non-root user whether `sudo -n` works. */
export const SUDO_PROBE_SCRIPT = [
  "uid=$(id -u) || exit 1",
  'echo "uid=$uid"',
  'if [ "$uid" != 0 ]; then',
  '  if out=$(sudo -n true 2>&1); then echo "sudo=ok"; else echo "sudo=no"; printf "%s\\n" "$out" | head -n 3; fi',
  "fi",
].join("\n");

export interface SudoProbe {
  uid: number;
  /** undefined for root */
  passwordless?: boolean;
  /** What sudo said when it refused (first lines). */
  detail: string;
}

export function parseSudoProbe(stdout: string): SudoProbe {
  const lines = stdout.split("\n");
  const uid = Number(/^uid=(\d+)$/m.exec(stdout)?.[1] ?? NaN);
  if (!Number.isInteger(uid))
    throw new Error(`unexpected output of the sudo probe: ${JSON.stringify(stdout.slice(0, 200))}`);
  const status = lines.find((l) => l.startsWith("sudo="));
  const detail = lines
    .slice(lines.indexOf(status ?? "") + 1)
    .join(" ")
    .trim();
  return uid === 0 ? { uid, detail: "" } : { uid, passwordless: status === "sudo=ok", detail };
}
