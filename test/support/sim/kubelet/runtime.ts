import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import type { FakeApiServer } from "../apiserver/index.js";
import {
  componentOf,
  ContainerLog,
  NotReadyToStart,
  startContainer,
  type RunningContainer,
} from "./containers.js";
import { readFaults } from "./faults.js";
import type { HostFiles } from "./host-files.js";
import { KubeProxyHolder } from "./kube-proxy.js";
import { addPodAddress, allocatePodIP, parsePodIPRange, removePodAddress } from "./pod-network.js";
import type { PodManifest } from "./static-pods.js";
import type { KubeletTiming } from "./timing.js";

// SIMULATION (test double). The container runtime of a simulated node, in place of containerd:
// the kubelet hands it the pods that should run; it starts, restarts (CrashLoopBackOff: 10 s
// doubling to 5 m, pkg/kubelet/kubelet.go backOffPeriod / MaxContainerBackOff) and stops their
// containers, and reports their state. It can live in the kubelet's process (in-process tests)
// or in its own daemon (runtime-daemon.ts) so that, as with containerd, pods keep running while
// the kubelet is stopped or restarted — which `kubeadm init` does twice. Pods from the API
// server that are not hostNetwork get an address of their own here (pod-network.ts, the CNI
// plugin's part) and run the images containers.ts simulates (agnhost netexec) or nothing.

export interface DesiredPod {
  key: string;
  uid: string;
  hash: string;
  pod: PodManifest;
  /** A Pod from the API server (pods.ts), not a static pod. */
  apiPod?: boolean;
}

/** What the kubelet tells the runtime with each sync. */
export interface SyncOptions {
  /** Addresses for Pods that are not hostNetwork (pod-network.ts), "first-last". */
  podIPRange?: string;
  /**
   * Keep running API Pods missing from the list: the kubelet has not yet heard from the API
   * server since it started (k8s: kubelet.go HandlePodCleanups runs only once all pod sources
   * are ready — sourcesReady.AllReady).
   */
  keepApiPods?: boolean;
  /** Where the node's kubeconfig and addresses are: the runtime then runs kube-proxy (kube-proxy.ts). */
  kubeProxy?: { kubeconfig: string; nodeIPs: string[] };
}

export interface ContainerState {
  running?: { startedAt: string };
  waiting?: { reason: string; message?: string };
  terminated?: { exitCode: number; reason: string; finishedAt: string };
}

export interface ContainerStatus {
  name: string;
  image: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerState;
  lastState?: ContainerState;
  /** The container's log file on the machine (CRI format), for the simulated `crictl logs`. */
  logPath?: string;
}

export interface PodStatus {
  key: string;
  uid: string;
  hash: string;
  startTime: string;
  containers: ContainerStatus[];
  /** OS pid of a real process (etcd), for cleanup and tests. */
  pid?: number;
  /** The pod sandbox's ID as the CRI reports it (64 hex digits), for the simulated crictl. */
  sandboxId?: string;
  /** Stopped through the CRI (StopPodSandbox): its container does not run again. */
  stopped?: boolean;
  /** The Pod's own IP (pod-network.ts), when it has one. */
  podIP?: string;
}

export interface PodRuntime {
  /** Makes the running set equal `pods` and returns every pod's state. */
  sync(pods: DesiredPod[], opts?: SyncOptions): Promise<PodStatus[]>;
  /** Stops every container. */
  shutdown(): Promise<void>;
}

/** What a sandbox lookup by (a unique prefix of) its ID found. */
export type SandboxResult =
  { found: true; pod: PodStatus } | { found: false; reason: "not-found" | "ambiguous" | "running" };

/**
 * The CRI's sandbox calls the simulated crictl makes (ListPodSandbox, StopPodSandbox,
 * RemovePodSandbox: k8s.io/cri-api runtime/v1 api.proto). IDs may be unique prefixes, as
 * containerd resolves them.
 */
