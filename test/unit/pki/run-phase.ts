import type { InitData } from "../../../src/phases/init/data.js";
import type { Logger, Phase } from "../../../src/workflow/phase.js";

/**
 * Runs a phase and its children as the Runner does for `init phase <name> all` (parent's run,
 * then each child whose runIf allows it). `only` runs just that child, as
 * `init phase certs apiserver` (the parent does not run).
 */
export async function runPhase(
  phase: Phase<InitData>,
  data: InitData,
  log: Logger,
  only?: string,
): Promise<string[]> {
  const ran: string[] = [];
  const visit = async (p: Phase<InitData>, path: string, selected: boolean) => {
    if (selected) {
      if (p.runIf && !p.runIf(data)) return;
      await p.run?.(data, { path, log });
      ran.push(path);
    }
    for (const c of p.phases ?? []) {
      await visit(c, `${path}/${c.name}`, selected || c.name === only);
    }
  };
  await visit(phase, phase.name, only === undefined);
  return ran;
}
