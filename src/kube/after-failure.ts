import { interruption } from "../remote/interruption.js";
import { isForbidden, isNotFound } from "./errors.js";
import { poll } from "./poll.js";

// A control-plane step that fails puts the old manifests back and returns at once (kubeadm's
// rollbackOldManifests does not wait): the kubelet is then restarting the API server, and with
// one control plane nothing answers for a few seconds. What a run does after its failure —
// uncordon the nodes it cordoned, read the state it leaves — waits that long for an answer
// instead of giving up on the first refused connection. An interrupted run tries once.

export const AFTER_FAILURE_WAIT_MS = 30_000;

export async function whenApiAnswers<T>(what: string, call: () => Promise<T>): Promise<T> {
  if (interruption.aborted) return call();
  const { value } = await poll(async () => ({ value: await call() }), {
    what,
    timeoutMs: AFTER_FAILURE_WAIT_MS,
    retryIf: (e) => !isNotFound(e) && !isForbidden(e),
  });
  return value;
}
