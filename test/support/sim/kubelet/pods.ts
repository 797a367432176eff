import { ApiStatusError, type SimApiClient } from "./api-client.js";
import type { DesiredPod, PodStatus } from "./runtime.js";
import { CONFIG_MIRROR, type PodManifest } from "./static-pods.js";

// SIMULATION (test double). The kubelet's Pods from the API server (its "api" pod source): the
// Pods bound to this node that are not mirror pods are run by the container runtime, their
// status is written back (pods/<name>/status) when it changes, and a Pod the API server marked
// for deletion (deletionTimestamp) is stopped and then deleted with grace 0 (UID precondition),
// which removes it. k8s: pkg/kubelet/config/apiserver.go (the source: spec.nodeName=<node>),
// pkg/kubelet/kubelet_pods.go (generateAPIPodStatus: phase, hostIP(s), podIP(s), startTime,
// qosClass), pkg/kubelet/status/generate.go (PodReadyToStartContainers, Initialized,
// ContainersReady, Ready: GeneratePodReadyCondition), pkg/kubelet/status/status_manager.go
// (syncPod: the PATCH; canBeDeleted/the final delete with GracePeriodSeconds 0 and the Pod's UID).
// SIMULATION LIMITS: the list is polled each sync (every second) instead of watched; a stopping
// Pod's terminated state is not reported before its delete; readiness probes are not run: a
// container is Ready as soon as it runs (a netexec server listens before it counts as running).

export interface ApiPod extends PodManifest {
  metadata: PodManifest["metadata"] & { uid: string; deletionTimestamp?: string };
}

const isMirror = (p: ApiPod) => p.metadata.annotations?.[CONFIG_MIRROR] !== undefined;
const keyOf = (p: ApiPod) => `${p.metadata.namespace ?? "default"}/${p.metadata.name}`;
const terminal = (p: ApiPod) => {
  const phase = (p.status as { phase?: string } | undefined)?.phase;
  return phase === "Succeeded" || phase === "Failed";
};

/** The runtime's work for the Pods of the API: every live Pod, keyed "<ns>/<name>", hashed by UID. */
export function desiredApiPods(pods: ApiPod[]): DesiredPod[] {
  return pods
    .filter((p) => !isMirror(p) && !terminal(p) && !p.metadata.deletionTimestamp)
    .map((p) => ({
      key: keyOf(p),
      uid: p.metadata.uid,
      hash: p.metadata.uid,
      pod: p,
      apiPod: true,
    }));
}

/** The Pods marked for deletion whose containers no longer run: the kubelet deletes them. */
export function podsToFinish(pods: ApiPod[], statuses: PodStatus[]): ApiPod[] {
  const running = new Set(statuses.map((s) => s.uid));
  return pods.filter(
    (p) => !isMirror(p) && p.metadata.deletionTimestamp && !running.has(p.metadata.uid),
  );
}

/** v1.PodStatus of a Pod from the API as the runtime reports it (undefined: not started yet). */
export function apiPodStatus(
  pod: ApiPod,
  s: PodStatus | undefined,
  hostIP: string,
): Record<string, unknown> {
  const containers = s?.containers ?? [];
  const running = containers.length > 0 && containers.every((c) => !!c.state.running);
  const ready = running && containers.every((c) => c.ready);
  const since = s?.startTime ?? null;
  const cond = (type: string, ok: boolean) => ({
    type,
    status: ok ? "True" : "False",
    lastProbeTime: null,
    lastTransitionTime: since,
    ...(ok || type === "PodReadyToStartContainers" || type === "Initialized"
      ? {}
      : {
          reason: "ContainersNotReady",
          message: `containers with unready status: [${pod.spec.containers.map((c) => c.name).join(" ")}]`,
        }),
  });
  // SIMULATION LIMIT: without a Pod IP of its own (no range, or hostNetwork) the node's IP.
  const podIP = s?.podIP ?? hostIP;
  return {
    phase: running ? "Running" : "Pending",
    conditions: [
      cond("PodReadyToStartContainers", !!s),
      cond("Initialized", true),
      cond("Ready", ready),
      cond("ContainersReady", ready),
      { type: "PodScheduled", status: "True", lastProbeTime: null, lastTransitionTime: since },
    ],
    hostIP,
    hostIPs: [{ ip: hostIP }],
    ...(s ? { podIP, podIPs: [{ ip: podIP }], startTime: s.startTime } : {}),
    containerStatuses: containerStatuses(containers),
  };
}

/** v1.ContainerStatus of each container the runtime reports (static and API Pods alike). */
export function containerStatuses(containers: PodStatus["containers"]): Record<string, unknown>[] {
  return containers.map((c) => ({
    name: c.name,
    image: c.image,
    imageID: "",
    ...(c.containerID ? { containerID: c.containerID } : {}),
    ready: c.ready,
    started: c.started,
    restartCount: c.restartCount,
    state: c.state,
    lastState: c.lastState ?? {},
  }));
}

/** The api pod source of one kubelet: the last list, and what it reported. */
export class ApiPodSource {
  private pods: ApiPod[] = [];
  private listed = false;
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly nodeName: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Whether the API server answered since this kubelet started (sourcesReady). */
  get ready(): boolean {
    return this.listed;
  }

  /** Lists this node's Pods; on failure the last list stands. */
  async refresh(client: SimApiClient): Promise<void> {
    try {
      const list = await client.call<{ items?: ApiPod[] }>(
        "GET",
        `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${this.nodeName}`)}`,
      );
      this.pods = (list.items ?? []).filter((p) => p.spec.nodeName === this.nodeName);
      this.listed = true;
      // What was reported of Pods that are gone is forgotten.
      const uids = new Set(this.pods.map((p) => p.metadata.uid));
      for (const uid of this.reported.keys()) if (!uids.has(uid)) this.reported.delete(uid);
    } catch (e) {
      this.log(`Failed listing this node's pods: ${(e as Error).message}`);
    }
  }

  desired(): DesiredPod[] {
    return desiredApiPods(this.pods);
  }

  /** Status PATCHes for changed Pods, then the final deletes of stopped ones. */
  async report(client: SimApiClient, statuses: PodStatus[], hostIP: string): Promise<void> {
    const byUID = new Map(statuses.map((s) => [s.uid, s]));
    for (const d of this.desired()) {
      const pod = d.pod as ApiPod;
      const status = apiPodStatus(pod, byUID.get(pod.metadata.uid), hostIP);
      const text = JSON.stringify(status);
      if (this.reported.get(pod.metadata.uid) === text) continue;
      try {
        await client.call(
          "PATCH",
          `${podPath(pod)}/status`,
          { status },
          "application/strategic-merge-patch+json",
        );
        this.reported.set(pod.metadata.uid, text);
      } catch (e) {
        this.log(`Failed to update status for pod ${d.key}: ${(e as Error).message}`);
      }
    }
    for (const pod of podsToFinish(this.pods, statuses)) {
      try {
        await client.call("DELETE", podPath(pod), {
          apiVersion: "v1",
          kind: "DeleteOptions",
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        });
        this.log(`Pod ${keyOf(pod)} stopped: deleted from the API`);
      } catch (e) {
        if (!(e instanceof ApiStatusError && (e.status === 404 || e.status === 409))) {
          this.log(`Failed deleting pod ${keyOf(pod)}: ${(e as Error).message}`);
        }
      }
      this.reported.delete(pod.metadata.uid);
    }
  }
}

const podPath = (p: ApiPod) =>
  `/api/v1/namespaces/${p.metadata.namespace ?? "default"}/pods/${p.metadata.name}`;
