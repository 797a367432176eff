import type { Reporter } from "../workflow/reporter.js";

// An operation on many hosts (DESIGN.md "Fleet"): bounded parallelism, and every host's
// failure collected, not just the first — a user fixing one host at a time would otherwise
// need a run per broken host.

export interface FleetOptions {
  /** Operations in flight at once (default 8). */
  concurrency?: number;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Thrown by fleet() when the operation failed on some hosts; names each and its error. */
export class FleetError extends Error {
  constructor(
    readonly failures: { name: string; error: unknown }[],
    readonly total: number,
  ) {
    const lines = failures.map(({ name, error }) => {
      // Errors that already start with "<name>: " (CommandError) are not prefixed twice.
      let text = messageOf(error);
      if (text.startsWith(`${name}: `)) text = text.slice(name.length + 2);
      return ` - ${name}: ${text.replace(/\n/g, "\n   ")}`;
    });
    super(
      `failed on ${failures.length} of ${total} host${total === 1 ? "" : "s"}:\n${lines.join("\n")}`,
      { cause: failures[0]?.error },
    );
    this.name = "FleetError";
  }
}

/**
 * The hosts a fleet operation failed on (none when it succeeded), for callers that go on with
 * the others; any other error is thrown.
 */
export async function failuresOf(run: Promise<unknown>): Promise<FleetError["failures"]> {
  try {
    await run;
    return [];
  } catch (e) {
    if (e instanceof FleetError) return e.failures;
    throw e;
  }
}

/**
 * Waits for every promise (none is left running unobserved), then throws the first failure in
 * the list's order, not the first to happen; else their values, in order.
 */
export async function allOrFirstError<T extends readonly unknown[] | []>(
  promises: T,
): Promise<{ -readonly [P in keyof T]: Awaited<T[P]> }> {
  const settled: PromiseSettledResult<unknown>[] = await Promise.allSettled<unknown[]>(
    promises as unknown[],
  );
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as {
    -readonly [P in keyof T]: Awaited<T[P]>;
  };
}

/** Runs op for every item with at most `concurrency` at once; never stops at the first failure. */
export async function fleet<T, R>(
  items: readonly T[],
  nameOf: (item: T) => string,
  op: (item: T) => Promise<R>,
  opts: FleetOptions = {},
): Promise<R[]> {
  const concurrency = opts.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`fleet concurrency must be a whole number ≥ 1, got ${concurrency}`);
  }
  const results = new Array<R>(items.length);
  const failures: { index: number; name: string; error: unknown }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      const item = items[index]!;
      try {
        results[index] = await op(item);
      } catch (error) {
        failures.push({ index, name: nameOf(item), error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failures.length > 0) {
    failures.sort((a, b) => a.index - b.index);
    throw new FleetError(
      failures.map(({ name, error }) => ({ name, error })),
      items.length,
    );
  }
  return results;
}

/**
 * A Reporter whose lines are prefixed "<host>: " (mask shared with the parent). Groups do not
 * nest and parallel hosts would interleave them (actions/runner#802), so a host's group is
 * only a line; the orchestrator owns the real groups.
 */
export function hostReporter(parent: Reporter, host: string): Reporter {
  return {
    info: (message) => parent.info(`${host}: ${message}`),
    warn: (message) => parent.warn(`${host}: ${message}`),
    group: (title, fn) => {
      parent.info(`${host}: ${title}`);
      return fn();
    },
    mask: (secret) => parent.mask(secret),
  };
}
