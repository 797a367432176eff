import type { Host } from "../remote/host.js";
import { withHeartbeat, type HeartbeatOptions } from "../workflow/heartbeat.js";
import { CrictlImages } from "./runtime/crictl-images.js";
import { lookPath } from "./lookpath.js";

// Control-plane and addon images pulled ahead of kubeadm's phases, in parallel with the rest of
// node preparation, so that pulls are not on the critical path (kubeadm's own preflight pulls
// them one at a time, after its checks: preflight/image-pull.ts).

export interface PrePullOptions {
  /** CRI endpoint, e.g. unix:///var/run/containerd/containerd.sock (a bare path is accepted). */
  criSocket: string;
  /** Pulls at once (default 4). */
  concurrency?: number;
  log?: (line: string) => void;
  /** Per pull (default 15 minutes). */
  pullTimeoutMs?: number;
  /** Ends the pulls running and starts no more; prePullImages then rejects. */
  signal?: AbortSignal;
  /** The "still pulling" lines' interval and clock (workflow/heartbeat.ts); tests shorten it. */
  heartbeat?: Pick<HeartbeatOptions, "everyMs" | "clock">;
}

/**
 * Pulls every image not already present (`crictl inspecti`), at most `concurrency` at once.
 * Every image is tried; the error names each image that failed and the host.
 */
export async function prePullImages(
  host: Host,
  images: string[],
  opts: PrePullOptions,
): Promise<void> {
  const log = opts.log ?? (() => undefined);
  const wanted = [...new Set(images)];
  if (wanted.length === 0) return;
  const concurrency = opts.concurrency ?? 4;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`image pull concurrency must be a positive whole number, not ${concurrency}`);
  }
  const crictl = await lookPath(host, "crictl");
  if (crictl === undefined) {
    throw new Error(`${host.name}: cannot pre-pull images: crictl is not on the PATH`);
  }
  const { signal } = opts;
  const runtime = new CrictlImages(host, crictl, opts.criSocket, {
    ...(signal ? { signal } : {}),
    ...(opts.pullTimeoutMs !== undefined ? { pullTimeoutMs: opts.pullTimeoutMs } : {}),
  });

  if (await runtime.allExist(wanted)) {
    for (const image of wanted) log(`image ${image} already present`);
    return;
  }
  const failures = new Map<string, string>();
  /** Pulls in flight, for the heartbeat. */
  const pulling = new Set<string>();
  const pullOne = async (image: string) => {
    if (await runtime.exists(image)) {
      log(`image ${image} already present`);
      return;
    }
    const started = Date.now();
    pulling.add(image);
    const failure = await runtime.pull(image).finally(() => pulling.delete(image));
    if (failure === undefined) {
      log(`pulled ${image} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
    } else {
      failures.set(image, failure);
    }
  };

  let next = 0;
  const worker = async () => {
    while (next < wanted.length && !signal?.aborted) {
      const image = wanted[next++]!;
      await pullOne(image);
    }
  };
  // Settled, not all: when cancelled, every worker's pull is gone before this returns.
  const workers = await withHeartbeat(
    { ...opts.heartbeat, label: "still pulling", pending: () => [...pulling], log },
    () => Promise.allSettled(Array.from({ length: Math.min(concurrency, wanted.length) }, worker)),
  );
  if (signal?.aborted) {
    throw new Error(`${host.name}: image pre-pull cancelled`, { cause: signal.reason });
  }
  const broken = workers.find((w) => w.status === "rejected");
  if (broken) throw broken.reason;
  if (failures.size > 0) {
    // In the order asked, whatever order the pulls ended in.
    const lines = wanted.filter((i) => failures.has(i)).map((i) => ` - ${i}: ${failures.get(i)}`);
    throw new Error(
      `${host.name}: failed to pull ${failures.size} of ${wanted.length} image${wanted.length === 1 ? "" : "s"}:\n${lines.join("\n")}`,
    );
  }
}
