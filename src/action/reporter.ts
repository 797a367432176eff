import { appendFileSync } from "node:fs";
import * as core from "@actions/core";
import { printable } from "../workflow/printable.js";
import type { Reporter } from "../workflow/reporter.js";
import { epochNow } from "../workflow/runner.js";
import { maskKubeconfig, maskSecret } from "./mask.js";
import type { StepTiming } from "./summary.js";

// The Reporter for GitHub Actions: one log group per top-level phase (the orchestrator's; groups
// never nest and groups opened from parallel tasks interleave, actions/runner#802), warnings as
// annotations, secrets registered with the runner line by line. Every line printed is also kept
// for kubeforge's own log file (the post step uploads it), with the secrets replaced by "***":
// the runner masks its own log, not files we write. Every line printed or kept is made inert first
// (workflow/printable.ts): messages quote node facts, command output and server errors, and a
// line of theirs must not become a workflow command.

export interface GitHubReporterOptions {
  /** Called when a group opens: the main step records the phase it reached. */
  onGroup?: (title: string) => void;
  /** Defaults to @actions/core's setSecret (prints ::add-mask::). */
  setSecret?: (secret: string) => void;
  /** Defaults to core.info / core.warning / core.group. */
  core?: Pick<typeof core, "info" | "warning" | "group">;
}

export class GitHubReporter implements Reporter {
  private readonly secrets = new Set<string>();
  private readonly pending: string[] = [];
  private logFile: string | undefined;
  private readonly core: Pick<typeof core, "info" | "warning" | "group">;
  private readonly setSecretFn: (secret: string) => void;
  /** Each group's duration, in the order they finished (for the job summary). */
  readonly steps: StepTiming[] = [];

  constructor(private readonly opts: GitHubReporterOptions = {}) {
    // The three functions, not the namespace: a namespace used as a value keeps every export of
    // @actions/core in the bundle (its OIDC client and the HTTP library under it).
    this.core = opts.core ?? { info: core.info, warning: core.warning, group: core.group };
    this.setSecretFn = opts.setSecret ?? ((s) => core.setSecret(s));
  }

  /** Sends every line so far, and each later one, to `path` (appended, 0600). */
  logTo(path: string): void {
    this.logFile = path;
    const lines = this.pending.splice(0);
    if (lines.length > 0) appendFileSync(path, lines.join(""), { mode: 0o600 });
  }

  /** The text with every registered secret (whole values first, then lines) replaced by "***". */
  redact(text: string): string {
    const secrets = [...this.secrets].sort((a, b) => b.length - a.length);
    let out = text;
    for (const s of secrets) out = out.split(s).join("***");
    return out;
  }

  /** Adds a line to kubeforge's log file (redacted, inert), without printing it. */
  record(line: string): void {
    const text = `${printable(this.redact(line))}\n`;
    if (this.logFile) appendFileSync(this.logFile, text, { mode: 0o600 });
    else this.pending.push(text);
  }

  info(message: string): void {
    const text = printable(message);
    this.core.info(text);
    this.record(text);
  }

  warn(message: string): void {
    // The annotation's text is escaped by @actions/core; it is made inert all the same, as it is
    // also shown in the log and kept in the file.
    const text = printable(message);
    this.core.warning(text);
    this.record(`WARNING: ${text}`);
  }

  group<T>(title: string, fn: () => Promise<T>): Promise<T> {
    this.opts.onGroup?.(title);
    this.record(`=== ${title}`);
    // core.group closes the group when fn throws.
    return this.core.group(title, async () => {
      const startedAt = epochNow();
      let failed = true;
      try {
        const result = await fn();
        failed = false;
        return result;
      } finally {
        this.steps.push({ title, startedAt, ms: epochNow() - startedAt, failed });
      }
    });
  }

  mask(secret: string): void {
    maskSecret(secret, (s) => this.register(s));
  }

  /** Masks a kubeconfig's credentials (see mask.ts maskKubeconfig). */
  maskKubeconfig(text: string): void {
    maskKubeconfig(text, (s) => this.register(s));
  }

  private register(secret: string): void {
    if (this.secrets.has(secret)) return;
    this.secrets.add(secret);
    this.setSecretFn(secret);
    // Printed lines are made inert: a secret with a character that changes there (a control
    // character) would be printed in its inert form, which the runner must know too.
    const inert = printable(secret);
    if (inert !== secret) this.register(inert);
  }
}
