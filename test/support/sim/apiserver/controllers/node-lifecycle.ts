// SIMULATION (test double). node-lifecycle-controller's node health monitoring: every
// --node-monitor-period it looks at each Node; the node's "probe" time moves whenever its Ready
// condition's lastHeartbeatTime changes or its Lease in kube-node-lease is renewed; a node not
// heard from for --node-monitor-grace-period (--node-startup-grace-period while it never posted
// a Ready condition) gets Ready, MemoryPressure, DiskPressure and PIDPressure set to Unknown,
// reason NodeStatusUnknown, "Kubelet stopped posting node status." (absent ones are added as
// NodeStatusNeverUpdated, "Kubelet never posted node status."), lastHeartbeatTime kept.
// k8s: pkg/controller/nodelifecycle/node_lifecycle_controller.go (monitorNodeHealth,
// tryUpdateNodeHealth), pkg/controller/nodelifecycle/config/v1alpha1/defaults.go and
// kubernetes/kubernetes#126287 (grace period 50 s since v1.32, was 40 s; startup grace 60 s),
// cmd/kube-controller-manager/app/options/nodelifecyclecontroller.go (--node-monitor-period 5 s).
// A node whose Ready condition turns Unknown has its Pods marked not Ready (their Ready
// condition False), so that the endpoints controller and the workload controllers stop counting
// them (k8s: pkg/controller/util/node/controller_utils.go MarkPodsNotReady, called from
// monitorNodeHealth when Ready leaves True).
// SIMULATION differences: no taints are written (taint-based eviction and the NoSchedule
// condition taints are computed where they matter, scheduling.ts effectiveTaints), pods are not
// evicted (no NoExecute taint manager: a Pod on an Unknown node stays there, not Ready), no zone
// disruption modes.
import type { StoredObject } from "../store.js";
import { rfc3339 } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";

export interface NodeLifecycleConfig {
  // Milliseconds on the store's clock, already multiplied by the time scale.
  /** --node-monitor-grace-period. */
  gracePeriodMs: number;
  /** --node-startup-grace-period. */
  startupGracePeriodMs: number;
  /** --node-monitor-period: the time between passes. */
  monitorPeriodMs: number;
}

export const DEFAULT_NODE_MONITOR_GRACE_MS = 50_000;
export const DEFAULT_NODE_STARTUP_GRACE_MS = 60_000;
export const DEFAULT_NODE_MONITOR_PERIOD_MS = 5_000;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

interface Health {
  /** When this controller last heard from the kubelet (store clock, ms). */
  probe: number;
  ready?: Condition;
  leaseRenew?: number;
}

// k8s: node_lifecycle_controller.go tryUpdateNodeHealth nodeConditionTypes (NetworkUnavailable
// is left alone: it is managed by the network plugin).
const MONITORED = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

function conditionsOf(node: StoredObject): Condition[] {
  return (((node.status ?? {}) as { conditions?: Condition[] }).conditions ?? []).map((c) => ({
    ...c,
  }));
}