export interface SandboxRuntime {
  list(): Promise<PodStatus[]>;
  stopSandbox(id: string): Promise<SandboxResult>;
  /** Refused ("running") while the sandbox runs, unless `force` stops it first (crictl rmp -f). */
  removeSandbox(id: string, force: boolean): Promise<SandboxResult>;
}

interface Slot {
  desired: DesiredPod;
  startTime: string;
  log: ContainerLog;
  running?: RunningContainer;
  containerID?: string;
  state: ContainerState;
  lastState?: ContainerState;
  restartCount: number;
  backoffMs: number;
  nextStartAt: number;
  starting?: Promise<void>;
  /** Stopped through the CRI: not started again; the kubelet's next sync makes a new sandbox. */
  stopped?: boolean;
  /** The sandbox's IP and whether it is on the interface yet. */
  podIP?: string;
  addressed?: boolean;
}

export interface RuntimeOptions {
  files: HostFiles;
  timing: KubeletTiming;
  log: (line: string) => void;
  /** Folder of the node's fault file (faults.ts); none: no faults. */
  faultsDir?: string;
}

const now = () => new Date().toISOString();

/** A sandbox ID: 64 hex digits as containerd's, stable for one pod instance. */
function sandboxIdOf(desired: DesiredPod, startTime: string): string {
  return createHash("sha256").update(`${desired.key}\n${desired.uid}\n${startTime}`).digest("hex");
}

export class InProcessRuntime implements PodRuntime, SandboxRuntime {
  private readonly slots = new Map<string, Slot>();
  private apiStore: FakeApiServer["store"] | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  /** kube-proxy's NodePorts, run here as the kube-proxy Pod's container outlives the kubelet. */
  private readonly kubeProxy: KubeProxyHolder;

  constructor(private readonly o: RuntimeOptions) {
    this.kubeProxy = new KubeProxyHolder({
      files: o.files,
      log: o.log,
      syncMs: o.timing.staticPodPollMs,
    });
  }

