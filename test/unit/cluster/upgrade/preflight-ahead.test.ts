import { describe, expect, it } from "vitest";
import { PreflightsAhead } from "../../../../src/cluster/upgrade/preflight-ahead.js";
import type { Reporter } from "../../../../src/workflow/reporter.js";
import type { PhaseTiming } from "../../../../src/workflow/runner.js";

// A worker's `upgrade node` preflight run ahead of its turn: its lines wait for the turn, a
// secret is masked at once, a failure is the turn's; the rest of its run, taken at the turn,
// prints straight on.

function recorder() {
  const seen: string[] = [];
  const reporter: Reporter = {
    info: (m) => void seen.push(`info ${m}`),
    warn: (m) => void seen.push(`warn ${m}`),
    group: (_t, fn) => fn(),
    mask: (s) => void seen.push(`mask ${s}`),
  };
  return { seen, reporter };
}

const TIMING: PhaseTiming = { path: "preflight", outcome: "done", startedAt: 0, ms: 12 };

describe("PreflightsAhead", () => {
  it("keeps the lines until the node's turn, then prints them in order and gives the timings", async () => {
    const { seen, reporter } = recorder();
    const ahead = new PreflightsAhead<{ go: () => void }>();
    let runs = 0;
    ahead.start("w-1", reporter, (r) => {
      runs++;
      r.info("[upgrade/preflight] Running pre-flight checks");
      r.mask("token-secret");
      r.warn("[WARNING ContainerRuntimeVersion]: update your runtime");
      return Promise.resolve({
        timings: [TIMING],
        // The rest of the run reports through the same reporter.
        rest: { go: () => r.info("[upgrade/kubelet-config] Writing kubelet configuration") },
      });
    });
    // A second start for the same node runs nothing more.
    ahead.start("w-1", reporter, () => Promise.reject(new Error("not run")));
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(["mask token-secret"]);

    const taken = await ahead.take("w-1", reporter);
    expect(taken?.timings).toEqual([TIMING]);
    expect(runs).toBe(1);
    expect(seen).toEqual([
      "mask token-secret",
      "info [upgrade/preflight] Running pre-flight checks",
      "warn [WARNING ContainerRuntimeVersion]: update your runtime",
    ]);
    taken!.rest.go();
    expect(seen.at(-1)).toBe("info [upgrade/kubelet-config] Writing kubelet configuration");
    // Taken once: the node's next turn (a retry) runs its own preflight.
    expect(await ahead.take("w-1", reporter)).toBeUndefined();
  });

  it("fails the node's turn with the preflight's error, after its lines", async () => {
    const { seen, reporter } = recorder();
    const ahead = new PreflightsAhead();
    ahead.start("w-2", reporter, (r) => {
      r.info("[upgrade/preflight] Running pre-flight checks");
      return Promise.reject(new Error("[preflight] Some fatal errors occurred"));
    });
    await expect(ahead.take("w-2", reporter)).rejects.toThrow("Some fatal errors occurred");
    expect(seen).toEqual(["info [upgrade/preflight] Running pre-flight checks"]);
  });

  it("has nothing for a node whose preflight was not started", async () => {
    const { reporter } = recorder();
    expect(await new PreflightsAhead().take("w-3", reporter)).toBeUndefined();
  });
});
