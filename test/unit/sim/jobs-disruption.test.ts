// The simulated job-controller's and disruption-controller's status calculations, against
// pkg/controller/job/job_controller.go (syncJob: Complete with CompletionsReached, Failed with
// DeadlineExceeded) and pkg/controller/disruption/disruption.go (getExpectedPodCount,
// countHealthyPods, buildDisruptedPodMap with DeletionTimeout = 2m, updatePdbStatus).
import { describe, expect, it } from "vitest";
import { nextJobStatus } from "../../support/sim/apiserver/controllers/jobs.js";
import {
  DELETION_TIMEOUT_MS,
  nextPdbStatus,
} from "../../support/sim/apiserver/controllers/disruption.js";
import type { StoredObject } from "../../support/sim/apiserver/store.js";

const NOW = "2026-01-01T00:00:00Z";
const T0 = new Date(NOW);

const job = (status?: object): StoredObject => ({
  apiVersion: "batch/v1",
  kind: "Job",
  metadata: { name: "upgrade-health-check-abcde", namespace: "kube-system" },
  spec: { activeDeadlineSeconds: 15 },
  ...(status ? { status } : {}),
});

describe("simulated job-controller", () => {
  it("a Job whose pod can run completes: SuccessCriteriaMet, then Complete (CompletionsReached)", () => {
    const s = nextJobStatus(job(), true, false, NOW);
    expect(s.succeeded).toBe(1);
    expect(s.completionTime).toBe(NOW);
    expect(s.conditions!.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["SuccessCriteriaMet", "True", "CompletionsReached"],
      ["Complete", "True", "CompletionsReached"],
    ]);
  });

  it("a Job whose pod fits no Node stays active until the deadline, then fails (DeadlineExceeded)", () => {
    const pending = nextJobStatus(job(), false, false, NOW);
    expect(pending.active).toBe(1);
    expect(pending.conditions).toBeUndefined();
    const failed = nextJobStatus(job(pending), false, true, NOW);
    expect(failed.failed).toBe(1);
    expect(failed.conditions!.map((c) => [c.type, c.reason, c.message])).toEqual([
      ["FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline"],
      ["Failed", "DeadlineExceeded", "Job was active longer than specified deadline"],
    ]);
    expect(failed.startTime).toBe(pending.startTime);
  });

  it("a finished Job keeps its status", () => {
    const done = nextJobStatus(job(), true, false, NOW);
    expect(nextJobStatus(job(done), false, true, "2026-01-01T00:01:00Z")).toEqual(done);
  });
});

const pod = (name: string, ready: boolean, deleting = false): StoredObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: "default",
    labels: { app: "web" },
    ...(deleting ? { deletionTimestamp: NOW } : {}),
  },
  status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
});

const pdb = (spec: object, status?: object): StoredObject => ({
  apiVersion: "policy/v1",
  kind: "PodDisruptionBudget",
  metadata: { name: "web", namespace: "default", generation: 2 },
  spec: { selector: { matchLabels: { app: "web" } }, ...spec },
  ...(status ? { status } : {}),
});

describe("simulated disruption-controller", () => {
  it("minAvailable: disruptionsAllowed = currentHealthy − minAvailable (SufficientPods)", () => {
    const s = nextPdbStatus(
      pdb({ minAvailable: 2 }),
      [pod("a", true), pod("b", true), pod("c", true)],
      T0,
    );
    expect(s).toMatchObject({
      observedGeneration: 2,
      expectedPods: 3,
      desiredHealthy: 2,
      currentHealthy: 3,
      disruptionsAllowed: 1,
    });
    expect(s.conditions![0]).toMatchObject({
      type: "DisruptionAllowed",
      status: "True",
      reason: "SufficientPods",
    });
  });

  it("maxUnavailable: a NotReady or terminating Pod is not healthy, so none may go (InsufficientPods)", () => {
    const s = nextPdbStatus(
      pdb({ maxUnavailable: 1 }),
      [pod("a", true), pod("b", false), pod("c", true, true)],
      T0,
    );
    expect(s).toMatchObject({ expectedPods: 3, desiredHealthy: 2, currentHealthy: 1 });
    expect(s.disruptionsAllowed).toBe(0);
    expect(s.conditions![0]).toMatchObject({ status: "False", reason: "InsufficientPods" });
  });

  it("a Pod evicted moments ago is not counted healthy until DeletionTimeout passes", () => {
    const evicted = { disruptedPods: { a: NOW } };
    const pods = [pod("a", true), pod("b", true)];
    const soon = nextPdbStatus(pdb({ minAvailable: 1 }, evicted), pods, T0);
    expect(soon).toMatchObject({
      currentHealthy: 1,
      disruptionsAllowed: 0,
      disruptedPods: { a: NOW },
    });
    const later = nextPdbStatus(
      pdb({ minAvailable: 1 }, evicted),
      pods,
      new Date(T0.getTime() + DELETION_TIMEOUT_MS),
    );
    expect(later).toMatchObject({ currentHealthy: 2, disruptionsAllowed: 1 });
    expect(later.disruptedPods).toBeUndefined();
  });
});
