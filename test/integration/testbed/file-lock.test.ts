import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withFileLock } from "../../support/file-lock.js";

// The tests' machine-wide lock, with the real flock(1): one holder at a time, released when its
// function ends or fails, and when its process is killed.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "file-lock-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("withFileLock", () => {
  it("lets one holder in at a time", async () => {
    const file = join(dir, "one.lock");
    const events: string[] = [];
    const holder = (name: string) =>
      withFileLock(
        file,
        async () => {
          events.push(`${name} in`);
          await sleep(200);
          events.push(`${name} out`);
          return name;
        },
        10_000,
      );
    expect(await Promise.all([holder("a"), holder("b"), holder("c")])).toEqual(["a", "b", "c"]);
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i]!.replace(" in", "")).toBe(events[i + 1]!.replace(" out", ""));
    }
    expect(events).toHaveLength(6);
  });

  it("releases the lock when the function fails", async () => {
    const file = join(dir, "fails.lock");
    await expect(
      withFileLock(file, () => Promise.reject(new Error("build failed")), 10_000),
    ).rejects.toThrow("build failed");
    expect(await withFileLock(file, () => Promise.resolve("next"), 2_000)).toBe("next");
  });

  it("fails naming the file when the wait runs out, without running the function", async () => {
    const file = join(dir, "busy.lock");
    let ran = false;
    let release!: () => void;
    const held = withFileLock(file, () => new Promise<void>((r) => (release = r)), 10_000);
    await sleep(100);
    const started = Date.now();
    const error = await withFileLock(
      file,
      () => {
        ran = true;
        return Promise.resolve();
      },
      1_000,
    ).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(`the test lock ${file} was not released within 1 s`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(ran).toBe(false);
    release();
    await held;
  });

  it("is free again once a holder's process is killed (no stale lock to wait out)", async () => {
    const file = join(dir, "killed.lock");
    const helper = join(import.meta.dirname, "../../support/file-lock.ts");
    // Node 24 runs the helper's TypeScript as it is (type stripping).
    const child = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { withFileLock } = await import(${JSON.stringify(helper)});
         await withFileLock(${JSON.stringify(file)}, () => {
           process.stdout.write("holding\\n");
           return new Promise(() => setInterval(() => {}, 1000));
         }, 10_000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.once("data", () => resolve());
      child.once("exit", (code) => reject(new Error(`the holder exited with ${code}`)));
    });
    const exited = new Promise((r) => child.once("exit", r));
    // While it lives, the lock is its.
    await expect(withFileLock(file, () => Promise.resolve(), 1_000)).rejects.toThrow(
      "was not released within 1 s",
    );
    child.kill("SIGKILL");
    await exited;
    const started = Date.now();
    expect(await withFileLock(file, () => Promise.resolve("taken"), 5_000)).toBe("taken");
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
