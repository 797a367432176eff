// SIMULATION (test double). kube-controller-manager's leader election (--leader-elect, true by
// default and set by kubeadm): of all controller managers of a cluster, only the holder of the
// Lease kube-system/kube-controller-manager runs the controllers. Several simulated controller
// managers share one store (stacked control planes on one etcd); without this they would all
// allocate node CIDRs at once.
// k8s: staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go (acquire: retry every
// RetryPeriod with jitter 1.2; tryAcquireOrRenew: a record held by another is respected until
// LeaseDurationSeconds after this candidate last saw it change (observedTime, never the remote
// clock); acquireTime and leaderTransitions change with the holder; renew: leadership is lost
// after RenewDeadline without a successful renewal; release: holderIdentity "",
// leaseDurationSeconds 1), resourcelock/leaselock.go (the Lease fields),
// staging/src/k8s.io/component-base/config/v1alpha1/defaults.go (15 s, 10 s, 2 s),
// cmd/kube-controller-manager/app/controllermanager.go (identity "<hostname>_<uuid>", lease
// name kube-controller-manager in kube-system).
// SIMULATION differences: losing the lease stops the controllers and campaigns again (the real
// process exits and is restarted by the kubelet); a graceful stop releases the lease so that a
// restarted simulated controller manager does not wait a lease duration.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { StoredObject } from "../store.js";
import type { ControllerContext, StopFn } from "./context.js";

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  /** --leader-elect-lease-duration, ms (unscaled: written to the Lease in seconds). */
  leaseDurationMs: number;
  /** --leader-elect-renew-deadline, ms. */
  renewDeadlineMs: number;
  /** --leader-elect-retry-period, ms. */
  retryPeriodMs: number;
  /** Simulated time: every duration is multiplied by it when waited for. */
  timeScale: number;
}

export const DEFAULT_LEADER_ELECTION = {
  namespace: "kube-system",
  name: "kube-controller-manager",
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(d: Date): string {
  return d.toISOString().replace(/Z$/, "000Z");
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/**
 * Runs `lead` while this candidate holds the lease; the StopFn it returns is called when the
 * lease is lost or the elector stops.
 */
export function runWithLeaderElection(
  ctx: ControllerContext,
  cfg: LeaderElectionConfig,
  lead: () => StopFn,
): StopFn {
  const { store, log } = ctx;
  const scaled = (ms: number) => Math.max(10, ms * cfg.timeScale);
  const key = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    namespace: cfg.namespace,
    name: cfg.name,
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let stopLeading: StopFn | undefined;
  let lastRenew = 0;
  // What this candidate last saw of the record, and when (its own clock).
  let observed = "";
  let observedAt = 0;
  let observedDurationS = 0;

  function tryAcquireOrRenew(): boolean {
    const now = store.now();
    const lease = store.get<StoredObject & { spec?: LeaseSpec }>(key);
    const wantSeconds = Math.round(cfg.leaseDurationMs / 1000);
    if (!lease) {
      store.create({
        apiVersion: key.apiVersion,
        kind: key.kind,
        metadata: { name: cfg.name, namespace: cfg.namespace },
        spec: {
          holderIdentity: cfg.identity,
          leaseDurationSeconds: wantSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      });
      observedAt = Date.now();
      return true;
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify(spec);
    if (record !== observed) {
      observed = record;
      observedAt = Date.now();
      observedDurationS = spec.leaseDurationSeconds ?? 0;
    }
    const holder = spec.holderIdentity ?? "";
    const mine = holder === cfg.identity;
    if (holder !== "" && !mine && Date.now() < observedAt + scaled(observedDurationS * 1000)) {
      return false;
    }
    const next: LeaseSpec = {
      holderIdentity: cfg.identity,
      leaseDurationSeconds: wantSeconds,
      acquireTime: mine && spec.acquireTime ? spec.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
    };
    // The update carries the resourceVersion read: a rival's write in between is a conflict.
    const written = store.update<StoredObject & { spec?: LeaseSpec }>({ ...lease, spec: next });
    observed = JSON.stringify(written.spec ?? {});
    observedAt = Date.now();
    observedDurationS = wantSeconds;
    return true;
  }

  function attempt(): boolean {
    try {
      return tryAcquireOrRenew();
    } catch {
      return false; // conflict, or the store cannot reach etcd: try again next period
    }
  }

  function schedule(ms: number, f: () => void): void {
    if (stopped) return;
    timer = setTimeout(f, ms);
    timer.unref();
  }

  function campaign(): void {
    if (stopped) return;
    if (attempt()) {
      log(`leaderelection: ${cfg.identity} became leader of ${cfg.namespace}/${cfg.name}`);
      lastRenew = Date.now();
      try {
        stopLeading = lead();
      } catch (e) {
        // The real process would exit and be restarted; campaign again (as the holder).
        log(`leaderelection: controllers failed to start: ${(e as Error).message}`);
        schedule(scaled(cfg.retryPeriodMs), campaign);
        return;
      }
      schedule(scaled(cfg.retryPeriodMs), renew);
      return;
    }
    // wait.JitterUntil(RetryPeriod, JitterFactor 1.2)
    schedule(scaled(cfg.retryPeriodMs) * (1 + Math.random() * 1.2), campaign);
  }

  function renew(): void {
    if (stopped) return;
    if (attempt()) lastRenew = Date.now();
    else if (Date.now() - lastRenew > scaled(cfg.renewDeadlineMs)) {
      log(`leaderelection: ${cfg.identity} lost the lease ${cfg.namespace}/${cfg.name}`);
      stopLeading?.();
      stopLeading = undefined;
      schedule(scaled(cfg.retryPeriodMs), campaign);
      return;
    }
    schedule(scaled(cfg.retryPeriodMs), renew);
  }

  campaign();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (!stopLeading) return;
    stopLeading();
    stopLeading = undefined;
    if (!store.healthy) return;
    try {
      const lease = store.get<StoredObject & { spec?: LeaseSpec }>(key);
      if (lease?.spec?.holderIdentity !== cfg.identity) return;
      const now = microTime(store.now());
      store.update({
        ...lease,
        spec: {
          holderIdentity: "",
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: lease.spec.leaseTransitions ?? 0,
        },
      });
    } catch {
      // Best effort: the next candidate waits for the lease to expire instead.
    }
  };
}
