import type { PhaseTiming } from "../../workflow/runner.js";
import type { Reporter } from "../../workflow/reporter.js";

// kubeadm's `upgrade node` on a worker starts with its preflight phase (the root check and the
// container runtime's, kubeadm cmd/phases/upgrade/node/preflight.go), which only reads the node.
// The cluster upgrade prepares the node's `upgrade node` (its configuration read from the
// cluster and the node) and runs that phase while the nodes before it restart their kubelets;
// at the node's turn the same prepared run goes on with the other phases: what kubeadm's phases
// allow (`phase preflight`, then `--skip-phases preflight`), the same checks a few seconds
// earlier. The first control plane's `upgrade apply` preflight (its checks, the cluster's
// health, the version policy, the image pull: cmd/phases/upgrade/apply/preflight.go) likewise
// runs while etcd's snapshot is taken and the probes start. Its lines are kept
// and printed at the node's turn, where kubeadm prints them; a failed preflight fails the node's
// turn, before anything on it changed.

export const PREFLIGHT_PHASE = "preflight";

interface Line {
  warn: boolean;
  message: string;
}

/** A preflight run ahead: its timings and the rest of its run. */
export interface TakenPreflight<R> {
  timings: PhaseTiming[];
  /** The run the preflight is the first part of, to go on with at the node's turn. */
  rest: R;
}

/**
 * A Reporter that keeps the lines until the node's turn, then prints them and passes what comes
 * after straight on (the rest of the run). Secrets go to `real` at once, so they stay masked.
 */
class HeldReporter implements Reporter {
  private readonly lines: Line[] = [];
  private to: Reporter | undefined;

  constructor(private readonly real: Reporter) {}

  info(message: string): void {
    if (this.to) this.to.info(message);
    else this.lines.push({ warn: false, message });
  }

  warn(message: string): void {
    if (this.to) this.to.warn(message);
    else this.lines.push({ warn: true, message });
  }

  group<T>(title: string, fn: () => Promise<T>): Promise<T> {
    return this.to ? this.to.group(title, fn) : fn();
  }

  mask(secret: string): void {
    this.real.mask(secret);
  }

  /** Prints the lines kept on `to`; later lines go to it directly. */
  release(to: Reporter): void {
    for (const l of this.lines.splice(0)) {
      if (l.warn) to.warn(l.message);
      else to.info(l.message);
    }
    this.to = to;
  }
}

/** Preflights started ahead of their nodes' turns, each taken once. */
export class PreflightsAhead<R = never> {
  private readonly started = new Map<
    string,
    { held: HeldReporter; outcome: Promise<TakenPreflight<R> | { error: unknown }> }
  >();

  /**
   * Starts the node's preflight with `run`, given a reporter that keeps its lines until the
   * node's turn; a node whose preflight started already is left alone.
   */
  start(
    name: string,
    real: Reporter,
    run: (reporter: Reporter) => Promise<TakenPreflight<R>>,
  ): void {
    if (this.started.has(name)) return;
    const held = new HeldReporter(real);
    const outcome = run(held).catch((error: unknown) => ({ error }));
    this.started.set(name, { held, outcome });
  }

  /** Once every preflight started and not taken has ended (their outcomes are dropped). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.started.values()].map((s) => s.outcome));
  }

  /**
   * The node's preflight run ahead, its lines printed on `real` (and those of the rest of its
   * run as they come); undefined when none was started. Throws its error after its lines.
   */
  async take(name: string, real: Reporter): Promise<TakenPreflight<R> | undefined> {
    const started = this.started.get(name);
    if (!started) return undefined;
    this.started.delete(name);
    const outcome = await started.outcome;
    started.held.release(real);
    if ("error" in outcome) throw outcome.error;
    return outcome;
  }
}