  sync(pods: DesiredPod[], opts: SyncOptions = {}): Promise<PodStatus[]> {
    const next = this.queue.then(async () => {
      await this.kubeProxy.ensure(opts.kubeProxy);
      return this.reconcile(pods, opts);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  shutdown(): Promise<void> {
    const next = this.queue
      .then(() => this.kubeProxy.stop())
      .then(() => this.reconcile([]))
      .then(() => undefined);
    this.queue = next.catch(() => undefined);
    return next;
  }

  list(): Promise<PodStatus[]> {
    return this.serialized(() =>
      Promise.resolve([...this.slots.values()].map((s) => this.status(s))),
    );
  }

  stopSandbox(id: string): Promise<SandboxResult> {
    return this.serialized(async () => {
      const found = this.lookup(id);
      if (!found.slot) return { found: false, reason: found.reason };
      const slot = found.slot;
      // StopPodSandbox is idempotent (cri-api: "must not return an error if all relevant
      // resources have already been reclaimed").
      if (!slot.stopped) {
        await this.kill(slot, "sandbox stopped through the CRI");
        this.dropApiStore(slot);
        slot.stopped = true;
        slot.lastState = slot.state.running ? slot.state : slot.lastState;
        slot.state = { terminated: { exitCode: 0, reason: "Completed", finishedAt: now() } };
      }
      return { found: true, pod: this.status(slot) };
    });
  }

  removeSandbox(id: string, force: boolean): Promise<SandboxResult> {
    return this.serialized(async () => {
      const found = this.lookup(id);
      if (!found.slot) return { found: false, reason: found.reason };
      const slot = found.slot;
      if (!slot.stopped) {
        if (!force) return { found: false, reason: "running" };
        await this.kill(slot, "sandbox removed through the CRI");
        this.dropApiStore(slot);
        slot.stopped = true;
      }
      const status = this.status(slot);
      this.slots.delete(slot.desired.key);
      return { found: true, pod: status };
    });
  }

  /**
   * The API server's store (its etcd client, credentials and watch cache) outlives the kubelet's
   * restarts of its container here (containers.ts startApiServer). A sandbox stopped through the
   * CRI ends the kube-apiserver process for good, and with it everything it held in memory: the
   * next one reads its certificates and etcd afresh (after `kubeadm reset`, a new cluster's).
   */
  private dropApiStore(slot: Slot): void {
    if (componentOf(slot.desired.pod.spec.containers[0]!) !== "kube-apiserver") return;
    this.apiStore?.close();
    this.apiStore = undefined;
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The slot whose sandbox ID is `id` or starts with it (unique), as containerd's truncindex. */
  private lookup(id: string): { slot?: Slot; reason: "not-found" | "ambiguous" } {
    const matches = id
      ? [...this.slots.values()].filter((s) => sandboxIdOf(s.desired, s.startTime).startsWith(id))
      : [];
    if (matches.length === 1) return { slot: matches[0]!, reason: "not-found" };
    return { reason: matches.length > 1 ? "ambiguous" : "not-found" };
  }

  private async reconcile(pods: DesiredPod[], opts: SyncOptions = {}): Promise<PodStatus[]> {
    const wanted = new Map(pods.map((p) => [p.key, p]));
    // Removed or changed pods are killed first (a changed manifest is a new pod: the kubelet
    // kills the old one and starts the new one).
    for (const [key, slot] of [...this.slots]) {
      const want = wanted.get(key);
      if (!want && opts.keepApiPods && slot.desired.apiPod) continue;
      // A sandbox stopped through the CRI is never restarted: the kubelet makes a new one.
      if (!want || want.hash !== slot.desired.hash || slot.stopped) {
        await this.kill(slot, want ? "manifest changed" : "manifest removed");
        this.slots.delete(key);
      }
    }
    for (const pod of pods) {
      let slot = this.slots.get(pod.key);
      if (!slot) {
        slot = {
          desired: pod,
          startTime: now(),
          // pkg/kubelet/kuberuntime: /var/log/pods/<namespace>_<name>_<uid>/<container>/<n>.log
          log: new ContainerLog(
            this.o.files.real(
              join(
                "/var/log/pods",
                `${pod.pod.metadata.namespace}_${pod.pod.metadata.name}_${pod.uid}`,
                pod.pod.spec.containers[0]!.name,
                "0.log",
              ),
            ),
          ),
          state: { waiting: { reason: "ContainerCreating" } },
          restartCount: 0,
          backoffMs: 0,
          nextStartAt: 0,
        };
        const ip = this.podIPFor(pod, opts.podIPRange);
        if (ip) slot.podIP = ip;
        this.slots.set(pod.key, slot);
      }
      if (!slot.running && !slot.starting && Date.now() >= slot.nextStartAt) {
        slot.starting = this.start(slot).finally(() => (slot.starting = undefined));
      }
    }
    // Give quick starts a moment so the first report is not always "ContainerCreating".
    await Promise.race([
      Promise.all([...this.slots.values()].map((s) => s.starting ?? Promise.resolve())),
      new Promise((r) => setTimeout(r, 200)),
    ]);
    return [...this.slots.values()].map((s) => this.status(s));
  }

  /** The sandbox's IP from the range (the CNI plugin's IPAM): none for hostNetwork Pods. */
  private podIPFor(pod: DesiredPod, range: string | undefined): string | undefined {
    if (!pod.apiPod || pod.pod.spec.hostNetwork || !range) return undefined;
    const used = new Set([...this.slots.values()].flatMap((s) => (s.podIP ? [s.podIP] : [])));
    const ip = allocatePodIP(parsePodIPRange(range), used);
    if (!ip) this.o.log(`${pod.key}: no free address in ${range}`);
    return ip;
  }

  private async start(slot: Slot): Promise<void> {
    const { pod } = slot.desired;
    const container = pod.spec.containers[0]!;
    const faults = await readFaults(this.o.faultsDir);
    if (container.image && faults.unpullableImages?.includes(container.image)) {
      // pkg/kubelet/images/image_manager.go: ErrImagePull, then ImagePullBackOff with the
      // image back-off; the container never starts, so it counts no restart.
      const message = `Back-off pulling image "${container.image}"`;
      slot.state = { waiting: { reason: "ImagePullBackOff", message } };
      slot.nextStartAt = Date.now() + this.o.timing.crashLoopInitialMs;
      slot.log.line(`simulated container runtime: ${message}`);
      return;
    }
    try {
      if (slot.podIP && !slot.addressed) {
        await addPodAddress(slot.podIP);
        slot.addressed = true;
      }
      const running = await startContainer({
        pod,
        container,
        files: this.o.files,
        log: slot.log,
        apiStore: () => this.apiStore,
        setApiStore: (s) => (this.apiStore = s),
        runtimeLog: this.o.log,
        timeScale: this.o.timing.timeScale,
        ...(slot.desired.apiPod ? { apiPod: true } : {}),
        ...(slot.podIP ? { podIP: slot.podIP } : {}),
      });
      slot.running = running;
      slot.containerID = `simulated://${randomBytes(16).toString("hex")}`;
      slot.state = { running: { startedAt: now() } };
      this.o.log(`started ${slot.desired.key}${running.pid ? ` (pid ${running.pid})` : ""}`);
      void running.exited.then((exit) => {
        if (slot.running !== running) return; // stopped on purpose
        slot.running = undefined;
        this.crashed(slot, {
          terminated: { exitCode: exit.code ?? 1, reason: exit.reason, finishedAt: now() },
        });
        this.o.log(
          `${slot.desired.key} exited with code ${exit.code}; restarting in ${slot.backoffMs} ms`,
        );
      });
    } catch (e) {
      const message = (e as Error).message;
      if (e instanceof NotReadyToStart) {
        slot.state = { waiting: { reason: "ContainerCreating", message } };
        slot.nextStartAt = Date.now() + this.o.timing.staticPodPollMs;
        return;
      }
      slot.log.line(`simulated container runtime: start failed: ${message}`);
      this.o.log(`${slot.desired.key} failed to start: ${message}`);
      this.crashed(
        slot,
        { terminated: { exitCode: 1, reason: "Error", finishedAt: now() } },
        message,
      );
    }
  }

  private crashed(slot: Slot, last: ContainerState, message?: string) {
    const t = this.o.timing;
    slot.lastState = last;
    slot.restartCount++;
    slot.backoffMs = slot.backoffMs
      ? Math.min(slot.backoffMs * 2, t.crashLoopMaxMs)
      : t.crashLoopInitialMs;
    slot.nextStartAt = Date.now() + slot.backoffMs;
    slot.state = {
      waiting: {
        reason: "CrashLoopBackOff",
        message: `back-off ${Math.round(slot.backoffMs / 1000)}s restarting failed container${message ? `: ${message}` : ""}`,
      },
    };
  }

  private async kill(slot: Slot, why: string): Promise<void> {
    await slot.starting;
    const running = slot.running;
    slot.running = undefined;
    if (running) {
      this.o.log(`stopping ${slot.desired.key}: ${why}`);
      await running.stop(this.o.timing.terminationGraceMs);
    }
    if (slot.addressed && slot.podIP) await removePodAddress(slot.podIP);
    slot.addressed = false;
    await slot.log.close();
  }

  private status(s: Slot): PodStatus {
    const c = s.desired.pod.spec.containers[0]!;
    const running = !!s.state.running;
    return {
      key: s.desired.key,
      uid: s.desired.uid,
      hash: s.desired.hash,
      startTime: s.startTime,
      ...(s.running?.pid ? { pid: s.running.pid } : {}),
      sandboxId: sandboxIdOf(s.desired, s.startTime),
      ...(s.stopped ? { stopped: true } : {}),
      ...(s.podIP ? { podIP: s.podIP } : {}),
      containers: [
        {
          name: c.name,
          image: c.image ?? "",
          ...(s.containerID ? { containerID: s.containerID } : {}),
          // SIMULATION LIMIT: probes are not run; a running container counts as ready.
          ready: running,
          started: running,
          restartCount: s.restartCount,
          state: s.state,
          ...(s.lastState ? { lastState: s.lastState } : {}),
          logPath: s.log.path,
        },
      ],
    };
  }
}
