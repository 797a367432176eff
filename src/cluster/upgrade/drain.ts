import { setTimeout as delay } from "node:timers/promises";
import { formatGoDuration } from "../../config/duration.js";
import { isNotFound } from "../../kube/errors.js";
import type { KubeClient, KubeObject, ObjectRef } from "../../kube/types.js";
import { cancellable } from "../../remote/interruption.js";

// Cordon, drain and uncordon as `kubectl drain --ignore-daemonsets --delete-emptydir-data
// --force` does them (k8s.io/kubectl/pkg/drain): the Node marked unschedulable, then every Pod
// on it evicted through the pods/eviction subresource — which honours PodDisruptionBudgets —
// except mirror Pods (the kubelet's static Pods) and DaemonSet Pods (their controller puts them
// back at once). An eviction the budget refuses (429) is tried again every 5 s, kubectl's
// interval, until the drain's timeout; then the drain fails naming the Pod and its budget.

/** kubectl drain's pause between two refused evictions (drain.go evictPods). */
const EVICTION_RETRY_MS = 5_000;
/**
 * Between two looks at whether an evicted Pod is gone: the node's upgrade goes on within a
 * tenth of a second of its last Pod's end, for a GET of one Pod ten times a second per Pod.
 */
const GONE_POLL_MS = 100;
const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";

interface PodObject extends KubeObject {
  metadata: KubeObject["metadata"] & {
    uid?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string }[];
    deletionTimestamp?: string;
  };
}

interface BudgetObject extends KubeObject {
  spec?: { selector?: { matchLabels?: Record<string, string> } | null };
  status?: { disruptionsAllowed?: number };
}

interface NodeObject extends KubeObject {
  spec?: { unschedulable?: boolean };
}

const nodeRef = (name: string): ObjectRef => ({ apiVersion: "v1", kind: "Node", name });

/** Marks the Node unschedulable; returns false when it was so already (someone else cordoned it). */
export async function cordon(admin: KubeClient, node: string): Promise<boolean> {
  const obj = await admin.get<NodeObject>(nodeRef(node));
  if (obj.spec?.unschedulable === true) return false;
  await admin.patch(nodeRef(node), { spec: { unschedulable: true } }, "strategic");
  return true;
}

export async function uncordon(admin: KubeClient, node: string): Promise<void> {
  await admin.patch(nodeRef(node), { spec: { unschedulable: null } }, "merge");
}

/** The Pods a drain evicts from the node. */
export async function podsToEvict(admin: KubeClient, node: string): Promise<PodObject[]> {
  const pods = await admin.list<PodObject>("v1", "Pod", { fieldSelector: `spec.nodeName=${node}` });
  return pods.filter(
    (p) =>
      p.metadata.annotations?.[MIRROR_ANNOTATION] === undefined &&
      !(p.metadata.ownerReferences ?? []).some((o) => o.kind === "DaemonSet"),
  );
}

/** The budgets whose selector matches the Pod (only matchLabels is read). */
async function budgetsOf(admin: KubeClient, pod: PodObject): Promise<string[]> {
  const budgets = await admin
    .list<BudgetObject>("policy/v1", "PodDisruptionBudget", { namespace: pod.metadata.namespace! })
    .catch(() => []);
  const labels = pod.metadata.labels ?? {};
  return budgets
    .filter((b) => {
      const match = b.spec?.selector?.matchLabels;
      return match !== undefined && Object.entries(match).every(([k, v]) => labels[k] === v);
    })
    .map((b) => `${b.metadata.namespace}/${b.metadata.name}`);
}

const isTooManyRequests = (e: unknown) => (e as { code?: number }).code === 429;
/**
 * A 409 Conflict: the budget's status changed while the eviction updated it (another eviction
 * under the same budget, the disruption controller). Nothing was refused: the eviction is asked
 * again, until the drain's deadline.
 */
const isConflict = (e: unknown) => (e as { code?: number }).code === 409;
/** The pause before an eviction that conflicted is asked again. */
const CONFLICT_RETRY_MS = 100;

/** Told of every eviction the API refused (429): the Pod ("ns/name") and the API's message. */
export type OnRefused = (pod: string, reason: string) => void;

interface EvictOptions {
  deadline: number;
  signal: AbortSignal;
  timeoutMs: number;
  onRefused?: OnRefused | undefined;
}

/** Evicts one Pod and waits until it is gone; throws naming the Pod and its budget at the deadline. */
async function evict(admin: KubeClient, pod: PodObject, o: EvictOptions): Promise<void> {
  const { deadline, signal, timeoutMs } = o;
  const ref = {
    apiVersion: "v1",
    kind: "Pod",
    name: pod.metadata.name,
    namespace: pod.metadata.namespace!,
  };
  const name = `${ref.namespace}/${ref.name}`;
  const body = {
    apiVersion: "policy/v1",
    kind: "Eviction",
    metadata: { name: ref.name, namespace: ref.namespace },
  };
  for (;;) {
    try {
      await admin.createSubresource(ref, "eviction", body);
      break;
    } catch (e) {
      if (isNotFound(e)) return;
      if (isConflict(e) && Date.now() + CONFLICT_RETRY_MS <= deadline) {
        await delay(CONFLICT_RETRY_MS, undefined, { signal });
        continue;
      }
      if (!isTooManyRequests(e)) throw e;
      o.onRefused?.(name, (e as Error).message);
      if (Date.now() + EVICTION_RETRY_MS > deadline) {
        const budgets = await budgetsOf(admin, pod);
        const which =
          budgets.length > 0
            ? `PodDisruptionBudget ${budgets.join(", ")}`
            : "a PodDisruptionBudget";
        throw new Error(
          `pod ${name} could not be evicted within ${formatGoDuration(timeoutMs)}: ${which} allows no disruption (${(e as Error).message})`,
          { cause: e },
        );
      }
      await delay(EVICTION_RETRY_MS, undefined, { signal });
    }
  }
  // Gone, or replaced by another Pod of the same name.
  for (;;) {
    try {
      const now = await admin.get<PodObject>(ref);
      if (now.metadata.uid !== pod.metadata.uid) return;
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `pod ${name} was evicted but still exists after ${formatGoDuration(timeoutMs)}`,
      );
    }
    await delay(GONE_POLL_MS, undefined, { signal });
  }
}

/** Evicts every Pod a drain evicts, all at once; returns how many there were. */
export async function drain(
  admin: KubeClient,
  node: string,
  timeoutMs: number,
  onRefused?: OnRefused,
): Promise<number> {
  const pods = await podsToEvict(admin, node);
  const o = {
    deadline: Date.now() + timeoutMs,
    signal: cancellable(undefined),
    timeoutMs,
    onRefused,
  };
  const results = await Promise.allSettled(pods.map((p) => evict(admin, p, o)));
  const failed = results.flatMap((r) =>
    r.status === "rejected" ? [(r.reason as Error).message] : [],
  );
  if (failed.length > 0) {
    throw new Error(`drain of ${node} failed: ${failed.join("; ")}`);
  }
  return pods.length;
}
