// The preflight check model and runner, after kubeadm's cmd/kubeadm/app/preflight/checks.go
// (Checker, RunChecks, setHasItemOrAll, handleError) and
// cmd/kubeadm/app/apis/kubeadm/validation/validation.go (ValidateIgnorePreflightErrors).
// Read at kubernetes/kubernetes@00b6a4c7 (≈ v1.34/v1.35, after PR #132080).

/** What one check found. kubeadm's Checker.Check() returns (warnings, errorList). */
export interface CheckResult {
  warnings: string[];
  errors: string[];
  /**
   * Lines a check prints on its own before its warnings and errors (SystemVerification
   * prints its validator report when it fails).
   */
  info?: string[];
}

/** One preflight check. `name()` is what --ignore-preflight-errors matches, case-insensitively. */
export interface Check {
  name(): string;
  check(): Promise<CheckResult>;
}

/** Where the runner prints: kubeadm writes warnings and the failure report to stderr. */
export interface PreflightOutput {
  /** Progress lines ("[preflight] ..."). */
  info(line: string): void;
  /** `\t[WARNING <Name>]: <msg>` lines. */
  warn(line: string): void;
}

export const IGNORE_ALL = "all";

// kubeadm's handleError: these two lines frame the "[ERROR ...]" list.
export const FATAL_ERRORS_HEADER = "[preflight] Some fatal errors occurred:";
export const IGNORE_HINT =
  "[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`";

export interface CheckFailure {
  check: string;
  message: string;
}

/**
 * Preflight errors that were not ignored. The message is kubeadm's aggregate text:
 * "[preflight] Some fatal errors occurred:\n\t[ERROR X]: ...\n[preflight] If you know ...".
 * (kubeadm ≤ 1.33 returned exactly this text as the error. Since 1.34 (PR #132080) it prints
 * the same text to stderr and returns "preflight checks failed"; `summary` holds that short form.)
 */
export class PreflightError extends Error {
  readonly summary = "preflight checks failed";

  constructor(readonly failures: readonly CheckFailure[]) {
    super(
      `${FATAL_ERRORS_HEADER}\n${failures.map((f) => `${errorLine(f.check, f.message)}\n`).join("")}${IGNORE_HINT}`,
    );
    this.name = "PreflightError";
  }
}

export function warningLine(check: string, message: string): string {
  return `\t[WARNING ${check}]: ${message}`;
}

export function errorLine(check: string, message: string): string {
  return `\t[ERROR ${check}]: ${message}`;
}

/** kubeadm's setHasItemOrAll: "all" or the lower-cased check name. */
export function isIgnored(ignore: ReadonlySet<string>, checkName: string): boolean {
  return ignore.has(IGNORE_ALL) || ignore.has(checkName.toLowerCase());
}

const stderrOutput: PreflightOutput = {
  info: (line) => void process.stderr.write(`${line}\n`),
  warn: (line) => void process.stderr.write(`${line}\n`),
};

/**
 * Runs the checks one after another in list order (kubeadm's RunChecks). Warnings, and errors
 * of ignored checks (kubeadm lowers them to warnings), are printed as they come; errors that
 * remain are collected and thrown together as a PreflightError once every check has run.
 */
export async function runChecks(
  checks: readonly Check[],
  ignore: ReadonlySet<string>,
  out: PreflightOutput = stderrOutput,
): Promise<void> {
  const lowered = new Set([...ignore].map((i) => i.toLowerCase()));
  const failures: CheckFailure[] = [];
  for (const c of checks) {
    const name = c.name();
    const result = await c.check();
    let { warnings, errors } = result;
    if (isIgnored(lowered, name)) {
      warnings = [...warnings, ...errors];
      errors = [];
    }
    for (const line of result.info ?? []) out.info(line);
    for (const w of warnings) out.warn(warningLine(name, w));
    for (const e of errors) failures.push({ check: name, message: e });
  }
  if (failures.length > 0) throw new PreflightError(failures);
}

/**
 * kubeadm's ValidateIgnorePreflightErrors: names from the flag and from
 * nodeRegistration.ignorePreflightErrors are merged and lower-cased; "all" cannot be combined
 * with individual names.
 */
export function validateIgnorePreflightErrors(
  fromFlag: readonly string[],
  fromConfig: readonly string[] = [],
): Set<string> {
  const set = new Set([...fromConfig, ...fromFlag].map((s) => s.toLowerCase()));
  if (set.has(IGNORE_ALL) && set.size > 1) {
    // field.Invalid(field.NewPath("ignore-preflight-errors"), sorted list, detail)
    const list = [...set].sort().join(",");
    throw new Error(
      `ignore-preflight-errors: Invalid value: "${list}": don't specify individual checks if 'all' is used`,
    );
  }
  return set;
}

/** kubeadm names path checks by replacing every "/" with "-" ("/var/lib/etcd" → "-var-lib-etcd"). */
export function pathLabel(path: string): string {
  return path.replaceAll("/", "-");
}

/** A check from a name and an async body, for the simple cases. */
export function makeCheck(name: string, run: () => Promise<CheckResult>): Check {
  return { name: () => name, check: run };
}

export const pass = (): CheckResult => ({ warnings: [], errors: [] });
export const warn = (...warnings: string[]): CheckResult => ({ warnings, errors: [] });
export const fail = (...errors: string[]): CheckResult => ({ warnings: [], errors });
