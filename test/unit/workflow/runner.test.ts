import { describe, expect, it } from "vitest";
import type { Phase } from "../../../src/workflow/phase.js";
import type { Reporter } from "../../../src/workflow/reporter.js";
import { Runner } from "../../../src/workflow/runner.js";

interface Data {
  ran: string[];
  skipTwo?: boolean;
}

class RecordingReporter implements Reporter {
  lines: string[] = [];
  groups: string[] = [];
  info(m: string) {
    this.lines.push(m);
  }
  warn(m: string) {
    this.lines.push(`WARN ${m}`);
  }
  async group<T>(title: string, fn: () => Promise<T>) {
    this.groups.push(title);
    return fn();
  }
  mask() {}
}

const leaf = (name: string, extra: Partial<Phase<Data>> = {}): Phase<Data> => ({
  name,
  short: name,
  run: (d, ctx) => {
    d.ran.push(ctx.path);
    ctx.log.info(`ran ${name}`);
    return Promise.resolve();
  },
  ...extra,
});

function tree(): Phase<Data>[] {
  return [
    leaf("preflight"),
    {
      ...leaf("certs"),
      phases: [leaf("ca"), leaf("apiserver", { dependencies: ["certs/ca"] })],
    },
    { ...leaf("two"), runIf: (d) => !d.skipTwo, phases: [leaf("child")] },
    leaf("later", { pending: "needs the Kubernetes API" }),
  ];
}

describe("Runner", () => {
  it("flattens the tree to slash paths in run order", () => {
    const r = new Runner(tree(), new RecordingReporter());
    expect(r.paths()).toEqual([
      "preflight",
      "certs",
      "certs/ca",
      "certs/apiserver",
      "two",
      "two/child",
      "later",
    ]);
  });

  it("runs every phase in order, parents before children, one group per top-level phase", async () => {
    const rep = new RecordingReporter();
    const data: Data = { ran: [] };
    await new Runner(tree(), rep).run(data, { dryRun: true });
    expect(data.ran).toEqual([
      "preflight",
      "certs",
      "certs/ca",
      "certs/apiserver",
      "two",
      "two/child",
    ]);
    expect(rep.groups).toEqual(["preflight", "certs", "two", "later"]);
    expect(rep.lines).toContain("[certs] ran apiserver");
  });

  it("tags lines with the top-level phase unless they carry a tag of their own", async () => {
    const rep = new RecordingReporter();
    const phases: Phase<Data>[] = [
      {
        name: "control-plane",
        short: "",
        phases: [
          {
            name: "apiserver",
            short: "",
            run: (_d, ctx) => {
              ctx.log.info("Creating static Pod manifest");
              ctx.log.info('[patches] Applied patch of type "merge"');
              ctx.log.warn("[WARNING Swap]: swap is on");
              return Promise.resolve();
            },
          },
        ],
      },
    ];
    await new Runner(phases, rep).run({ ran: [] });
    expect(rep.lines).toEqual([
      "[control-plane] Creating static Pod manifest",
      '[patches] Applied patch of type "merge"',
      "WARN [control-plane] [WARNING Swap]: swap is on",
    ]);
  });

  it("skips a phase with its whole sub-tree", async () => {
    const data: Data = { ran: [] };
    await new Runner(tree(), new RecordingReporter()).run(data, {
      skipPhases: ["certs", "two/child"],
      dryRun: true,
    });
    expect(data.ran).toEqual(["preflight", "two"]);
  });

  it("runs only the filtered phase and its sub-tree, not its ancestors", async () => {
    const data: Data = { ran: [] };
    const r = new Runner(tree(), new RecordingReporter());
    await r.run(data, { filterPhases: ["certs/apiserver"] });
    expect(data.ran).toEqual(["certs/apiserver"]);
    data.ran = [];
    await r.run(data, { filterPhases: ["certs"] });
    expect(data.ran).toEqual(["certs", "certs/ca", "certs/apiserver"]);
  });

  it("refuses unknown phase names and lists the valid ones", async () => {
    const r = new Runner(tree(), new RecordingReporter());
    await expect(r.run({ ran: [] }, { skipPhases: ["certz"] })).rejects.toThrow(
      /invalid phase name "certz" in --skip-phases: valid names are preflight, certs, certs\/ca/,
    );
    await expect(r.run({ ran: [] }, { filterPhases: ["nope"] })).rejects.toThrow(
      /invalid phase name "nope"/,
    );
  });

  it("does not run the children of a phase whose runIf is false", async () => {
    const data: Data = { ran: [], skipTwo: true };
    await new Runner(tree(), new RecordingReporter()).run(data, { dryRun: true });
    expect(data.ran).not.toContain("two");
    expect(data.ran).not.toContain("two/child");
  });

  it("wraps a failure with the phase path and records it in the timings", async () => {
    const phases: Phase<Data>[] = [
      {
        name: "certs",
        short: "",
        phases: [
          leaf("ca"),
          { name: "apiserver", short: "", run: () => Promise.reject(new Error("disk full")) },
          leaf("sa"),
        ],
      },
    ];
    const r = new Runner(phases, new RecordingReporter());
    const data: Data = { ran: [] };
    const err = await r.run(data).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe("error execution phase certs/apiserver: disk full");
    expect(((err as Error).cause as Error).message).toBe("disk full");
    expect(data.ran).toEqual(["certs/ca"]);
    expect(r.timings.map((t) => `${t.path}:${t.outcome}`)).toEqual([
      "certs/ca:done",
      "certs/apiserver:failed",
      "certs:failed",
    ]);
  });

  it("reports a pending phase in a dry run and stops at it in a real run", async () => {
    const rep = new RecordingReporter();
    const r = new Runner(tree(), rep);
    const timings = await r.run({ ran: [] }, { dryRun: true });
    expect(timings.find((t) => t.path === "later")?.outcome).toBe("pending");
    expect(
      rep.lines.some(
        (l) =>
          l.startsWith("WARN [later] Would run phase later") &&
          l.includes("needs the Kubernetes API"),
      ),
    ).toBe(true);
    await expect(r.run({ ran: [] })).rejects.toThrow(
      "error execution phase later: not implemented in this version of kubeforge: needs the Kubernetes API",
    );
  });

  it("refuses a tree whose dependencies are unknown or run later", () => {
    expect(() => new Runner([leaf("a", { dependencies: ["b"] })], new RecordingReporter())).toThrow(
      "phase a depends on unknown phase b",
    );
    expect(
      () => new Runner([leaf("a", { dependencies: ["b"] }), leaf("b")], new RecordingReporter()),
    ).toThrow("phase a depends on b, which runs after it");
  });
});

