// SIMULATION (test double). What kube-apiserver fills in on a new batch/v1 Job.
import type { Json } from "./store.js";

/**
 * The fields the API server sets on a new Job (pkg/apis/batch/v1/defaults.go SetDefaults_Job;
 * pkg/registry/batch/job/strategy.go generateSelector, which labels the template and selects on
 * batch.kubernetes.io/controller-uid = the Job's UID). Called once the UID is assigned.
 */
export function defaultJob(obj: Json): void {
  const meta = obj.metadata as Json;
  const spec = (obj.spec ??= {}) as Json;
  if (spec.completions === undefined && spec.parallelism === undefined) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  spec.parallelism ??= 1;
  spec.backoffLimit ??= 6;
  spec.completionMode ??= "NonIndexed";
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= "TerminatingOrFailed";
  if (spec.manualSelector === true) return;
  const uid = String(meta.uid);
  const name = String(meta.name);
  const template = (spec.template ??= {}) as Json;
  const tmeta = (template.metadata ??= {}) as Json;
  tmeta.labels = {
    ...(tmeta.labels as Record<string, string> | undefined),
    "batch.kubernetes.io/controller-uid": uid,
    "batch.kubernetes.io/job-name": name,
    "controller-uid": uid,
    "job-name": name,
  };
  spec.selector = { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
}
