import type { CollectionWatch, KubeClient, KubeObject, WatchEventType } from "../../kube/types.js";

// What the upgrade did to the workloads, counted from watches of Pods, Deployments and
// DaemonSets while the nodes change, each disruption tagged with the node steps running when it
// began (ReportRecorder.current): evictions (a Pod deleted with the DisruptionTarget condition the
// eviction API sets, reason EvictionByEvictionAPI: pkg/registry/core/pod/storage/eviction.go),
// container restarts (restartCount going up), Pods NotReady for longer than a few seconds (a Pod
// being deleted is not counted: it is going), and Deployments / DaemonSets with unavailable
// replicas (status.unavailableReplicas, status.numberUnavailable). A span still open when the
// watch stops ends there. Evictions a PodDisruptionBudget refused leave no object to watch (the
// API answers 429 and changes nothing); the drain, which asked, reports those here
// (evictionRefused): one entry per Pod and node step, counting the refusals.

export type DisruptionKind =
  "eviction" | "eviction-refused" | "restart" | "not-ready" | "unavailable";

export interface Disruption {
  kind: DisruptionKind;
  /** "Pod default/web-1", "Deployment kube-system/coredns". */
  object: string;
  node?: string;
  /** When it began (a span) or happened. */
  at: string;
  /** Spans (not-ready, unavailable): how long. */
  seconds?: number;
  /** The node steps running when it began ("w-1 drain"). */
  during: string[];
  detail?: string;
}

export interface DisruptionReport {
  /** A Pod NotReady for less than this is not counted. */
  notReadyAfterSeconds: number;
  counts: Record<DisruptionKind, number>;
  /** In the order they began. */
  disruptions: Disruption[];
}

export interface DisruptionWatchOptions {
  client: KubeClient;
  during: () => string[];
  now?: () => number;
  /** Default 5 s. */
  notReadyAfterMs?: number;
  /** Each time a watch broke (kube-apiserver restarting) and will list again. */
  onError?: (e: unknown) => void;
}

interface Span {
  start: number;
  during: string[];
  node?: string;
  detail?: string;
}

interface PodStatus {
  conditions?: { type: string; status: string; reason?: string }[];
  containerStatuses?: { name: string; restartCount?: number }[];
}

const round = (s: number) => Math.round(s * 1000) / 1000;

