import { describe, expect, it } from "vitest";
import {
  type Check,
  type CheckResult,
  makeCheck,
  PreflightError,
  runChecks,
  validateIgnorePreflightErrors,
} from "../../../src/node/preflight/checks.js";
import { recordingLogger } from "../../support/init-fixtures.js";

const result = (warnings: string[], errors: string[]): CheckResult => ({ warnings, errors });
const fixed = (name: string, warnings: string[], errors: string[]): Check =>
  makeCheck(name, () => Promise.resolve(result(warnings, errors)));

async function failure(p: Promise<unknown>): Promise<PreflightError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof PreflightError) return e;
    throw e;
  }
  throw new Error("expected a PreflightError");
}

describe("runChecks", () => {
  const checks = [
    fixed("NumCPU", [], ["the number of available CPUs 1 is less than the required 2"]),
    fixed("Swap", ["swap is on"], []),
    fixed("Mem", [], ["the system RAM (1024 MB) is less than the minimum 1700 MB"]),
    fixed("Port-6443", [], []),
  ];

  it("prints warnings in kubeadm's format and fails with kubeadm's aggregate text", async () => {
    const out = recordingLogger();
    const e = await failure(runChecks(checks, new Set(), out));
    expect(out.output).toEqual(["\t[WARNING Swap]: swap is on"]);
    expect(e.message).toBe(
      "[preflight] Some fatal errors occurred:\n" +
        "\t[ERROR NumCPU]: the number of available CPUs 1 is less than the required 2\n" +
        "\t[ERROR Mem]: the system RAM (1024 MB) is less than the minimum 1700 MB\n" +
        "[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`",
    );
    expect(e.failures.map((f) => f.check)).toEqual(["NumCPU", "Mem"]);
    expect(e.summary).toBe("preflight checks failed");
  });

  it("ignores a check by name, case-insensitively, and shows its errors as warnings", async () => {
    const out = recordingLogger();
    const e = await failure(runChecks(checks, new Set(["NUMcpu"]), out));
    expect(out.output).toEqual([
      "\t[WARNING NumCPU]: the number of available CPUs 1 is less than the required 2",
      "\t[WARNING Swap]: swap is on",
    ]);
    expect(e.failures).toEqual([
      { check: "Mem", message: "the system RAM (1024 MB) is less than the minimum 1700 MB" },
    ]);
  });

  it("passes when every failing check is ignored", async () => {
    const out = recordingLogger();
    await runChecks(checks, new Set(["numcpu", "mem"]), out);
    expect(out.warnings).toHaveLength(3);
  });

  it('"all" turns every error into a warning, in check order', async () => {
    const out = recordingLogger();
    await runChecks(checks, new Set(["all"]), out);
    expect(out.output).toEqual([
      "\t[WARNING NumCPU]: the number of available CPUs 1 is less than the required 2",
      "\t[WARNING Swap]: swap is on",
      "\t[WARNING Mem]: the system RAM (1024 MB) is less than the minimum 1700 MB",
    ]);
  });

  it("runs every check even after a failure, one at a time in order", async () => {
    const order: string[] = [];
    const tracked = (name: string, errors: string[]): Check =>
      makeCheck(name, async () => {
        order.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, 5));
        order.push(`end ${name}`);
        return result([], errors);
      });
    await failure(
      runChecks([tracked("A", ["bad"]), tracked("B", [])], new Set(), recordingLogger()),
    );
    expect(order).toEqual(["start A", "end A", "start B", "end B"]);
  });

  it("prints a check's own report lines before its warnings", async () => {
    const out = recordingLogger();
    const c = makeCheck("SystemVerification", () =>
      Promise.resolve({ warnings: ["w"], errors: [], info: ["KERNEL_VERSION: 6.1.0"] }),
    );
    await runChecks([c], new Set(), out);
    expect(out.output).toEqual(["KERNEL_VERSION: 6.1.0", "\t[WARNING SystemVerification]: w"]);
  });
});

describe("validateIgnorePreflightErrors", () => {
  it("merges flag and config names, lower-cased", () => {
    expect([...validateIgnorePreflightErrors(["Swap", "NumCPU"], ["Mem", "swap"])].sort()).toEqual([
      "mem",
      "numcpu",
      "swap",
    ]);
  });

  it('accepts "all" alone, in any case', () => {
    expect([...validateIgnorePreflightErrors(["ALL"])]).toEqual(["all"]);
  });

  it('refuses "all" mixed with names, with kubeadm\'s field error', () => {
    expect(() => validateIgnorePreflightErrors(["all", "Swap"], ["Mem"])).toThrow(
      "ignore-preflight-errors: Invalid value: \"all,mem,swap\": don't specify individual checks if 'all' is used",
    );
  });
});
