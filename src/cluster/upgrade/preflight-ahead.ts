import type { PhaseTiming } from "../../workflow/runner.js";
import type { Reporter } from "../../workflow/reporter.js";

// kubeadm's `upgrade node` on a worker starts with its preflight phase (the root check and the
// container runtime's, kubeadm cmd/phases/upgrade/node/preflight.go), which only reads the node.
// The cluster upgrade runs it as `upgrade node phase preflight` while the nodes before it
// restart their kubelets, and at the node's turn `upgrade node --skip-phases preflight`: what
// kubeadm's phases allow, and the same checks a few seconds earlier. The first control plane's
// `upgrade apply phase preflight` (its checks, the cluster's health, the version policy, the
// image pull: cmd/phases/upgrade/apply/preflight.go) likewise runs while etcd's snapshot is
// taken and the probes start. Its lines are kept and
// printed at the node's turn, where kubeadm prints them; a failed preflight fails the node's
// turn, before anything on it changed.

export const PREFLIGHT_PHASE = "preflight";

interface Line {
  warn: boolean;
  message: string;
}

/** What a preflight run ahead left: its lines, and its timings or its error. */
export interface PreflightOutcome {
  lines: Line[];
  timings?: PhaseTiming[];
  error?: unknown;
}

/** A Reporter that keeps the lines (secrets still go to `real` at once, so they stay masked). */
function keepingReporter(real: Reporter, lines: Line[]): Reporter {
  return {
    info: (message) => void lines.push({ warn: false, message }),
    warn: (message) => void lines.push({ warn: true, message }),
    group: (_title, fn) => fn(),
    mask: (secret) => real.mask(secret),
  };
}

/** Preflights started ahead of their nodes' turns, each taken once. */
export class PreflightsAhead {
  private readonly started = new Map<string, Promise<PreflightOutcome>>();

  /**
   * Starts the node's preflight with `run`, given a reporter that keeps its lines; a node whose
   * preflight started already is left alone.
   */
  start(
    name: string,
    real: Reporter,
    run: (reporter: Reporter) => Promise<{ timings: PhaseTiming[] }>,
  ): void {
    if (this.started.has(name)) return;
    const lines: Line[] = [];
    this.started.set(
      name,
      run(keepingReporter(real, lines)).then(
        (r) => ({ lines, timings: r.timings }),
        (error: unknown) => ({ lines, error }),
      ),
    );
  }

  /** Once every preflight started and not taken has ended (their outcomes are dropped). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.started.values()]);
  }

  /**
   * The node's preflight run ahead, its lines printed on `real`; undefined when none was
   * started. Throws its error after printing its lines.
   */
  async take(name: string, real: Reporter): Promise<PhaseTiming[] | undefined> {
    const started = this.started.get(name);
    if (!started) return undefined;
    this.started.delete(name);
    const outcome = await started;
    for (const l of outcome.lines) {
      if (l.warn) real.warn(l.message);
      else real.info(l.message);
    }
    if ("error" in outcome) throw outcome.error;
    return outcome.timings;
  }
}
