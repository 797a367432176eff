import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { clusterFile } from "../up/support.js";
import { bundledMain, runStep, stepReport, type StepResult, unmaskedLines } from "./support.js";

// The main step (bundled main.js, run as the runner runs it) with debug logging: the runner
// sets RUNNER_DEBUG=1 when the run has ACTIONS_STEP_DEBUG or is re-run with debug logging
// (core.isDebug() reads it); the `verbosity: debug` input does the same. Then every command run
// on a host is printed with the host's name, and a failure's causes with their stacks — and the
// secrets (the SSH key from its input, the sudo password sudo reads on stdin) stay masked: no
// command line holds one, and every line holding one is covered by an earlier ::add-mask::.

let bed: SshTestbed;
let cp: SshTestHost;
let mainJs: string;
let privateKey: string;

/** A one-node Cluster logging in as the user whose sudo asks for a password; the key from its input. */
function cluster(pin?: string): string {
  return clusterFile({
    name: "debug",
    controlPlanes: [cp],
    workers: [],
    userFor: (h) => h.ssh.passwordSudoUser,
    ...(pin ? { pinFor: () => pin } : {}),
  }).replace(/^ {2}privateKeyFile: .*\n/m, "");
}

function secrets(): string[] {
  const keyLines = privateKey.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
  return [cp.ssh.password, ...keyLines];
}

function expectMasked(step: StepResult): void {
  for (const s of secrets()) {
    expect(unmaskedLines(step.stdout, s), s.slice(0, 8)).toEqual([]);
    expect(step.stderr).not.toContain(s);
    expect(step.summary).not.toContain(s);
  }
}

/** The command lines printed for host `name`. */
const commandLines = (step: StepResult, name: string) =>
  step.stdout.split("\n").filter((l) => l.startsWith(`${name}: $ `));

beforeAll(async () => {
  [bed, mainJs] = await Promise.all([createTestbed(["cp-1"], { ssh: true }), bundledMain()]);
  cp = bed.host("cp-1");
  privateKey = await readFile(cp.ssh.privateKeyFile, "utf8");
}, 180_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("action main step with debug logging", () => {
  const inputs = () => ({
    "ssh-private-key": privateKey,
    "ssh-sudo-password": cp.ssh.password,
    "dry-run": "true",
  });

  it("RUNNER_DEBUG=1: prints each host's commands, none holding a secret", async () => {
    const step = await runStep(mainJs, {
      inputs: { ...inputs(), cluster: cluster() },
      env: { RUNNER_DEBUG: "1" },
    });
    if (step.code !== 0) throw new Error(stepReport(step));
    const commands = commandLines(step, "cp-1");
    expect(commands.length).toBeGreaterThan(3);
    // Commands as root go through sudo with the password on stdin, not in the command.
    expect(commands.some((l) => / \(as root(, \d+ bytes on stdin)?\)$/.test(l))).toBe(true);
    for (const line of commands) {
      for (const s of secrets()) expect(line.includes(s), line).toBe(false);
    }
    expectMasked(step);
  }, 180_000);

  it("without debug: no command lines", async () => {
    const step = await runStep(mainJs, { inputs: { ...inputs(), cluster: cluster() } });
    if (step.code !== 0) throw new Error(stepReport(step));
    expect(commandLines(step, "cp-1")).toEqual([]);
    expect(step.stdout).not.toContain("[debug]");
  }, 180_000);

  it("verbosity: debug: a failure prints its causes and their stacks", async () => {
    const wrongPin = `SHA256:${"B".repeat(43)}`;
    const step = await runStep(mainJs, {
      inputs: { ...inputs(), cluster: cluster(wrongPin), verbosity: "debug" },
      timeoutMs: 120_000,
    });
    expect(step.code).toBe(1);
    const debug = step.stdout.split("\n").filter((l) => l.startsWith("[debug] "));
    expect(debug[0]).toMatch(/^\[debug\] error: \w*Error: failed on 1 of 1 host:/);
    expect(debug.some((l) => /^\[debug\] caused by \(1\): .*host key/i.test(l))).toBe(true);
    expect(debug.some((l) => /^\[debug\] +at /.test(l))).toBe(true);
    expectMasked(step);
    // Without debug, the one sentence only.
    const plain = await runStep(mainJs, {
      inputs: { ...inputs(), cluster: cluster(wrongPin) },
      timeoutMs: 120_000,
    });
    expect(plain.code).toBe(1);
    expect(plain.stdout).not.toContain("[debug]");
    expect(plain.stdout.split("\n").filter((l) => l.startsWith("::error::"))).toHaveLength(1);
  }, 300_000);
});
