import * as core from "@actions/core";
import type { Reporter } from "../workflow/reporter.js";

/** Reporter for GitHub Actions: one log group per top-level phase, warnings as annotations. */
export class GitHubReporter implements Reporter {
  info(message: string): void {
    core.info(message);
  }

  warn(message: string): void {
    core.warning(message);
  }

  group<T>(title: string, fn: () => Promise<T>): Promise<T> {
    // core.group closes the group when fn throws; groups never nest (actions/runner#802).
    return core.group(title, fn);
  }

  mask(secret: string): void {
    // The runner masks line by line: a multi-line secret must be registered per line
    // (actions/runner#161).
    for (const line of secret.split(/\r?\n/)) if (line.trim().length > 0) core.setSecret(line);
  }
}
