import { interruption } from "../remote/interruption.js";
import type { Reporter } from "./reporter.js";
import type { Phase, PhaseContext } from "./phase.js";

// The Runner of kubeadm's workflow package (cmd/kubeadm/app/cmd/phases/workflow/runner.go):
// phases are flattened to slash paths, `--skip-phases` and `init phase <x>` select which run
// (a selected or skipped phase carries its whole sub-tree), and every failure is wrapped as
// "error execution phase <path>: <cause>".

export interface RunnerOptions {
  /** Phase paths to skip with their sub-trees (`--skip-phases`). Unknown names are errors. */
  skipPhases?: string[];
  /** Run only these phase paths with their sub-trees (`init phase <x>`). */
  filterPhases?: string[];
  /** A dry run reports pending phases and goes on; a real run stops at the first one. */
  dryRun?: boolean;
}

export type PhaseOutcome = "done" | "skipped" | "pending" | "failed";

export interface PhaseTiming {
  path: string;
  outcome: PhaseOutcome;
  ms: number;
}

/**
 * One line for logs and summaries: the top-level phases with their times ("certs 0.86s"),
 * or the sub-phases when only those ran (`init phase certs ca`).
 */
export function summarizeTimings(timings: readonly PhaseTiming[]): string {
  const top = timings.filter((t) => !t.path.includes("/"));
  return (top.length > 0 ? top : timings)
    .map((t) =>
      t.outcome === "done" || t.outcome === "failed"
        ? `${t.path} ${(t.ms / 1000).toFixed(2)}s${t.outcome === "failed" ? " (failed)" : ""}`
        : `${t.path} (${t.outcome})`,
    )
    .join(", ");
}

interface FlatPhase<D> {
  path: string;
  phase: Phase<D>;
  parent: string | undefined;
  /** Top-level ancestor name: the log prefix and the log group. */
  top: string;
}

export class PhaseError extends Error {
  constructor(
    readonly phasePath: string,
    cause: unknown,
  ) {
    super(
      `error execution phase ${phasePath}: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
    this.name = "PhaseError";
  }
}

export class Runner<D> {
  private readonly flat: FlatPhase<D>[] = [];
  /** Timings of the last run, including the phase that failed (for summaries and diagnostics). */
  readonly timings: PhaseTiming[] = [];

  constructor(
    readonly phases: Phase<D>[],
    private readonly reporter: Reporter,
  ) {
    const visit = (list: Phase<D>[], parent: FlatPhase<D> | undefined) => {
      for (const phase of list) {
        const path = parent ? `${parent.path}/${phase.name}` : phase.name;
        if (this.flat.some((f) => f.path === path)) throw new Error(`duplicate phase ${path}`);
        const entry = { path, phase, parent: parent?.path, top: parent?.top ?? phase.name };
        this.flat.push(entry);
        visit(phase.phases ?? [], entry);
      }
    };
    visit(phases, undefined);
    this.checkDependencies();
  }

  /** Every phase path in run order ("certs", "certs/ca", ...). */
  paths(): string[] {
    return this.flat.map((f) => f.path);
  }

  find(path: string): Phase<D> | undefined {
    return this.flat.find((f) => f.path === path)?.phase;
  }

  /** Dependencies must name known phases that run earlier: a wrong tree fails at start-up. */
  private checkDependencies(): void {
    this.flat.forEach((f, index) => {
      for (const dep of f.phase.dependencies ?? []) {
        const at = this.flat.findIndex((g) => g.path === dep);
        if (at < 0) throw new Error(`phase ${f.path} depends on unknown phase ${dep}`);
        if (at >= index) throw new Error(`phase ${f.path} depends on ${dep}, which runs after it`);
      }
    });
  }

  /** Which phases run, as kubeadm's computePhaseRunFlags. */
  selected(opts: RunnerOptions): Map<string, boolean> {
    const flags = new Map(this.flat.map((f) => [f.path, true]));
    const subtree = (path: string) =>
      this.flat.filter((f) => f.path === path || f.path.startsWith(`${path}/`)).map((f) => f.path);
    const check = (name: string, option: string) => {
      if (!flags.has(name)) {
        throw new Error(
          `invalid phase name "${name}" in ${option}: valid names are ${this.paths().join(", ")}`,
        );
      }
    };
    if (opts.filterPhases && opts.filterPhases.length > 0) {
      for (const p of flags.keys()) flags.set(p, false);
      for (const name of opts.filterPhases) {
        check(name, "the phase to run");
        for (const p of subtree(name)) flags.set(p, true);
      }
    }
    for (const name of opts.skipPhases ?? []) {
      check(name, "--skip-phases");
      for (const p of subtree(name)) flags.set(p, false);
    }
    return flags;
  }

  async run(data: D, opts: RunnerOptions = {}): Promise<PhaseTiming[]> {
    const selected = this.selected(opts);
    const timings = this.timings;
    timings.length = 0;
    const runList = async (list: Phase<D>[], prefix: string | undefined, top: string) => {
      for (const phase of list) {
        const path = prefix ? `${prefix}/${phase.name}` : phase.name;
        if (!selected.get(path)) {
          // Not selected itself (`init phase certs apiserver` does not run `certs`), but a
          // selected descendant may be: as kubeadm, ancestors of a filtered phase do not run.
          await runList(phase.phases ?? [], path, top);
          continue;
        }
        const started = performance.now();
        try {
          const outcome = await this.runOne(phase, path, top, data, opts);
          if (outcome === "done") await runList(phase.phases ?? [], path, top);
          timings.push({ path, outcome, ms: performance.now() - started });
        } catch (e) {
          timings.push({ path, outcome: "failed", ms: performance.now() - started });
          throw e;
        }
      }
    };
    for (const phase of this.phases) {
      const anySelected = [...selected].some(
        ([p, on]) => on && (p === phase.name || p.startsWith(`${phase.name}/`)),
      );
      if (!anySelected) continue;
      await this.reporter.group(phase.name, () => runList([phase], undefined, phase.name));
    }
    return timings;
  }

  private async runOne(
    phase: Phase<D>,
    path: string,
    top: string,
    data: D,
    opts: RunnerOptions,
  ): Promise<PhaseOutcome> {
    // kubeadm tags lines with the phase ("[certs] ..."); a line that carries a tag of its own
    // (kubeadm's "[patches] ...") keeps it.
    const tagged = (m: string) => (/^\[[\w-]+\] /.test(m) ? m : `[${top}] ${m}`);
    const log = {
      info: (m: string) => this.reporter.info(tagged(m)),
      warn: (m: string) => this.reporter.warn(tagged(m)),
    };
    try {
      // An interrupted run starts no further phase (remote/interruption.ts).
      if (interruption.aborted) throw new Error("not started: the run was interrupted");
      if (phase.runIf && !phase.runIf(data)) return "skipped";
      if (phase.pending) {
        if (!opts.dryRun)
          throw new Error(`not implemented in this version of kubeforge: ${phase.pending}`);
        log.warn(
          `Would run phase ${path}, which this version of kubeforge does not implement yet: ${phase.pending}`,
        );
        return "pending";
      }
      const ctx: PhaseContext = { path, log };
      await phase.run?.(data, ctx);
      return "done";
    } catch (e) {
      throw e instanceof PhaseError ? e : new PhaseError(path, e);
    }
  }
}
