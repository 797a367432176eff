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
  /** When the phase started, in milliseconds since the epoch (for a chart of phases over time). */
  startedAt: number;
  ms: number;
}

/** The wall clock with performance.now()'s resolution, in milliseconds since the epoch. */
export const epochNow = () => performance.timeOrigin + performance.now();

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

/** Where a run is while it walks the tree. */
interface Walk {
  selected: Map<string, boolean>;
  opts: RunnerOptions;
  /** A phase around this one opened a log group (groups do not nest). */
  inGroup: boolean;
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
        for (const p of this.subtree(name)) flags.set(p, true);
      }
    }
    const skipped = new Set<string>();
    for (const name of opts.skipPhases ?? []) {
      check(name, "--skip-phases");
      for (const p of this.subtree(name)) {
        flags.set(p, false);
        skipped.add(p);
      }
    }
    this.checkSkippedDependencies(flags, skipped);
    return flags;
  }

  private subtree(path: string): string[] {
    return this.flat
      .filter((f) => f.path === path || f.path.startsWith(`${path}/`))
      .map((f) => f.path);
  }

  /** A phase that runs may not lose, to --skip-phases, a phase whose results it reads. */
  private checkSkippedDependencies(flags: Map<string, boolean>, skipped: Set<string>): void {
    for (const f of this.flat) {
      if (!flags.get(f.path)) continue;
      const lost = (f.phase.dependencies ?? []).filter((d) => skipped.has(d));
      if (lost.length > 0) {
        const names = lost.map((d) => `"${d}"`).join(", ");
        throw new Error(
          `phase "${f.path}" depends on ${names}, which --skip-phases skips: skip "${f.path}" too, or run ${lost.length === 1 ? "it" : "them"}`,
        );
      }
    }
  }

  async run(data: D, opts: RunnerOptions = {}): Promise<PhaseTiming[]> {
    const selected = this.selected(opts);
    this.timings.length = 0;
    await this.runSiblings(this.phases, undefined, data, { selected, opts, inGroup: false });
    return this.timings;
  }

  /** Whether the phase or anything under it is selected. */
  private reaches(path: string, selected: Map<string, boolean>): boolean {
    return this.subtree(path).some((p) => selected.get(p));
  }

  /** The group a phase opens when it runs outside any group; undefined: none. */
  private async groupOf(
    phase: Phase<D>,
    path: string,
    data: D,
    walk: Walk,
  ): Promise<string | undefined> {
    if (walk.inGroup || !this.reaches(path, walk.selected)) return undefined;
    // A phase its runIf leaves out shows no group of its own.
    if (walk.selected.get(path) && phase.runIf && !(await phase.runIf(data))) return undefined;
    if (phase.group === false) return undefined;
    if (phase.group) return phase.group(data);
    return path.includes("/") ? undefined : phase.name;
  }

  private async runSiblings(
    list: Phase<D>[],
    prefix: string | undefined,
    data: D,
    walk: Walk,
  ): Promise<void> {
    const pathOf = (phase: Phase<D>) => (prefix ? `${prefix}/${phase.name}` : phase.name);
    let i = 0;
    while (i < list.length) {
      const phase = list[i]!;
      const title = await this.groupOf(phase, pathOf(phase), data, walk);
      if (title === undefined) {
        await this.runPhase(phase, pathOf(phase), data, walk);
        i++;
        continue;
      }
      // The phases after it that name the same group run in it too.
      await this.reporter.group(title, async () => {
        const inside = { ...walk, inGroup: true };
        do {
          const next = list[i]!;
          i++;
          await this.runPhase(next, pathOf(next), data, inside);
        } while (
          i < list.length &&
          (await this.groupOf(list[i]!, pathOf(list[i]!), data, walk)) === title
        );
      });
    }
  }

  private async runPhase(phase: Phase<D>, path: string, data: D, walk: Walk): Promise<void> {
    if (!walk.selected.get(path)) {
      // Not selected itself (`init phase certs apiserver` does not run `certs`), but a
      // selected descendant may be: as kubeadm, ancestors of a filtered phase do not run.
      await this.runSiblings(phase.phases ?? [], path, data, walk);
      return;
    }
    const startedAt = epochNow();
    const timing = (outcome: PhaseOutcome) => ({
      path,
      outcome,
      startedAt,
      ms: epochNow() - startedAt,
    });
    try {
      const outcome = await this.runOne(phase, path, this.topOf(path), data, walk.opts);
      if (outcome === "done") await this.runSiblings(phase.phases ?? [], path, data, walk);
      this.timings.push(timing(outcome));
    } catch (e) {
      this.timings.push(timing("failed"));
      throw e;
    }
  }

  private topOf(path: string): string {
    return this.flat.find((f) => f.path === path)!.top;
  }

  private async runOne(
    phase: Phase<D>,
    path: string,
    top: string,
    data: D,
    opts: RunnerOptions,
  ): Promise<PhaseOutcome> {
    // kubeadm tags lines with the phase ("[certs] ..."); a line that carries a tag of its own
    // (kubeadm's "[patches] ...", "[upgrade/staticpods] ...") keeps it.
    const tagged = (m: string) => (/^\[[\w/-]+\] /.test(m) ? m : `[${top}] ${m}`);
    const log = {
      info: (m: string) => this.reporter.info(tagged(m)),
      warn: (m: string) => this.reporter.warn(tagged(m)),
    };
    try {
      // An interrupted run starts no further phase (remote/interruption.ts).
      if (interruption.aborted) throw new Error("not started: the run was interrupted");
      if (phase.runIf && !(await phase.runIf(data))) return "skipped";
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
