import { describe, expect, it } from "vitest";
import { resetPhases } from "../../../../src/phases/reset/index.js";
import {
  CONFIRM_PROMPT,
  NO_TERMINAL_TO_CONFIRM,
  NOT_CONFIRMED,
  resetPreflightPhase,
} from "../../../../src/phases/reset/preflight.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { HostDouble } from "../../../support/host-double.js";
import { resetData, runResetPhase } from "./fixtures.js";

// kubeadm's reset preflight (cmd/phases/reset/preflight.go, v1.35): confirmation unless --force
// or --dry-run, then the root check alone.

const root = new HostDouble(new LocalHost(), { facts: { uid: 0 } });
const user = new HostDouble(new LocalHost(), { facts: { uid: 1000, rootAccess: false } });

describe("reset phases", () => {
  it("are kubeadm's, in kubeadm's order", () => {
    expect(resetPhases().map((p) => p.name)).toEqual([
      "preflight",
      "remove-etcd-member",
      "cleanup-node",
    ]);
  });
});

describe("reset preflight", () => {
  it("asks for confirmation and goes on when the answer is yes", async () => {
    const asked: string[] = [];
    const log = await runResetPhase(
      resetPreflightPhase,
      resetData(root, { force: false, confirm: (q) => (asked.push(q), Promise.resolve(true)) }),
    );
    expect(asked).toEqual([CONFIRM_PROMPT]);
    expect(CONFIRM_PROMPT).toBe("[reset] Are you sure you want to proceed? [y/N]: ");
    expect(log.warnings).toEqual([
      "[reset] WARNING: Changes made to this host by 'kubeforge init' or 'kubeforge join' will be reverted.",
    ]);
    expect(log.lines).toEqual(["[preflight] Running pre-flight checks"]);
  });

  it("stops with kubeadm's message when the answer is not yes", async () => {
    await expect(
      runResetPhase(
        resetPreflightPhase,
        resetData(root, { force: false, confirm: () => Promise.resolve(false) }),
      ),
    ).rejects.toThrow(`error execution phase preflight: ${NOT_CONFIRMED}`);
    expect(NOT_CONFIRMED).toBe("won't proceed; the user didn't answer (Y|y) in order to continue");
  });

  it("refuses, saying to pass --force, when nobody can answer", async () => {
    const run = runResetPhase(
      resetPreflightPhase,
      resetData(root, { force: false, confirm: undefined }),
    );
    await expect(run).rejects.toThrow(NO_TERMINAL_TO_CONFIRM);
    await expect(run).rejects.toThrow(/pass --force/);
  });

  it.each([
    ["--force", { force: true }],
    ["--dry-run", { force: false, dryRun: true }],
  ])("does not ask with %s", async (_flag, over) => {
    let asked = false;
    await runResetPhase(
      resetPreflightPhase,
      resetData(root, { ...over, confirm: () => ((asked = true), Promise.resolve(false)) }),
    );
    expect(asked).toBe(false);
  });

  it("needs root, unless IsPrivilegedUser is ignored", async () => {
    await expect(runResetPhase(resetPreflightPhase, resetData(user))).rejects.toThrow(
      /\[ERROR IsPrivilegedUser\]: user is not running as root/,
    );
    const log = await runResetPhase(
      resetPreflightPhase,
      resetData(user, { ignorePreflightErrors: new Set(["isprivilegeduser"]) }),
    );
    expect(log.warnings).toEqual([
      "[preflight] [WARNING IsPrivilegedUser]: user is not running as root (uid 1000) and cannot use sudo: run as root, allow the user password-less sudo, or (over SSH) set ssh.sudoPassword",
    ]);
  });
});
