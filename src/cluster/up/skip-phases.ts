import { initPhases } from "../../phases/init/index.js";
import { joinPhases } from "../../phases/join/index.js";
import type { Phase } from "../../workflow/phase.js";
import { TerminalReporter } from "../../workflow/reporter.js";
import { Runner } from "../../workflow/runner.js";
import { upPhases } from "./phases.js";

// The phases a `up` run skips (the Cluster's skipPhases, the action's skip-phases input, `up
// --skip-phases`) name up's own phases or kubeadm's init and join phases, which every node's
// workflow skips. `preflight` is both: up's checks are kubeadm's preflight checks run ahead, so
// it skips those and the ones in every node's workflow.

export interface SkipPhases {
  up: string[];
  init: string[];
  join: string[];
}

const quiet = new TerminalReporter({ write: () => {} });

function pathsOf<D>(phases: Phase<D>[]): Set<string> {
  return new Set(new Runner(phases, quiet).paths());
}

/** Every phase `up` runs or has its nodes run: up's, then init's and join's. */
export function phaseNames(): { up: Set<string>; init: Set<string>; join: Set<string> } {
  return { up: pathsOf(upPhases()), init: pathsOf(initPhases()), join: pathsOf(joinPhases()) };
}

/** Names shared with the node workflows that skip there too. */
const SKIPPED_ON_NODES_TOO = new Set(["preflight"]);

/**
 * Splits the names among up, init and join; a name that is none of theirs is an error naming
 * the field or input it came from (`where`) and listing up's phases.
 */
export function splitSkipPhases(names: readonly string[], where = "skipPhases"): SkipPhases {
  const known = phaseNames();
  const unknown = names.filter((p) => !known.up.has(p) && !known.init.has(p) && !known.join.has(p));
  if (unknown.length > 0) {
    throw new Error(
      `${where}: ${unknown.map((p) => `"${p}"`).join(", ")} ${unknown.length === 1 ? "is" : "are"} neither an init nor a join phase, nor one of up's (${[...known.up].join(", ")})`,
    );
  }
  const onNodes = (p: string) => !known.up.has(p) || SKIPPED_ON_NODES_TOO.has(p);
  return {
    up: names.filter((p) => known.up.has(p)),
    init: names.filter((p) => known.init.has(p) && onNodes(p)),
    join: names.filter((p) => known.join.has(p) && onNodes(p)),
  };
}
