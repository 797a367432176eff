// SIMULATION (test double). The kubelet's intervals, with the Kubernetes value each one stands
// for. Tests shrink them all at once with `timeScale` (0.05 makes a 10 s heartbeat 500 ms);
// no interval goes below `MIN_INTERVAL_MS` so a tiny scale cannot spin a loop.

export const MIN_INTERVAL_MS = 20;

/**
 * The scale test nodes run at unless a test asks for another: 4 times faster than a real
 * kubelet (a 10 s heartbeat is 2.5 s). Faster costs CPU the whole time a cluster stands: an idle
 * three-node test cluster used 23 CPU seconds a minute at 0.05 and 5.4 at 0.25 (measured on the
 * 2-core CI machine), and the suite runs several clusters at once.
 */
export const TEST_TIME_SCALE = 0.25;

export interface KubeletTiming {
  /** The factor every scaled interval was multiplied by (passed on to simulated controllers). */
  timeScale: number;
  /** How often the static pod folder is read besides watching it. The kubelet reads it every
   * 20 s (fileCheckFrequency) and watches it with inotify (pkg/kubelet/config/file_linux.go), so
   * changes are seen at once: the simulation watches it too (folder-changes.ts), with this poll
   * for what a watch misses. Not scaled. */
  staticPodPollMs: number;
  /** nodeStatusUpdateFrequency, 10 s (pkg/kubelet/apis/config/v1beta1/defaults.go). */
  nodeStatusUpdateMs: number;
  /** nodeStatusReportFrequency, 5 m: a status PATCH is sent at least this often. */
  nodeStatusReportMs: number;
  /** Node registration retry: 100 ms doubling up to 7 s (kubelet_node_status.go registerWithAPIServer). */
  registerInitialMs: number;
  registerMaxMs: number;
  /** Node lease renewal: 0.25 × leaseDurationSeconds 40 s (pkg/kubelet/nodelease). */
  leaseRenewMs: number;
  /** Certificate manager: backoff 2 s ×2, 5 steps, then every 32 s
   * (client-go util/certificate/certificate_manager.go Start). */
  certBackoffInitialMs: number;
  certBackoffSteps: number;
  certPollMs: number;
  /** certificateWaitTimeout, 15 m: how long one rotation waits for its CSR to be signed. */
  certificateWaitMs: number;
  /** How often a pending CSR is read back while waiting for approval (client-go watches it). */
  csrPollMs: number;
  /** Container restart backoff: 10 s doubling up to 300 s (pkg/kubelet/kubelet.go backOffPeriod,
   * MaxContainerBackOff). */
  crashLoopInitialMs: number;
  crashLoopMaxMs: number;
  /** kubelet.service Restart=always, RestartSec=10 (kubernetes/release kubelet.service). */
  serviceRestartMs: number;
  /** Grace before SIGKILL when a container is stopped (terminationGracePeriodSeconds 30). */
  terminationGraceMs: number;
}

export function kubeletTiming(timeScale = 1): KubeletTiming {
  const s = (ms: number) => Math.max(MIN_INTERVAL_MS, Math.round(ms * timeScale));
  return {
    timeScale,
    staticPodPollMs: 1_000,
    nodeStatusUpdateMs: s(10_000),
    nodeStatusReportMs: s(300_000),
    registerInitialMs: s(100),
    registerMaxMs: s(7_000),
    leaseRenewMs: s(10_000),
    certBackoffInitialMs: s(2_000),
    certBackoffSteps: 5,
    certPollMs: s(32_000),
    certificateWaitMs: s(15 * 60_000),
    csrPollMs: s(1_000),
    crashLoopInitialMs: s(10_000),
    crashLoopMaxMs: s(300_000),
    serviceRestartMs: s(10_000),
    terminationGraceMs: s(30_000),
  };
}

/** setTimeout's longest delay: a longer one fires at once (Node: TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Resolves after `ms` (any length: a certificate rotation waits months) or on abort. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const end = Date.now() + ms;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      timer = setTimeout(tick, Math.min(MAX_TIMER_MS, Math.max(0, end - Date.now())));
    };
    function tick() {
      if (Date.now() >= end) done();
      else arm();
    }
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
    arm();
  });
