import { setTimeout as delay } from "node:timers/promises";
import { interruption } from "../remote/interruption.js";
import { formatGoDuration } from "../config/duration.js";
import type { KubeClient, KubeObject } from "../kube/types.js";
import { heartbeat, type HeartbeatOptions } from "../workflow/heartbeat.js";

// `up` ends only when the cluster is usable (engineering notes: kind's --wait "Ready that is not
// ready"): every node of the Cluster file registered and Ready, and CoreDNS Available. On timeout
// the error names each node or workload that is not, with the reason the API gives.
// Without a pod network (`cni: none`, as kind's disableDefaultCNI) nodes cannot be Ready and
// CoreDNS cannot start, so the gate is the API answering and every node registered; a node that
// is NotReady only because the runtime's network is not ready is fine.

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

// The kubelet's Ready condition while the runtime reports NetworkReady=false
// (pkg/kubelet/kubelet.go: "container runtime network not ready: NetworkReady=false ...").
const NETWORK_NOT_READY = "container runtime network not ready";

/** A Ready condition that is False only because no pod network is installed yet. */
export function onlyNetworkNotReady(c: Condition | undefined): boolean {
  return c?.status === "False" && (c.message ?? "").includes(NETWORK_NOT_READY);
}

/**
 * What is not ready yet, one entry per node or workload; empty when everything is. With
 * `podNetwork` false, nodes need only be registered with a Ready condition that is True or False
 * for the missing network alone.
 */
export function notReady(
  expectedNodes: readonly string[],
  nodes: readonly KubeObject[],
  coredns: KubeObject | undefined | "disabled",
  podNetwork = true,
): string[] {
  const problems: string[] = [];
  for (const name of expectedNodes) {
    const node = nodes.find((n) => n.metadata.name === name);
    if (!node) {
      problems.push(`node ${name}: not registered`);
      continue;
    }
    const ready = conditionsOf(node).find((c) => c.type === "Ready");
    if (ready?.status !== "True" && (podNetwork || !onlyNetworkNotReady(ready)))
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
  /** False for `cni: none`: nodes stay NotReady and CoreDNS Pending until the user installs one. */
  podNetwork?: boolean;
  log: (line: string) => void;
  /** The "still waiting" lines' interval and clock (workflow/heartbeat.ts); tests shorten it. */
  heartbeat?: Pick<HeartbeatOptions, "everyMs" | "clock">;
}

/** Polls until notReady() is empty; throws naming what is not ready at the timeout. */
export async function waitForCluster(
  client: KubeClient,
  expectedNodes: readonly string[],
  opts: ReadinessOptions,
): Promise<void> {
  const start = Date.now();
  const deadline = start + opts.timeoutMs;
  let last = ["the API server has not answered yet"];
  let reported = "";
  const podNetwork = opts.podNetwork ?? true;
  // Without a pod network CoreDNS stays Pending: not waited for.
  const dnsDisabled = opts.dnsDisabled || !podNetwork;
  opts.log(
    podNetwork
      ? `[wait] Waiting up to ${formatGoDuration(opts.timeoutMs)} for ${expectedNodes.length} node(s) to be Ready${dnsDisabled ? "" : " and CoreDNS to be available"}`
      : `[wait] Waiting up to ${formatGoDuration(opts.timeoutMs)} for the API server and ${expectedNodes.length} node(s) to register (no pod network: nodes NotReady and CoreDNS Pending are expected)`,
  );
  const stop = heartbeat({
    ...opts.heartbeat,
    label: "[wait] Still waiting",
    pending: () => last,
    log: opts.log,
  });
  try {
    for (;;) {
      if (interruption.aborted) {
        throw new Error("stopped waiting for the cluster to be ready", {
          cause: interruption.reason,
        });
      }
      try {
        const [nodes, coredns] = await Promise.all([
          client.list("v1", "Node"),
          dnsDisabled
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
        last = notReady(expectedNodes, nodes, coredns, podNetwork);
      } catch (e) {
        last = [`the API server did not answer: ${(e as Error).message}`];
      }
      if (last.length === 0) {
        const after = formatGoDuration(Date.now() - start);
        opts.log(
          podNetwork
            ? `[wait] The cluster is ready after ${after}`
            : `[wait] The API server answers and every node registered after ${after}; with cni: none the nodes stay NotReady and CoreDNS Pending until you install a pod network (CNI)`,
        );
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
  } finally {
    stop();
  }
  throw new Error(
    `the cluster ${podNetwork ? "is not ready" : "has not come up"} after ${formatGoDuration(opts.timeoutMs)}:\n${last.map((l) => ` - ${l}`).join("\n")}`,
  );
}
