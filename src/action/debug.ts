import { inspect } from "node:util";
import type { Verbosity } from "./inputs.js";

// Debug output for the action: on with the `verbosity: debug` input, or when the run has debug
// logging (ACTIONS_STEP_DEBUG or "Re-run with debug logging": the runner sets RUNNER_DEBUG=1,
// which core.isDebug() reads).

export function debugOn(verbosity: Verbosity | undefined, runnerDebug: boolean): boolean {
  return runnerDebug || verbosity === "debug";
}

/**
 * An error with every cause under it, each with its stack: the lines a debug log shows after a
 * failure. Non-Error values and cycles end the chain.
 */
export function causeChain(error: unknown): string[] {
  const lines: string[] = [];
  const seen = new Set<unknown>();
  let current: unknown = error;
  let depth = 0;
  while (current !== undefined && !seen.has(current)) {
    seen.add(current);
    const lead = depth === 0 ? "error" : `caused by (${depth})`;
    if (current instanceof Error) {
      const stack = current.stack ?? `${current.name}: ${current.message}`;
      // The stack's first line is the message; an error whose stack lost it gets it back.
      const text = stack.includes(current.message) ? stack : `${current.message}\n${stack}`;
      lines.push(`${lead}: ${text.split("\n")[0]}`, ...text.split("\n").slice(1));
      current = current.cause;
    } else {
      lines.push(`${lead}: ${inspect(current, { depth: 2 })}`);
      current = undefined;
    }
    depth++;
  }
  return lines;
}