const nameOf = (o: KubeObject) =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`;

/** Unavailable replicas as the workload's controller reports them. */
function unavailable(o: KubeObject): number {
  const status = (o as { status?: { unavailableReplicas?: number; numberUnavailable?: number } })
    .status;
  return (o.kind === "DaemonSet" ? status?.numberUnavailable : status?.unavailableReplicas) ?? 0;
}

export class DisruptionWatcher {
  private readonly now: () => number;
  private readonly notReadyAfterMs: number;
  private readonly watches: CollectionWatch[] = [];
  private readonly found: Disruption[] = [];
  /** Per Pod uid: restartCount per container. */
  private readonly restarts = new Map<string, Map<string, number>>();
  /** Pods seen Ready and workloads seen fully available: only they can be disrupted. */
  private readonly wasUp = new Set<string>();
  private readonly evicted = new Set<string>();
  /** Refused evictions per Pod and step: the entry and how many refusals it counts. */
  private readonly refused = new Map<string, { entry: Disruption; times: number }>();
  /** Open spans: "not-ready <uid>", "unavailable <kind ns/name>". */
  private readonly open = new Map<string, Span & { kind: DisruptionKind; object: string }>();

  constructor(private readonly o: DisruptionWatchOptions) {
    this.now = o.now ?? Date.now;
    this.notReadyAfterMs = o.notReadyAfterMs ?? 5000;
  }

  /** Lists and watches; resolves once the three lists are in (what exists is the baseline). */
  async start(): Promise<void> {
    const watch = this.o.client.watch?.bind(this.o.client);
    if (!watch) return;
    const opts = this.o.onError ? { onError: this.o.onError } : {};
    const kinds = [
      ["v1", "Pod"],
      ["apps/v1", "Deployment"],
      ["apps/v1", "DaemonSet"],
    ] as const;
    // The three lists go at once; each watch that started is kept, so stop() ends it even
    // when another failed.
    const started = await Promise.allSettled(
      kinds.map(([apiVersion, kind]) => {
        const on =
          kind === "Pod"
            ? (t: WatchEventType, obj: KubeObject) => this.pod(t, obj)
            : (t: WatchEventType, obj: KubeObject) => this.workload(t, obj);
        return watch(apiVersion, kind, on, opts);
      }),
    );
    for (const s of started) if (s.status === "fulfilled") this.watches.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Ends the watches and every open span; what was counted. */
  stop(): DisruptionReport {
    for (const w of this.watches.splice(0)) w.stop();
    for (const key of [...this.open.keys()]) this.close(key);
    const disruptions = [...this.found].sort((a, b) => a.at.localeCompare(b.at));
    const counts: Record<DisruptionKind, number> = {
      eviction: 0,
      "eviction-refused": 0,
      restart: 0,
      "not-ready": 0,
      unavailable: 0,
    };
    for (const d of disruptions) counts[d.kind]++;
    return { notReadyAfterSeconds: this.notReadyAfterMs / 1000, counts, disruptions };
  }

  private record(d: Omit<Disruption, "at" | "during">, at = this.now(), during = this.o.during()) {
    const entry = { ...d, at: new Date(at).toISOString(), during };
    this.found.push(entry);
    return entry;
  }

  /**
   * An eviction of `pod` ("ns/name") on `node` the API refused (429: a PodDisruptionBudget
   * allows no disruption now), as the drain saw it: the first refusal in a step is recorded,
   * later ones in the same step counted into its detail with the API's last reason.
   */
  evictionRefused(pod: string, node: string, reason: string): void {
    const during = this.o.during();
    const key = `${pod} ${during.join(",")}`;
    const seen = this.refused.get(key);
    const times = (seen?.times ?? 0) + 1;
    const detail = `refused ${times} time(s): ${reason.split("\n")[0]!.slice(0, 300)}`;
    if (seen) {
      seen.times = times;
      seen.entry.detail = detail;
      return;
    }
    const entry = this.record(
      { kind: "eviction-refused", object: `Pod ${pod}`, node, detail },
      this.now(),
      during,
    );
    this.refused.set(key, { entry, times });
  }

  private begin(key: string, kind: DisruptionKind, object: string, extra: Partial<Span> = {}) {
    if (this.open.has(key)) return;
    this.open.set(key, { kind, object, start: this.now(), during: this.o.during(), ...extra });
  }

  /** Ends a span; counted when it lasted long enough (NotReady) or at all (unavailable). */
  private close(key: string): void {
    const span = this.open.get(key);
    if (!span) return;
    this.open.delete(key);
    const ms = this.now() - span.start;
    if (span.kind === "not-ready" && ms < this.notReadyAfterMs) return;
    this.record(
      {
        kind: span.kind,
        object: span.object,
        seconds: round(ms / 1000),
        ...(span.node ? { node: span.node } : {}),
        ...(span.detail ? { detail: span.detail } : {}),
      },
      span.start,
      span.during,
    );
  }

  private pod(type: WatchEventType, pod: KubeObject): void {
    const uid = pod.metadata.uid ?? nameOf(pod);
    const status = (pod as { status?: PodStatus }).status ?? {};
    const node = (pod as { spec?: { nodeName?: string } }).spec?.nodeName;
    const at = node ? { node } : {};
    if (type === "delete" || pod.metadata.deletionTimestamp) {
      this.open.delete(`not-ready ${uid}`);
      this.restarts.delete(uid);
      this.wasUp.delete(uid);
      // Marked, then deleted (gracefully: deletionTimestamp first): counted once.
      const evicted = status.conditions?.find(
        (c) => c.type === "DisruptionTarget" && c.status === "True",
      );
      if (evicted && !this.evicted.has(uid)) {
        this.evicted.add(uid);
        this.record({ kind: "eviction", object: nameOf(pod), ...at, detail: evicted.reason ?? "" });
      }
      return;
    }
    const counts = new Map(
      (status.containerStatuses ?? []).map((c) => [c.name, c.restartCount ?? 0]),
    );
    const before = this.restarts.get(uid);
    this.restarts.set(uid, counts);
    for (const [container, count] of before ? counts : []) {
      const was = before!.get(container) ?? 0;
      if (count > was) {
        this.record({
          kind: "restart",
          object: nameOf(pod),
          ...at,
          detail: `container ${container} restarted ${count - was} time(s)`,
        });
      }
    }
    const ready = status.conditions?.find((c) => c.type === "Ready")?.status === "True";
    // A Pod still starting has not been disrupted: only one that was Ready counts.
    if (ready) {
      this.wasUp.add(uid);
      this.close(`not-ready ${uid}`);
    } else if (this.wasUp.has(uid)) {
      this.begin(`not-ready ${uid}`, "not-ready", nameOf(pod), at);
    }
  }

  private workload(type: WatchEventType, obj: KubeObject): void {
    const key = `unavailable ${nameOf(obj)}`;
    const missing = type === "delete" ? 0 : unavailable(obj);
    if (type === "delete") this.wasUp.delete(key);
    if (missing === 0) {
      if (type !== "delete") this.wasUp.add(key);
      this.close(key);
    } else if (this.wasUp.has(key)) {
      this.begin(key, "unavailable", nameOf(obj), { detail: `${missing} unavailable` });
    }
  }
}
