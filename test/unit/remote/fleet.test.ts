import { describe, expect, it } from "vitest";
import {
  FleetError,
  allOrFirstError,
  failuresOf,
  fleet,
  hostReporter,
} from "../../../src/remote/fleet.js";
import { CommandError } from "../../../src/remote/host.js";
import { TerminalReporter } from "../../../src/workflow/reporter.js";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fleet", () => {
  it("never runs more than `concurrency` operations at once, and returns results in item order", async () => {
    let inFlight = 0;
    let most = 0;
    const items = Array.from({ length: 12 }, (_, i) => i);
    const results = await fleet(
      items,
      (i) => `h${i}`,
      async (i) => {
        most = Math.max(most, ++inFlight);
        await tick(5 + ((i * 7) % 11)); // finishing out of order
        inFlight--;
        return i * 10;
      },
      { concurrency: 3 },
    );
    expect(most).toBe(3);
    expect(results).toEqual(items.map((i) => i * 10));
  });

  it("runs up to 8 at once by default", async () => {
    let inFlight = 0;
    let most = 0;
    await fleet(
      Array.from({ length: 20 }, (_, i) => i),
      String,
      async () => {
        most = Math.max(most, ++inFlight);
        await tick(5);
        inFlight--;
      },
    );
    expect(most).toBe(8);
  });

  it("keeps going after failures and reports every failed host in item order", async () => {
    const done: string[] = [];
    const names = ["cp-1", "w1", "w2", "w3", "w4"];
    const error = await fleet(
      names,
      (n) => n,
      async (n) => {
        await tick(n === "w1" ? 20 : 1); // w1 fails last
        if (n === "w1") throw new Error("kubelet did not start");
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- a non-Error is reported too
        if (n === "w3") throw "a thrown string";
        done.push(n);
      },
      { concurrency: 2 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FleetError);
    const fe = error as FleetError;
    expect(done.sort()).toEqual(["cp-1", "w2", "w4"]);
    expect(fe.total).toBe(5);
    expect(fe.failures.map((f) => f.name)).toEqual(["w1", "w3"]);
    expect(fe.message).toBe(
      "failed on 2 of 5 hosts:\n - w1: kubelet did not start\n - w3: a thrown string",
    );
  });

  it("does not name a host twice when its error already starts with the name", async () => {
    const err = new CommandError("w2", ["systemctl", "start", "kubelet"], {
      code: 1,
      stdout: "",
      stderr: "unit not found\nsecond line",
    });
    const e = (await fleet(
      ["w2"],
      (n) => n,
      () => Promise.reject(err),
    ).catch((x: unknown) => x)) as FleetError;
    expect(e.message).toBe(
      'failed on 1 of 1 host:\n - w2: "systemctl start kubelet" exited with code 1: unit not found | second line',
    );
    expect(e.failures[0]!.error).toBe(err);
  });

  it("indents multi-line messages under their host", async () => {
    const e = (await fleet(
      ["a", "b"],
      (n) => n,
      (n) => (n === "a" ? Promise.reject(new Error("line one\nline two")) : Promise.resolve(1)),
    ).catch((x: unknown) => x)) as FleetError;
    expect(e.message).toBe("failed on 1 of 2 hosts:\n - a: line one\n   line two");
  });

  it("handles no items and rejects a nonsense limit", async () => {
    expect(await fleet([], String, () => Promise.resolve(1))).toEqual([]);
    await expect(fleet([1], String, () => Promise.resolve(1), { concurrency: 0 })).rejects.toThrow(
      /concurrency must be a whole number ≥ 1, got 0/,
    );
  });
});

describe("failuresOf", () => {
  it("returns the failed hosts of a fleet run, none for a success, and throws anything else", async () => {
    const run = (fail: string[]) =>
      fleet(
        ["a", "b", "c"],
        (n) => n,
        (n) => (fail.includes(n) ? Promise.reject(new Error(`${n} is gone`)) : Promise.resolve()),
      );
    expect(await failuresOf(run([]))).toEqual([]);
    const failures = await failuresOf(run(["a", "c"]));
    expect(failures.map((f) => [f.name, (f.error as Error).message])).toEqual([
      ["a", "a is gone"],
      ["c", "c is gone"],
    ]);
    await expect(failuresOf(Promise.reject(new Error("not a fleet")))).rejects.toThrow(
      "not a fleet",
    );
  });
});

describe("allOrFirstError", () => {
  it("waits for every promise, then throws the first failure in the list's order", async () => {
    const ended: string[] = [];
    const after = <T>(ms: number, name: string, value: () => T) =>
      new Promise<T>((resolve, reject) =>
        setTimeout(() => {
          ended.push(name);
          try {
            resolve(value());
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        }, ms),
      );
    const run = allOrFirstError([
      after(5, "a", () => 1),
      after(30, "b", () => {
        throw new Error("b failed");
      }),
      after(1, "c", () => {
        throw new Error("c failed first");
      }),
      after(40, "d", () => 4),
    ]);
    await expect(run).rejects.toThrow("b failed");
    expect(ended.sort()).toEqual(["a", "b", "c", "d"]);
    expect(await allOrFirstError([after(2, "e", () => "x"), Promise.resolve("y")])).toEqual([
      "x",
      "y",
    ]);
  });
});

describe("hostReporter", () => {
  it("prefixes every line with the host and shares the parent's masks", async () => {
    const lines: string[] = [];
    const parent = new TerminalReporter({ write: (l) => lines.push(l) });
    const w1 = hostReporter(parent, "w1");
    const w2 = hostReporter(parent, "w2");
    w1.mask("abcdef.0123456789abcdef");
    w1.info("[preflight] running checks");
    const value = await w2.group("join", () => {
      w2.info("token abcdef.0123456789abcdef");
      return Promise.resolve(42);
    });
    w2.warn("swap is on");
    parent.info("parent sees abcdef.0123456789abcdef masked too");
    expect(value).toBe(42);
    expect(lines).toEqual([
      "w1: [preflight] running checks",
      "w2: join",
      "w2: token ***",
      "WARNING: w2: swap is on",
      "parent sees *** masked too",
    ]);
  });
});
