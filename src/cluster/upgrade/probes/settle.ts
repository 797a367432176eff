import { poll } from "../../../kube/poll.js";
import type { KubeClient, KubeObject } from "../../../kube/types.js";
import { availabilityOf } from "./workload-targets.js";

// The settle gate between worker batches (kubeadm-upgrade.md §5.5; k0sctl drained the next
// worker before the previous one's workloads were back): the next batch starts only when every
// DaemonSet has its Pods Ready again (status as the DaemonSet controller writes it:
// numberReady = desiredNumberScheduled, no numberUnavailable — pkg/controller/daemon
// updateDaemonSetStatus) and every probed workload is back at its desired availability.
// A gate that times out fails the run naming what is not back: a next batch drained into a
// degraded cluster is what the rehearsal exists to catch.

interface DaemonSetObject extends KubeObject {
  status?: { desiredNumberScheduled?: number; numberReady?: number; numberUnavailable?: number };
}

/** A workload the gate waits for: a Deployment's namespace and name. */
export interface SettleWorkload {
  namespace: string;
  name: string;
}

/** What is not settled now, one phrase each; empty: settled. */
export async function unsettled(
  client: KubeClient,
  workloads: readonly SettleWorkload[],
): Promise<string[]> {
  const out: string[] = [];
  for (const ds of await client.list<DaemonSetObject>("apps/v1", "DaemonSet")) {
    const s = ds.status ?? {};
    const desired = s.desiredNumberScheduled ?? 0;
    const ready = s.numberReady ?? 0;
    if (ready < desired || (s.numberUnavailable ?? 0) > 0) {
      out.push(
        `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name} has ${ready} of ${desired} Pods Ready`,
      );
    }
  }
  for (const w of workloads) {
    const a = await availabilityOf(client, w.namespace, w.name);
    if (a.available < a.desired) {
      out.push(
        `Deployment ${w.namespace}/${w.name} has ${a.available} of ${a.desired} replicas available`,
      );
    }
  }
  return out;
}

/** Waits until nothing is unsettled; after timeoutMs fails naming what still is. */
export async function waitSettled(
  client: KubeClient,
  workloads: readonly SettleWorkload[],
  batch: readonly string[],
  timeoutMs: number,
  intervalMs = 1_000,
): Promise<void> {
  let last: string[] = [];
  await poll(
    async () => {
      last = await unsettled(client, workloads);
      return last.length === 0 ? true : undefined;
    },
    { timeoutMs, intervalMs, what: `the cluster to settle after ${batch.join(", ")}` },
  ).catch((e: unknown) => {
    throw new Error(
      `the cluster did not settle within --settle after ${batch.join(", ")}: ${last.join("; ") || (e as Error).message}`,
      { cause: e },
    );
  });
}