export function startNodeLifecycle(ctx: ControllerContext, cfg: NodeLifecycleConfig): StopFn {
  const { store, log } = ctx;
  const health = new Map<string, Health>();

  function leaseRenewTime(name: string): number | undefined {
    const lease = store.get({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      namespace: "kube-node-lease",
      name,
    });
    const t = (lease?.spec as { renewTime?: string } | undefined)?.renewTime;
    const ms = t ? Date.parse(t) : NaN;
    return Number.isNaN(ms) ? undefined : ms;
  }

  function tryUpdateNodeHealth(node: StoredObject): void {
    const name = node.metadata.name;
    const now = store.now().getTime();
    const conditions = conditionsOf(node);
    const ready = conditions.find((c) => c.type === "Ready");
    const createdAt = node.metadata.creationTimestamp as string | undefined;
    const created = Date.parse(createdAt ?? "") || now;
    const grace = ready ? cfg.gracePeriodMs : cfg.startupGracePeriodMs;
    const saved = health.get(name);
    let h: Health;
    if (!saved) {
      // "Missing timestamp for Node. Assuming now as a timestamp"; a node that never posted
      // status counts from its creation.
      h = { probe: ready ? now : created, ...(ready ? { ready } : {}) };
    } else if (!saved.ready !== !ready) {
      h = { probe: now, ...(ready ? { ready } : {}) };
    } else if (saved.ready && ready && saved.ready.lastHeartbeatTime !== ready.lastHeartbeatTime) {
      h = { probe: now, ready };
    } else {
      h = { ...saved, ...(ready ? { ready } : {}) };
    }
    if (saved?.leaseRenew !== undefined) h.leaseRenew = saved.leaseRenew;
    // "Always update the probe time if node lease is renewed."
    const renew = leaseRenewTime(name);
    if (renew !== undefined && (h.leaseRenew === undefined || h.leaseRenew < renew)) {
      h.leaseRenew = renew;
      h.probe = now;
    }
    health.set(name, h);
    if (now <= h.probe + grace) return;

    const stamp = rfc3339(new Date(now));
    let changed = false;
    for (const type of MONITORED) {
      const c = conditions.find((x) => x.type === type);
      if (!c) {
        conditions.push({
          type,
          status: "Unknown",
          reason: "NodeStatusNeverUpdated",
          message: "Kubelet never posted node status.",
          lastHeartbeatTime: createdAt ?? stamp,
          lastTransitionTime: stamp,
        });
        changed ||= type === "Ready";
      } else if (c.status !== "Unknown") {
        c.status = "Unknown";
        c.reason = "NodeStatusUnknown";
        c.message = "Kubelet stopped posting node status.";
        c.lastTransitionTime = stamp;
        changed ||= type === "Ready";
      }
    }
    // Written only when the Ready condition changed (the other conditions ride along).
    if (!changed) return;
    try {
      const written = store.update(
        { ...node, status: { ...(node.status ?? {}), conditions } },
        { subresource: "status" },
      );
      health.set(name, { ...h, ready: conditionsOf(written).find((c) => c.type === "Ready")! });
      markPodsNotReady(name);
      log(
        `node-lifecycle-controller: node ${name} hasn't been updated for ${now - h.probe} ms: Ready is Unknown`,
      );
    } catch (e) {
      // A conflict: the kubelet (or another writer) got there first; the next pass looks again.
      if ((e as { code?: number }).code !== 409 && (e as { code?: number }).code !== 404) {
        log(`node-lifecycle-controller: error updating node ${name}: ${(e as Error).message}`);
      }
    }
  }

  /** MarkPodsNotReady: the Ready condition of every Pod bound to the node set False. */
  function markPodsNotReady(nodeName: string): void {
    for (const pod of store.list("v1", "Pod", { fieldSelector: `spec.nodeName=${nodeName}` })) {
      const status = (pod.status ?? {}) as { conditions?: { type: string; status: string }[] };
      const conditions = status.conditions ?? [];
      if (!conditions.some((c) => c.type === "Ready" && c.status === "True")) continue;
      const next = conditions.map((c) =>
        c.type === "Ready"
          ? { ...c, status: "False", lastTransitionTime: rfc3339(store.now()) }
          : c,
      );
      try {
        store.update(
          { ...pod, status: { ...status, conditions: next } },
          { subresource: "status" },
        );
      } catch (e) {
        log(
          `node-lifecycle-controller: marking pod ${pod.metadata.name} not Ready: ${(e as Error).message}`,
        );
      }
    }
  }

  function monitorNodeHealth(): void {
    const nodes = store.list("v1", "Node");
    const names = new Set(nodes.map((n) => n.metadata.name));
    for (const k of [...health.keys()]) if (!names.has(k)) health.delete(k);
    for (const n of nodes) {
      try {
        tryUpdateNodeHealth(n);
      } catch (e) {
        log(`node-lifecycle-controller: ${n.metadata.name}: ${(e as Error).message}`);
      }
    }
  }

  monitorNodeHealth();
  const timer = setInterval(monitorNodeHealth, Math.max(20, cfg.monitorPeriodMs));
  timer.unref();
  return () => clearInterval(timer);
}
