import { stat } from "node:fs/promises";
import { readInputFile } from "../remote/runner-files.js";
import { resolve } from "node:path";
import type { KeySource } from "../pki/key-source.js";
import type { Phase } from "../workflow/phase.js";
import type { Reporter } from "../workflow/reporter.js";
import { summarizeTimings, type Runner } from "../workflow/runner.js";
import { LocalHost } from "../remote/local.js";

// Option parsing and inputs shared by the init and join commands.

/** A comma-separated, repeatable option. */
export const list = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0),
];

/** A port number option (kubeadm: --apiserver-bind-port). */
export function port(value: string): number {
  if (!/^\d+$/.test(value))
    throw new Error(`--apiserver-bind-port: "${value}" is not a port number`);
  return Number(value);
}

/** The --config file, read as text; a clear error naming it when it cannot be read. */
export async function readConfig(path: string | undefined) {
  if (path === undefined) return undefined;
  return { text: await readInputFile(path, "--config file"), source: path };
}

/** The machine the workflow runs on: this one, or every host path under --rootfs. */
export async function hostFor(rootfs: string | undefined): Promise<LocalHost> {
  if (rootfs === undefined) return new LocalHost();
  const dir = resolve(rootfs);
  const s = await stat(dir).catch(() => undefined);
  if (!s?.isDirectory()) throw new Error(`--rootfs: ${dir} is not a folder`);
  return new LocalHost({ rootfs: dir });
}

/** The phase tree as `--help` shows it. */
export function phaseTreeHelp(phases: Phase<unknown>[], indent = "  "): string {
  return phases
    .filter((p) => !p.hidden)
    .map((p) => {
      const line = `${indent}${p.name.padEnd(32 - indent.length)} ${p.short}${p.pending ? " (not implemented yet)" : ""}`;
      return p.phases ? `${line}\n${phaseTreeHelp(p.phases, `${indent}  `)}` : line;
    })
    .join("\n");
}

/** What init and join prepare: a runner over their data, the phases to skip, the dry-run folder. */
export interface PreparedWorkflow<D extends { dryRun: boolean; keys: KeySource }> {
  data: D;
  runner: Runner<D>;
  skipPhases: string[];
  dryRunDir: string | undefined;
}

/** Runs a prepared workflow (or the filtered phases of it), reporting the timings either way. */
export async function runPrepared<D extends { dryRun: boolean; keys: KeySource }>(
  prepared: PreparedWorkflow<D>,
  reporter: Reporter,
  filterPhases: string[] | undefined,
): Promise<void> {
  if (prepared.dryRunDir) {
    reporter.info(
      `[dryrun] Rendering node files into ${prepared.dryRunDir}; nothing on this machine changes`,
    );
  }
  try {
    await prepared.runner.run(prepared.data, {
      skipPhases: prepared.skipPhases,
      ...(filterPhases ? { filterPhases } : {}),
      dryRun: prepared.data.dryRun,
    });
  } finally {
    prepared.data.keys.discard();
    reporter.info(`[kubeforge] Phase timings: ${summarizeTimings(prepared.runner.timings)}`);
  }
}
