// SIMULATION (test double). The controllers that act for the whole cluster — nodeipam
// (node-ipam.ts), nodelifecycle (node-lifecycle.ts), deployment and daemonset (workloads.ts),
// replicaset (replicasets.ts), endpoint (endpoints.ts), podgc (pod-gc.ts),
// job with ttl-after-finished (jobs.ts), disruption (disruption.ts) —
// started only while this controller manager holds the kube-system/kube-controller-manager Lease
// (--leader-elect, true by default and set by kubeadm; leader-election.ts), as
// kube-controller-manager runs all of its controllers. Durations are multiplied by the time scale.
// k8s: cmd/kube-controller-manager/app/controllermanager.go (Run: leaderelection.RunOrDie with
// OnStartedLeading starting the controllers), cmd/kube-controller-manager/app/core.go
// (newNodeIpamController fails the start on a bad --cluster-cidr).
import type { FakeControllersOptions } from "./index.js";
import type { ControllerContext, StopFn } from "./context.js";
import {
  DEFAULT_LEADER_ELECTION,
  defaultIdentity,
  runWithLeaderElection,
} from "./leader-election.js";
import { nodeIpamConfig, startNodeIpam } from "./node-ipam.js";
import {
  DEFAULT_NODE_MONITOR_GRACE_MS,
  DEFAULT_NODE_MONITOR_PERIOD_MS,
  DEFAULT_NODE_STARTUP_GRACE_MS,
  startNodeLifecycle,
} from "./node-lifecycle.js";
import { startDisruptionController } from "./disruption.js";
import { startJobController } from "./jobs.js";
import { startEndpointsController } from "./endpoints.js";
import { startPodGC } from "./pod-gc.js";
import { startReplicaSetController } from "./replicasets.js";
import { startDaemonSetController, startDeploymentController } from "./workloads.js";

export function startClusterControllers(
  ctx: ControllerContext,
  opts: FakeControllersOptions,
  on: (name: string) => boolean,
): StopFn {
  const scale = opts.timeScale ?? 1;
  // Validated before anything starts: kube-controller-manager refuses to start.
  const ipam = on("nodeipam") ? nodeIpamConfig(opts) : undefined;
  const lead = (): StopFn => {
    const stops: StopFn[] = [];
    try {
      if (ipam) stops.push(startNodeIpam(ctx, ipam));
      if (on("nodelifecycle")) {
        stops.push(
          startNodeLifecycle(ctx, {
            gracePeriodMs: (opts.nodeMonitorGracePeriod ?? DEFAULT_NODE_MONITOR_GRACE_MS) * scale,
            startupGracePeriodMs:
              (opts.nodeStartupGracePeriod ?? DEFAULT_NODE_STARTUP_GRACE_MS) * scale,
            monitorPeriodMs: (opts.nodeMonitorPeriod ?? DEFAULT_NODE_MONITOR_PERIOD_MS) * scale,
          }),
        );
      }
      if (on("deployment")) stops.push(startDeploymentController(ctx, scale));
      if (on("replicaset")) stops.push(startReplicaSetController(ctx));
      if (on("endpoint")) stops.push(startEndpointsController(ctx));
      // --terminated-pod-gc-threshold's sweep runs every 20 s (gcCheckPeriod).
      if (on("podgc")) stops.push(startPodGC(ctx, 20_000 * scale));
      if (on("daemonset")) stops.push(startDaemonSetController(ctx));
      // job-controller and ttl-after-finished-controller in one (jobs.ts).
      if (on("job")) stops.push(startJobController(ctx, scale));
      if (on("disruption")) stops.push(startDisruptionController(ctx));
    } catch (e) {
      for (const s of stops) s();
      throw e;
    }
    return () => {
      for (const s of stops.splice(0)) s();
    };
  };
  if (!(opts.leaderElect ?? true)) return lead();
  const le = opts.leaderElection ?? {};
  return runWithLeaderElection(
    ctx,
    {
      namespace: le.namespace ?? DEFAULT_LEADER_ELECTION.namespace,
      name: le.name ?? DEFAULT_LEADER_ELECTION.name,
      identity: opts.leaderElectionIdentity ?? defaultIdentity(),
      leaseDurationMs: le.leaseDurationMs ?? DEFAULT_LEADER_ELECTION.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs ?? DEFAULT_LEADER_ELECTION.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs ?? DEFAULT_LEADER_ELECTION.retryPeriodMs,
      timeScale: scale,
    },
    lead,
  );
}
