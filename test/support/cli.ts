import { execFile } from "node:child_process";
import { join } from "node:path";
import { buildOptions } from "../../scripts/build-options.mjs";
import { sharedBundle } from "./shared-bundle.js";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Bundles the current sources exactly as `npm run build` does, into the run's shared folder
 * (`dir`, which test files share: never remove it), and returns a function that runs the bundled
 * CLI. Tests exercise the shipped artefact, not the TypeScript sources through a loader.
 */
export async function bundledCli(): Promise<{
  dir: string;
  kubeforge: (
    args: string[],
    opts?: { env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ) => Promise<CliResult>;
}> {
  const dir = await sharedBundle("cli", buildOptions);
  const kubeforge = (args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) =>
    new Promise<CliResult>((resolve) => {
      execFile(
        process.execPath,
        [join(dir, "cli.js"), ...args],
        {
          env: { ...process.env, ...opts.env },
          maxBuffer: 16 * 1024 * 1024,
          // A hung command must not hang the test file: killed, and the result says so.
          ...(opts.timeoutMs !== undefined
            ? { timeout: opts.timeoutMs, killSignal: "SIGKILL" }
            : {}),
        },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });
  return { dir, kubeforge };
}
