// How a command is ended early: at its time limit, or when the caller cancels it.
//
// The time limit is enforced where the command runs. Under sudo the caller cannot signal
// the root process tree (a user may signal sudo, not what sudo started), so the limit runs
// inside sudo as coreutils `timeout`, which ends its whole process group even when nobody is
// left to ask it to. Under sudo every command runs so, with a limit of 0 (none) when it has
// none: on a cancel sudo relays the caller's TERM to `timeout`, which passes it on and sends
// KILL a few seconds later, so a root command that ignores TERM ends too.

/** Seconds `timeout` gives the command after its limit (or a TERM) before it sends SIGKILL. */
export const KILL_AFTER_SECONDS = 5;

/** `timeout`'s exit code when the limit was reached. */
export const TIMED_OUT_CODE = 124;

/** `timeout -k 5 <seconds>` before argv (seconds rounded up, at least 1); argv alone without a limit. */
export function timeLimited(argv: readonly string[], timeoutMs: number | undefined): string[] {
  if (timeoutMs === undefined) return [...argv];
  return underTimeout(argv, Math.max(1, Math.ceil(timeoutMs / 1000)));
}

/**
 * argv as sudo runs it: always under `timeout -k 5 <seconds>`, 0 seconds (no limit) when the
 * command has none, so that a cancel reaches the root command with KILL behind the TERM.
 */
export function endableAsRoot(argv: readonly string[], timeoutMs: number | undefined): string[] {
  return timeoutMs === undefined ? underTimeout(argv, 0) : timeLimited(argv, timeoutMs);
}

function underTimeout(argv: readonly string[], seconds: number): string[] {
  return ["timeout", "-k", String(KILL_AFTER_SECONDS), String(seconds), ...argv];
}

/**
 * The error a cancelled command rejects with, once the command is gone: "<host>: cancelled
 * \"<command>\"" and the signal's reason as the cause.
 */
export function cancelledError(host: string, command: string, signal: AbortSignal): Error {
  return new Error(`${host}: cancelled "${command}"`, { cause: signal.reason });
}

/**
 * A command as messages quote it, on one line: the arguments joined by spaces, and a shell
 * script (`sh -c SCRIPT`) by its first line. kubeforge's own scripts run many lines; the user
 * needs to see which command it was, not the whole script over several lines of the log.
 */
export function displayCommand(argv: readonly string[]): string {
  return argv
    .map((arg) => {
      if (!/[\r\n]/.test(arg)) return arg;
      const first = arg.split(/\r?\n/).find((l) => l.trim() !== "") ?? "";
      return `'${first.trim()} …'`;
    })
    .join(" ");
}
