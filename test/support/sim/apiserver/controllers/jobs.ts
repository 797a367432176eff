// SIMULATION (test double). batch/v1 Jobs without pods: no pod is created, scheduled or run (the
// simulation runs no pods but static ones). Like the Deployment stand-in (workloads.ts), this
// job-controller writes the .status the real one would write if the Job's one pod ran where it
// could: a Job whose pod template fits a Node that is Ready (scheduling.ts: taints and
// tolerations, cordoned nodes, node selector and affinity) succeeds at once; one that fits none
// stays active (its pod Pending) until spec.activeDeadlineSeconds fails it. The
// ttl-after-finished-controller then deletes finished Jobs after ttlSecondsAfterFinished.
// This is what kubeadm's upgrade health check relies on (phases/upgrade/health.go createJob:
// a Job with the pause image tolerating the control-plane taint must complete; a cluster with
// no Node its pod fits keeps it pending until the deadline).
// k8s: pkg/controller/job/job_controller.go (syncJob: startTime when first synced; succeeded
// pods reaching completions → SuccessCriteriaMet then Complete with reason CompletionsReached,
// "Reached expected number of succeeded pods", completionTime; pastActiveDeadline →
// FailureTarget then Failed with reason DeadlineExceeded, "Job was active longer than specified
// deadline"), pkg/controller/job/util (the condition types), pkg/controller/ttlafterfinished/
// ttlafterfinished_controller.go (delete with Background propagation once
// finishTime + ttlSecondsAfterFinished has passed).
// SIMULATION differences: completions > 1 and parallelism are not modelled (one pod, one
// success); backoffLimit, podFailurePolicy and suspend are ignored; activeDeadlineSeconds is
// multiplied by the time scale, like every other simulated controller's durations, but not
// ttlSecondsAfterFinished (see the sync).
import type { Json, StoredObject } from "../store.js";
import { rfc3339 } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";
import { WorkQueue } from "./queue.js";
import { podWouldBeReady, schedulerUnfit, templateOf, type NodeLike } from "./scheduling.js";

interface JobCondition {
  type: string;
  status: string;
  lastProbeTime: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

interface JobSpec {
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
}

interface JobStatus {
  startTime?: string;
  completionTime?: string;
  active?: number;
  succeeded?: number;
  failed?: number;
  ready?: number;
  terminating?: number;
  uncountedTerminatedPods?: Json;
  conditions?: JobCondition[];
}

const JOB = { apiVersion: "batch/v1", kind: "Job" };

function finished(status: JobStatus): JobCondition | undefined {
  return status.conditions?.find(
    (c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True",
  );
}

function condition(type: string, reason: string, message: string, now: string): JobCondition {
  return {
    type,
    status: "True",
    lastProbeTime: now,
    lastTransitionTime: now,
    reason,
    message,
  };
}

/** Whether the Job's pod would run and succeed on one of `nodes`. */
export function jobPodCanRun(job: StoredObject, nodes: NodeLike[]): boolean {
  const { spec } = templateOf(job);
  return nodes.some((n) => !schedulerUnfit(spec, n) && podWouldBeReady(spec, n));
}

/** The status after one sync; `deadlinePassed` says whether activeDeadlineSeconds ran out. */
export function nextJobStatus(
  job: StoredObject,
  canRun: boolean,
  deadlinePassed: boolean,
  now: string,
): JobStatus {
  const prev = (job.status ?? {}) as JobStatus;
  if (finished(prev)) return prev;
  const base: JobStatus = {
    startTime: prev.startTime ?? now,
    uncountedTerminatedPods: {},
    ready: 0,
    terminating: 0,
  };
  if (canRun) {
    const message = "Reached expected number of succeeded pods";
    return {
      ...base,
      completionTime: now,
      succeeded: 1,
      conditions: [
        condition("SuccessCriteriaMet", "CompletionsReached", message, now),
        condition("Complete", "CompletionsReached", message, now),
      ],
    };
  }
  if (deadlinePassed) {
    const message = "Job was active longer than specified deadline";
    return {
      ...base,
      failed: 1,
      conditions: [
        condition("FailureTarget", "DeadlineExceeded", message, now),
        condition("Failed", "DeadlineExceeded", message, now),
      ],
    };
  }
  return { ...base, active: 1 };
}

/** job-controller and ttl-after-finished-controller. `timeScale` multiplies the deadline. */
export function startJobController(ctx: ControllerContext, timeScale = 1): StopFn {
  const { store, log } = ctx;
  const keyOf = (o: StoredObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const queue = new WorkQueue(
    (key) => {
      const [namespace, name] = key.split("/") as [string, string];
      const job = store.get({ ...JOB, namespace, name });
      if (!job || job.metadata.deletionTimestamp) return;
      const spec = (job.spec ?? {}) as JobSpec;
      const nowDate = store.now();
      const now = rfc3339(nowDate);
      const prev = (job.status ?? {}) as JobStatus;
      const done = finished(prev);
      if (done) {
        // ttlafterfinished: expire finished Jobs.
        if (spec.ttlSecondsAfterFinished === undefined) return;
        // Not scaled: the client that created the Job (kubeadm's health check) reads it back
        // on its own clock, and a scaled TTL would delete it before that client's next read.
        const at = Date.parse(done.lastTransitionTime) + spec.ttlSecondsAfterFinished * 1000;
        if (nowDate.getTime() >= at) {
          store.delete({ ...JOB, namespace, name }, { propagationPolicy: "Background" });
          log(`ttl-after-finished-controller: deleted Job ${key}`);
        } else queue.addAfter(key, at - nowDate.getTime() + 5);
        return;
      }
      const started = prev.startTime ? Date.parse(prev.startTime) : nowDate.getTime();
      const deadlineAt =
        spec.activeDeadlineSeconds === undefined
          ? undefined
          : started + spec.activeDeadlineSeconds * 1000 * timeScale;
      const nodes = store.list("v1", "Node") as unknown as NodeLike[];
      const status = nextJobStatus(
        job,
        jobPodCanRun(job, nodes),
        deadlineAt !== undefined && nowDate.getTime() >= deadlineAt,
        now,
      );
      try {
        store.update({ ...job, status: status }, { subresource: "status" });
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 409) queue.add(key);
        else if (code !== 404) throw e;
        return;
      }
      if (finished(status))
        queue.add(key); // the TTL timer
      else if (deadlineAt !== undefined) queue.addAfter(key, deadlineAt - nowDate.getTime() + 5);
    },
    (key, e) => log(`job-controller: Job ${key}: ${(e as Error).message}`),
  );
  const enqueueAll = () => {
    for (const o of store.list(JOB.apiVersion, JOB.kind)) queue.add(keyOf(o));
  };
  const unsubscribe = store.subscribe((ev) => {
    if (ev.resource.group === "" && ev.resource.kind === "Node") enqueueAll();
    else if (ev.resource.group === "batch" && ev.resource.kind === "Job" && ev.type === "ADDED") {
      queue.add(keyOf(ev.object));
    }
  });
  enqueueAll();
  return () => {
    unsubscribe();
    queue.stop();
  };
}
