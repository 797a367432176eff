import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalHost } from "../../../src/remote/local.js";
import { eventually, running, waitForFile } from "../../support/processes.js";

// LocalHost ending real commands early: at their time limit and when cancelled. The process
// tree is the point: a command's children must be gone too, or they keep the runner busy (and
// hold the pipes kubeforge waits on). The same as a non-root user through sudo:
// test/integration/remote/ssh-sudo.test.ts.

let dir: string;
const host = new LocalHost();

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-local-exec-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A shell whose child sleeps; the child's pid in <name>.pid. */
const tree = (name: string, prelude = "") => [
  "sh",
  "-c",
  `${prelude} sleep 30 & echo $! > "$1"; wait`,
  "sh",
  join(dir, `${name}.pid`),
];

describe("LocalHost.exec ending commands early", () => {
  it("at the time limit: code 124, the reason on stderr, the whole tree gone", async () => {
    const r = await host.exec(tree("limit"), { timeoutMs: 300 });
    expect(r.code).toBe(124);
    expect(r.stderr).toBe("timed out after 300 ms");
    const child = Number(await waitForFile(join(dir, "limit.pid"), 1000));
    expect(await eventually(() => !running(child), 2000)).toBe(true);
  });

  it("KILLs a tree that ignores TERM a few seconds later", async () => {
    const r = await host.exec(tree("stubborn", "trap '' TERM;"), { timeoutMs: 300 });
    expect(r.code).toBe(124);
    const child = Number(await waitForFile(join(dir, "stubborn.pid"), 1000));
    expect(await eventually(() => !running(child), 2000)).toBe(true);
  }, 15_000);

  it("cancelled: rejects naming the host and command once the tree is gone", async () => {
    const controller = new AbortController();
    const argv = tree("cancel");
    const run = host.exec(argv, { signal: controller.signal });
    const child = Number(await waitForFile(join(dir, "cancel.pid"), 5000));
    controller.abort(new Error("up failed"));
    const err = (await run.catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(`local: cancelled "${argv.join(" ")}"`);
    expect((err.cause as Error).message).toBe("up failed");
    expect(await eventually(() => !running(child), 2000)).toBe(true);
  });

  it("already cancelled: runs nothing", async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = join(dir, "ran");
    await expect(host.exec(["touch", marker], { signal: controller.signal })).rejects.toThrow(
      `local: cancelled "touch ${marker}"`,
    );
    expect(await stat(marker).catch(() => undefined)).toBeUndefined();
  });

  it("a command that finishes first is not disturbed by a later cancel", async () => {
    const controller = new AbortController();
    const r = await host.exec(["echo", "done"], { signal: controller.signal, timeoutMs: 5000 });
    controller.abort();
    expect(r).toEqual({ code: 0, stdout: "done\n", stderr: "" });
  });
});
