import { formatGoDuration } from "../../config/duration.js";
import { MANIFESTS_DIR } from "../../config/paths.js";
import { pauseImage } from "../../manifests/kubelet.js";
import { poll, PollTimeoutError } from "../../kube/poll.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import {
  makeCheck,
  runChecks,
  type Check,
  type PreflightOutput,
} from "../../node/preflight/checks.js";
import type { Logger } from "../../workflow/phase.js";
import type { UpgradeData } from "./data.js";
import { manifestFile } from "./paths.js";

// kubeadm's CheckClusterHealth (phases/upgrade/health.go, v1.30+ with the skip of
// kubernetes/kubernetes#124503 and activeDeadlineSeconds of #127333): three preflight checks
// run through the preflight runner, so --ignore-preflight-errors applies to each by name.
//   CreateJob              a Job running the pause image must complete (skipped when no Node is
//                          schedulable);
//   ControlPlaneNodesReady every Node labelled node-role.kubernetes.io/control-plane is Ready;
//   StaticPodManifest      this node has the four static Pod manifests.

const JOB_PREFIX = "upgrade-health-check";
const CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane";

/** The Job kubeadm's createJob posts (generateName; the API server picks the suffix). */
export function healthCheckJob(image: string, timeoutSeconds: number): KubeObject {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    // No name: the API server completes generateName (an empty name is an unset one).
    metadata: { name: "", generateName: `${JOB_PREFIX}-`, namespace: "kube-system" },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: timeoutSeconds,
      ttlSecondsAfterFinished: timeoutSeconds + 5,
      template: {
        spec: {
          restartPolicy: "Never",
          securityContext: { runAsUser: 999, runAsGroup: 999, runAsNonRoot: true },
          tolerations: [{ key: CONTROL_PLANE_LABEL, effect: "NoSchedule" }],
          containers: [{ name: JOB_PREFIX, image, args: ["-v"] }],
        },
      },
    },
  };
}

function isComplete(job: KubeObject): boolean {
  const conditions = (
    job.status as { conditions?: { type: string; status?: string }[] } | undefined
  )?.conditions;
  return (conditions ?? []).some((c) => c.type === "Complete");
}

/** What the health checks read (plan has no full UpgradeData). */
export type HealthInput = Pick<
  UpgradeData,
  "host" | "cfg" | "release" | "dryRun" | "ignorePreflightErrors" | "timing" | "client"
>;

async function createJob(data: HealthInput, client: KubeClient, log: Logger) {
  const timeoutMs = data.timing.createJobTimeoutMs;
  const opts = { timeoutMs, intervalMs: 1000 };
  const schedulable = await poll(
    () => client.list("v1", "Node", { fieldSelector: "spec.unschedulable=false" }),
    { ...opts, what: "the schedulable Nodes" },
  ).catch((e: unknown) => {
    throw new Error("could not check if there is at least one Node that can schedule a test Pod", {
      cause: e,
    });
  });
  if (schedulable.length === 0) {
    log.warn(
      'The preflight check "CreateJob" was skipped because there are no schedulable Nodes in the cluster.',
    );
    return;
  }
  const image = pauseImage(data.cfg.cluster.imageRepository, data.release);
  const job = healthCheckJob(image, Math.round(timeoutMs / 1000));
  const created = await poll(() => client.create(job), {
    ...opts,
    what: `a Job with the prefix "${JOB_PREFIX}"`,
  }).catch((e: unknown) => {
    throw new Error(
      `could not create a Job with the prefix "${JOB_PREFIX}" in the namespace "kube-system": ${(e as PollTimeoutError).lastError instanceof Error ? ((e as PollTimeoutError).lastError as Error).message : (e as Error).message}`,
      { cause: e },
    );
  });
  const name = created.metadata.name;
  let last = "no condition of type Complete";
  try {
    await poll(
      async () => {
        const got = await client.get({
          apiVersion: "batch/v1",
          kind: "Job",
          namespace: "kube-system",
          name,
        });
        return isComplete(got) ? true : undefined;
      },
      { ...opts, what: `the Job ${name} to complete` },
    );
  } catch (e) {
    if (e instanceof PollTimeoutError && e.lastError instanceof Error) last = e.lastError.message;
    throw new Error(
      `Job "${name}" in the namespace "kube-system" did not complete in ${formatGoDuration(timeoutMs)}: ${last}`,
      { cause: e },
    );
  }
}

function notReady(nodes: readonly KubeObject[]): string[] {
  return nodes
    .filter((n) =>
      (
        (n.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ??
        []
      ).some((c) => c.type === "Ready" && c.status !== "True"),
    )
    .map((n) => n.metadata.name);
}

async function controlPlaneNodesReady(client: KubeClient): Promise<void> {
  let nodes: KubeObject[];
  try {
    nodes = await client.list("v1", "Node", { labelSelector: `${CONTROL_PLANE_LABEL}=` });
  } catch (e) {
    throw new Error(
      `could not list nodes labeled with "${CONTROL_PLANE_LABEL}": ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
  const names = notReady(nodes);
  if (names.length > 0) {
    throw new Error(`there are NotReady control-planes in the cluster: [${names.join(" ")}]`);
  }
}

async function staticPodManifests(data: HealthInput): Promise<void> {
  const paths = (["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const).map(
    (c) => manifestFile(MANIFESTS_DIR, c),
  );
  const present = await Promise.all(paths.map((p) => data.host.exists(p)));
  const missing = paths.filter((_, i) => !present[i]);
  if (missing.length > 0) {
    throw new Error(
      `The control plane seems to be Static Pod-hosted, but some of the manifests don't seem to exist on disk. This probably means you're running 'kubeadm upgrade' on a remote machine, which is not supported for a Static Pod-hosted cluster. Manifest files not found: [${missing.join(" ")}]`,
    );
  }
}

/** An async function as a preflight check: its error is the check's one error. */
function healthCheck(name: string, run: () => Promise<void>): Check {
  return makeCheck(name, async () => {
    try {
      await run();
      return { warnings: [], errors: [] };
    } catch (e) {
      return { warnings: [], errors: [(e as Error).message] };
    }
  });
}

/** CheckClusterHealth. In a dry run the Job is only announced, as kubeadm's dry-run client does. */
export async function checkClusterHealth(
  data: HealthInput,
  out: PreflightOutput,
  log: Logger,
): Promise<void> {
  log.info("[upgrade] Running cluster health checks");
  const client = await data.client();
  // The last two only read and print nothing: asked while the Job runs, their verdicts taken in
  // kubeadm's order.
  const nodesReady = controlPlaneNodesReady(client);
  const manifests = staticPodManifests(data);
  for (const p of [nodesReady, manifests]) p.catch(() => {});
  const checks = [
    healthCheck("CreateJob", () => {
      if (!data.dryRun) return createJob(data, client, log);
      log.info(
        `[upgrade/health] Would create the Job with the prefix "${JOB_PREFIX}" in namespace "kube-system" and wait until it completes`,
      );
      return Promise.resolve();
    }),
    healthCheck("ControlPlaneNodesReady", () => nodesReady),
    healthCheck("StaticPodManifest", () => manifests),
  ];
  await runChecks(checks, data.ignorePreflightErrors, out);
}
