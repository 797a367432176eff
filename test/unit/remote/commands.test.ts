import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";
import { displayCommand } from "../../../src/remote/command-limits.js";
import { run } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { Semaphore } from "../../../src/remote/ssh/semaphore.js";
import { shellJoin, shellQuote } from "../../../src/remote/ssh/quote.js";
import { parseSudoProbe, remoteCommand } from "../../../src/remote/ssh/sudo.js";

/** What a real POSIX shell makes of a command line: the argv `printf` receives. */
function shellWords(commandLine: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile("sh", ["-c", `printf '%s\\0' ${commandLine}`], (err, stdout) => {
      if (err) reject(new Error(`sh failed: ${err.message}`));
      else resolve(stdout.split("\0").slice(0, -1));
    });
  });
}

describe("shell quoting", () => {
  const nasty = [
    "plain",
    "",
    "two words",
    "it's",
    `"double" and 'single'`,
    "$HOME `id` $(id) ${PATH}",
    "back\\slash",
    "new\nline\ttab",
    "*.conf ? [a-z]",
    "; rm -rf / #",
    "--flag=value",
    "~root",
    "unicode ✓ é",
  ];

  it("gives the remote shell exactly the argv, unexpanded", async () => {
    expect(await shellWords(shellJoin(nasty))).toEqual(nasty);
  });

  it.each(nasty.map((s) => [s]))("one word for %j", async (arg) => {
    expect(await shellWords(shellQuote(arg))).toEqual([arg]);
  });

  it("leaves plain words readable", () => {
    expect(shellJoin(["kubeadm", "--config=/etc/kubernetes/x.yaml", "a@b:1"])).toBe(
      "kubeadm --config=/etc/kubernetes/x.yaml a@b:1",
    );
  });
});

describe("remote commands", () => {
  it.each([
    [undefined, undefined, "id -u"],
    [{ kind: "root" as const }, undefined, "id -u"],
    // Through sudo always under `timeout`, 0 = no limit: a cancel's TERM then gets a KILL behind it.
    [{ kind: "nopasswd" as const }, undefined, "sudo -n -- timeout -k 5 0 id -u"],
    [{ kind: "password" as const }, undefined, "sudo -S -k -p '' -- timeout -k 5 0 id -u"],
    [{ kind: "root" as const }, 1500, "timeout -k 5 2 id -u"],
    [undefined, 1500, "timeout -k 5 2 id -u"],
    [{ kind: "nopasswd" as const }, 300, "sudo -n -- timeout -k 5 1 id -u"],
    [{ kind: "password" as const }, 60_000, "sudo -S -k -p '' -- timeout -k 5 60 id -u"],
  ])("sudo %j, time limit %s → %s", (sudo, timeoutMs, expected) => {
    expect(
      remoteCommand(["id", "-u"], {
        ...(sudo ? { sudo } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      }),
    ).toBe(expected);
  });

  it("refuses to build a sudo command when sudo is unavailable", () => {
    expect(() =>
      remoteCommand(["id"], { sudo: { kind: "unavailable", reason: "no sudo" } }),
    ).toThrow("sudo is unavailable: no sudo");
  });

  it("reads the sudo probe", () => {
    expect(parseSudoProbe("uid=0\n")).toEqual({ uid: 0, detail: "" });
    expect(parseSudoProbe("uid=1000\nsudo=ok\n")).toEqual({
      uid: 1000,
      passwordless: true,
      detail: "",
    });
    expect(parseSudoProbe("uid=1001\nsudo=no\nsudo: a password is required\n")).toEqual({
      uid: 1001,
      passwordless: false,
      detail: "sudo: a password is required",
    });
    expect(() => parseSudoProbe("garbage")).toThrow(/unexpected output of the sudo probe/);
  });
});

describe("Semaphore", () => {
  it("holds at most `limit`, serves waiters in order, and fails waiters when told", async () => {
    const s = new Semaphore(2);
    const r1 = await s.acquire();
    const r2 = await s.acquire();
    const order: number[] = [];
    const w3 = s.acquire().then((r) => (order.push(3), r));
    const w4 = s.acquire().then((r) => (order.push(4), r));
    await new Promise((r) => setTimeout(r, 5));
    expect(s.inUse).toBe(2);
    expect(order).toEqual([]);
    r1();
    r1(); // releasing twice frees one slot only
    const r3 = await w3;
    expect(s.inUse).toBe(2);
    r2();
    await w4;
    expect(order).toEqual([3, 4]);
    const w5 = s.acquire();
    s.fail(new Error("connection gone"));
    await expect(w5).rejects.toThrow("connection gone");
    await expect(s.acquire()).rejects.toThrow("connection gone");
    r3();
    expect(() => new Semaphore(0)).toThrow(/limit must be ≥ 1/);
  });
});

describe("commands in messages", () => {
  it("quote a failing shell script by its first line, on one line", async () => {
    const local = new LocalHost({ name: "runner" });
    const script = 'set -e\nfile=$1\n[ -e "$file" ]\necho done';
    const e = (await run(local, ["sh", "-c", script, "sh", "/nonexistent/x"]).catch(
      (x: unknown) => x,
    )) as Error;
    expect(e.message).toBe(`runner: "sh -c 'set -e …' sh /nonexistent/x" exited with code 1`);
    expect(displayCommand(["kubeadm", "init", "--config", "/tmp/a b.yaml"])).toBe(
      "kubeadm init --config /tmp/a b.yaml",
    );
  });
});
