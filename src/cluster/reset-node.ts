import type { Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";
import { prepareReset } from "./reset.js";

// kubeforge reset --force on one host, in-process: what `up` does to a half-done host before it
// tries again, and what `down` does to every host.

export async function resetNode(
  host: Host,
  reporter: Reporter,
  opts: { skipPhases?: string[]; dryRun?: boolean; removeEtcdMember?: boolean } = {},
): Promise<void> {
  const prepared = await prepareReset({
    flags: { force: true, ...(opts.skipPhases ? { skipPhases: opts.skipPhases } : {}) },
    host,
    dryRun: opts.dryRun === true,
    reporter,
    stdout: () => {},
    ...(opts.removeEtcdMember === false ? { removeEtcdMember: false } : {}),
  });
  await prepared.runner.run(prepared.data, {
    skipPhases: prepared.skipPhases,
    dryRun: prepared.data.dryRun,
  });
}
