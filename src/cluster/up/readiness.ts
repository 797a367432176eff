import { setTimeout as delay } from "node:timers/promises";
import { interruption } from "../../remote/interruption.js";
import { formatGoDuration } from "../../config/duration.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";

// `up` ends only when the cluster is usable (engineering notes: kind's --wait "Ready that is not
// ready"): every node of the Cluster file registered and Ready, and CoreDNS Available. On timeout
// the error names each node or workload that is not, with the reason the API gives.

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

const conditionsOf = (obj: KubeObject | undefined): Condition[] =>
  (obj?.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];

function describeCondition(c: Condition | undefined, fallback: string): string {
  if (!c) return fallback;
  const why = [c.reason, c.message].filter(Boolean).join(": ");
  return why ? `${c.type}=${c.status} (${why})` : `${c.type}=${c.status}`;
}

/** What is not ready yet, one entry per node or workload; empty when everything is. */
export function notReady(
  expectedNodes: readonly string[],
  nodes: readonly KubeObject[],
  coredns: KubeObject | undefined | "disabled",
): string[] {
  const problems: string[] = [];
  for (const name of expectedNodes) {
    const node = nodes.find((n) => n.metadata.name === name);
    if (!node) {
      problems.push(`node ${name}: not registered`);
      continue;
    }
    const ready = conditionsOf(node).find((c) => c.type === "Ready");
    if (ready?.status !== "True")
      problems.push(`node ${name}: ${describeCondition(ready, "no Ready condition yet")}`);
  }
  if (coredns !== "disabled") {
    const available = conditionsOf(coredns).find((c) => c.type === "Available");
    if (!coredns) problems.push("deployment kube-system/coredns: not found");
    else if (available?.status !== "True")
      problems.push(
        `deployment kube-system/coredns: ${describeCondition(available, "no Available condition yet")}`,
      );
  }
  return problems;
}

export interface ReadinessOptions {
  timeoutMs: number;
  intervalMs?: number;
  dnsDisabled: boolean;
  log: (line: string) => void;
}

/** Polls until notReady() is empty; throws naming what is not ready at the timeout. */
export async function waitForCluster(
  client: KubeClient,
  expectedNodes: readonly string[],
  opts: ReadinessOptions,
): Promise<void> {
  const start = Date.now();
  const deadline = start + opts.timeoutMs;
  let last: string[];
  let reported = "";
  opts.log(
    `[wait] Waiting up to ${formatGoDuration(opts.timeoutMs)} for ${expectedNodes.length} node(s) to be Ready${opts.dnsDisabled ? "" : " and CoreDNS to be available"}`,
  );
  for (;;) {
    if (interruption.aborted) {
      throw new Error("stopped waiting for the cluster to be ready", {
        cause: interruption.reason,
      });
    }
    try {
      const [nodes, coredns] = await Promise.all([
        client.list("v1", "Node"),
        opts.dnsDisabled
          ? Promise.resolve("disabled" as const)
          : client
              .get({
                apiVersion: "apps/v1",
                kind: "Deployment",
                name: "coredns",
                namespace: "kube-system",
              })
              .catch((e: unknown) => {
                if ((e as { status?: number }).status === 404) return undefined;
                throw e;
              }),
      ]);
      last = notReady(expectedNodes, nodes, coredns);
    } catch (e) {
      last = [`the API server did not answer: ${(e as Error).message}`];
    }
    if (last.length === 0) {
      opts.log(`[wait] The cluster is ready after ${formatGoDuration(Date.now() - start)}`);
      return;
    }
    const summary = last.join("; ");
    if (summary !== reported) {
      opts.log(`[wait] Not ready yet: ${summary}`);
      reported = summary;
    }
    if (Date.now() >= deadline) break;
    // An interrupted run stops waiting at once (the check above says so).
    await delay(Math.min(opts.intervalMs ?? 1000, deadline - Date.now()), undefined, {
      signal: interruption,
    }).catch(() => undefined);
  }
  throw new Error(
    `the cluster is not ready after ${formatGoDuration(opts.timeoutMs)}:\n${last.map((l) => ` - ${l}`).join("\n")}`,
  );
}