describe("Runner log groups", () => {
  const named = (name: string, extra: Partial<Phase<Data>> = {}) => leaf(name, extra);

  it("opens no group for a phase its runIf leaves out", async () => {
    const rep = new RecordingReporter();
    await new Runner(tree(), rep).run({ ran: [], skipTwo: true }, { dryRun: true });
    expect(rep.groups).toEqual(["preflight", "certs", "later"]);
  });

  it("names a group from the data, shares it with the next phases naming it, or opens none", async () => {
    const rep = new RecordingReporter();
    const data: Data = { ran: [] };
    await new Runner(
      [
        named("connect"),
        named("plan", { group: false }),
        named("init", { group: (d) => `init cp-${d.ran.length}` }),
        named("nodes"),
        named("cni", { group: () => "nodes" }),
        named("wait"),
      ],
      rep,
    ).run(data);
    expect(rep.groups).toEqual(["connect", "init cp-2", "nodes", "wait"]);
    expect(data.ran).toEqual(["connect", "plan", "init", "nodes", "cni", "wait"]);
  });

  it("lets a sub-phase open a group when its parent opened none", async () => {
    const rep = new RecordingReporter();
    await new Runner(
      [
        {
          ...named("join", { group: false }),
          phases: [named("control-planes"), named("workers", { group: () => "join workers" })],
        },
      ],
      rep,
    ).run({ ran: [] });
    expect(rep.groups).toEqual(["join workers"]);
  });
});

describe("Runner dependencies", () => {
  const phases = (): Phase<Data>[] => [
    leaf("connect"),
    leaf("facts", { dependencies: ["connect"] }),
    { ...leaf("join"), phases: [leaf("workers", { dependencies: ["facts"] })] },
    leaf("wait"),
  ];

  it("refuses to skip a phase another one that runs depends on, naming both", async () => {
    const data: Data = { ran: [] };
    await expect(
      new Runner(phases(), new RecordingReporter()).run(data, { skipPhases: ["connect"] }),
    ).rejects.toThrow(
      'phase "facts" depends on "connect", which --skip-phases skips: skip "facts" too, or run it',
    );
    expect(data.ran).toEqual([]);
  });

  it("allows skipping the dependent phase with it, or running a phase alone", async () => {
    const data: Data = { ran: [] };
    const r = new Runner(phases(), new RecordingReporter());
    await r.run(data, { skipPhases: ["connect", "facts", "join"] });
    expect(data.ran).toEqual(["wait"]);
    data.ran = [];
    await r.run(data, { filterPhases: ["join/workers"] });
    expect(data.ran).toEqual(["join/workers"]);
  });
});
