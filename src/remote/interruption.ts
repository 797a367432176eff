import { constants as osConstants } from "node:os";

// The run interrupted as a whole: Ctrl-C, or GitHub's runner cancelling the job (it sends
// SIGINT, then SIGTERM 7.5 s later, then SIGKILL). Without this, Node would exit at once and
// every command kubeforge had started would go on without it: sshd leaves a session's command
// running when the connection goes (no TTY), and a local command has its own process group.
// Instead every command a Host runs is cancelled the way a caller's AbortSignal cancels it (TERM
// to its process group), no new command starts, waits on the API stop (kube/poll.ts, the
// readiness wait), and the workflow fails with those errors, closing its connections.

const interruptions = new AbortController();

/** Aborted once the run is interrupted; its reason says by what. */
export const interruption: AbortSignal = interruptions.signal;

/** Interrupts the run: every command running on any Host is cancelled, and every later one. */
export function interrupt(reason: Error): void {
  interruptions.abort(reason);
}

/** The signal a Host's command obeys: the caller's, if any, and the run's interruption. */
export function cancellable(signal: AbortSignal | undefined): AbortSignal {
  return signal ? AbortSignal.any([signal, interruption]) : interruption;
}

/** Why `signal` aborted, as an Error (its reason when that is one). */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}

/**
 * Waits `ms` between the attempts of a retry loop; rejects at once with the reason when the
 * caller's signal aborts or the run is interrupted. Every wait and retry loop waits through
 * this (or kube/poll.ts, which observes the same signals), so none outlives a cancellation.
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  const s = cancellable(signal);
  return new Promise((resolve, reject) => {
    if (s.aborted) return reject(abortReason(s));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(s));
    };
    const timer = setTimeout(() => {
      s.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    s.addEventListener("abort", onAbort, { once: true });
  });
}

/** How long an interrupted run has to end its commands before it exits anyway. */
export const INTERRUPT_GRACE_MS = 7_000;

/**
 * SIGINT and SIGTERM interrupt the run (an edge installs this: the CLI, the action's main
 * step). The first one cancels every command and sets the exit code 128 + signal number; the
 * run then ends by itself, or after INTERRUPT_GRACE_MS at the latest (a step that cannot be
 * cut short), before the runner's SIGKILL. A second signal exits at once.
 */
export function interruptOnSignals(log: (line: string) => void): void {
  const onSignal = (name: NodeJS.Signals) => {
    const code = 128 + (osConstants.signals[name] ?? 15);
    if (interruption.aborted) process.exit(code);
    log(`kubeforge: ${name}: cancelling the commands running on every host, then stopping`);
    process.exitCode = code;
    interrupt(new Error(`interrupted by ${name}`));
    setTimeout(() => process.exit(code), INTERRUPT_GRACE_MS).unref();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}
