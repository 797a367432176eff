// SIMULATION (test double). The main-thread side of the simulated kube-apiserver's etcd client:
// starts the client thread (etcd-worker.ts) and calls it either asynchronously (opening: the
// first list, retried until etcd answers) or synchronously, blocking this thread with
// Atomics.wait until the worker has answered, so that the ObjectStore keeps its synchronous API
// while every write goes to etcd first. Watch events arrive on the same port as replies, in
// order: they are handed to the store either as they come (between tasks) or, during a
// synchronous call, as the call drains the port (receiveMessageOnPort) — so a call that waits
// "through revision N" returns with every event up to N already handed over.
import { readFileSync } from "node:fs";
import {
  MessageChannel,
  receiveMessageOnPort,
  Worker,
  type MessagePort,
} from "node:worker_threads";
import {
  etcdWorkerMain,
  type EtcdWorkerConfig,
  type RangeResult,
  type TxnOp,
  type TxnResult,
  type WorkerMessage,
  type WorkerRequest,
} from "./etcd-worker.js";
import { failure, internalError, type StatusError } from "./status.js";
import { DEFAULT_STORAGE_PREFIX, normalizePrefix } from "./storage-keys.js";

export type { KV, RangeResult, TxnOp, TxnResult, WatchEvent } from "./etcd-worker.js";

/** kube-apiserver's etcd client flags. k8s: staging/src/k8s.io/apiserver/pkg/server/options/etcd.go */
export interface EtcdOptions {
  /** --etcd-servers: client URLs. */
  servers: string[];
  /** --etcd-cafile, --etcd-certfile, --etcd-keyfile (local paths). */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** --etcd-prefix; default "/registry". */
  prefix?: string;
  /** One etcd request (the event loop waits that long at most); default 15 s. */
  requestTimeoutMs?: number;
  /** How long opening retries until etcd answers; default 5 minutes. */
  startTimeoutMs?: number;
}

/** What the store receives: watch batches and, after a compaction, a fresh list. */
export type BackendMessage = Extract<WorkerMessage, { type: "events" | "reset" }>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type SyncRequest = DistributiveOmit<WorkerRequest, "id" | "sync">;

function unavailable(message: string): StatusError {
  // k8s: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/status.go
  // ErrorToAPIStatus — an etcd error that is no API status ("etcdserver: no leader", "request
  // timed out") reaches the client as a 500 InternalError.
  return internalError(message);
}

/**
 * A synchronous call this long is logged: it held every request of this API server (the real
 * one serves others meanwhile; it traces a request over 500 ms, k8s: utiltrace).
 */
const SLOW_CALL_MS = 500;

export class EtcdBackend {
  readonly prefix: string;
  private readonly wake: Int32Array;
  private nextId = 0;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private handler: ((m: BackendMessage, live: boolean) => void) | undefined;
  private readonly early: BackendMessage[] = [];
  private closed = false;
  private watchUp = false;
  private readonly timeoutMs: number;

  private constructor(
    private readonly worker: Worker,
    private readonly port: MessagePort,
    signal: SharedArrayBuffer,
    readonly options: EtcdOptions,
    private readonly log: (line: string) => void,
  ) {
    this.prefix = normalizePrefix(options.prefix ?? DEFAULT_STORAGE_PREFIX);
    this.wake = new Int32Array(signal);
    this.timeoutMs = options.requestTimeoutMs ?? 15_000;
    port.on("message", (m: WorkerMessage) => this.dispatch(m, true));
    port.unref();
    const fail = (why: string) => {
      this.closed = true;
      for (const p of this.pending.values()) p.reject(new Error(why));
      this.pending.clear();
    };
    worker.on("error", (e: Error) => {
      this.log(`etcd client thread failed: ${e.message}`);
      fail(`etcd client thread failed: ${e.message}`);
    });
    worker.on("exit", () => fail("etcd client thread exited"));
  }

  /** Starts the client thread and lists the whole prefix, retrying until etcd answers. */
  static async open(
    options: EtcdOptions,
    log: (line: string) => void = () => {},
    signal?: AbortSignal,
  ): Promise<{ backend: EtcdBackend; snapshot: RangeResult }> {
    if (options.servers.length === 0) throw new Error("--etcd-servers lists no server");
    // Read here, once, as kube-apiserver does at start: a missing file fails the start.
    const read = (file: string | undefined, flag: string) => {
      if (!file) return undefined;
      try {
        return readFileSync(file, "utf8");
      } catch (e) {
        throw new Error(
          `simulated kube-apiserver: cannot read ${flag} ${file}: ${(e as Error).message}`,
          { cause: e },
        );
      }
    };
    const ca = read(options.caFile, "--etcd-cafile");
    const cert = read(options.certFile, "--etcd-certfile");
    const key = read(options.keyFile, "--etcd-keyfile");
    const config: EtcdWorkerConfig = {
      endpoints: options.servers,
      prefix: normalizePrefix(options.prefix ?? DEFAULT_STORAGE_PREFIX),
      requestTimeoutMs: options.requestTimeoutMs ?? 15_000,
      startTimeoutMs: options.startTimeoutMs ?? 300_000,
      ...(ca ? { ca } : {}),
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
    };
    const { port1, port2 } = new MessageChannel();
    const wake = new SharedArrayBuffer(4);
    const worker = new Worker(`(${etcdWorkerMain.toString()})()`, {
      eval: true,
      name: "simulated-kube-apiserver-etcd-client",
      workerData: { port: port2, signal: wake, config },
      transferList: [port2],
    });
    // The thread must not keep a process alive (a runtime daemon that is told to stop).
    worker.unref();
    const backend = new EtcdBackend(worker, port1, wake, options, log);
    try {
      signal?.throwIfAborted();
      let onAbort = () => {};
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(new Error("stopped before etcd answered"));
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      try {
        const snapshot = (await Promise.race([
          backend.call({ op: "open" }),
          aborted,
        ])) as RangeResult;
        return { backend, snapshot };
      } finally {
        signal?.removeEventListener("abort", onAbort);
      }
    } catch (e) {
      backend.close();
      throw new Error(
        `simulated kube-apiserver: etcd at ${options.servers.join(",")} did not answer: ${(e as Error).message}`,
        { cause: e },
      );
    }
  }

  /**
   * Where watch batches go from now on (those that came before are handed over first).
   * `live` is false while a synchronous call drains them: the caller then applies them and
   * notifies listeners itself once the call is over.
   */
  start(handler: (m: BackendMessage, live: boolean) => void): void {
    this.handler = handler;
    for (const m of this.early.splice(0)) handler(m, true);
  }

  /** Whether the watch stream is up (the "etcd" health check). */
  get healthy(): boolean {
    return !this.closed && this.watchUp;
  }

  range(key: string, opts: { rangeEnd?: string; keysOnly?: boolean } = {}): RangeResult {
    return this.syncCall({ op: "range", key, ...opts }) as RangeResult;
  }

  /** A transaction guarded by mod_revision comparisons (0: the key must not exist). */
  txn(
    compare: { key: string; modRevision: number }[],
    success: TxnOp[],
    otherwise: TxnOp[],
  ): TxnResult {
    return this.syncCall({ op: "txn", compare, success, failure: otherwise }) as TxnResult;
  }

  /** Returns once every change up to `revision` has been handed to the store. */
  through(revision: number): void {
    this.syncCall({ op: "through", revision });
  }

  /** Returns once a change of `key` newer than `after` has been handed to the store. */
  keyPast(key: string, after: number): void {
    this.syncCall({ op: "keyPast", key, after });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port.postMessage({ id: ++this.nextId, sync: false, op: "close" } satisfies WorkerRequest);
    // Let the worker end its streams, then stop it whatever it is doing.
    setTimeout(() => void this.worker.terminate(), 200).unref();
  }

  // ---- plumbing ----------------------------------------------------------------------------

  /** `live`: from the port's listener, between tasks (not drained by a synchronous call). */
  private dispatch(m: WorkerMessage, live: boolean): void {
    if (m.type === "reply") {
      const p = this.pending.get(m.id);
      if (!p) return; // a synchronous call's reply that came after it gave up
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.port.unref();
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(m.error));
      return;
    }
    if (m.type === "status") {
      this.watchUp = m.watching;
      if (!m.watching && m.error) this.log(`etcd watch interrupted: ${m.error}`);
      return;
    }
    if (this.handler) this.handler(m, live);
    else this.early.push(m);
  }

  private call(req: SyncRequest): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = ++this.nextId;
      this.pending.set(id, { resolve, reject });
      this.port.ref();
      this.port.postMessage({ ...req, id, sync: false });
    });
  }

  private syncCall(req: SyncRequest): unknown {
    const started = Date.now();
    try {
      return this.waitFor(req);
    } finally {
      const took = Date.now() - started;
      if (took >= SLOW_CALL_MS) this.log(`etcd ${req.op} held the API server for ${took} ms`);
    }
  }

  private waitFor(req: SyncRequest): unknown {
    if (this.closed) throw unavailable("etcd client is closed");
    const id = ++this.nextId;
    this.port.postMessage({ ...req, id, sync: true });
    const deadline = Date.now() + this.timeoutMs + 5_000;
    for (;;) {
      // Read the counter before draining: a reply posted after the drain changes it, and the
      // wait below then returns at once.
      const seen = Atomics.load(this.wake, 0);
      for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) {
        const msg = m.message as WorkerMessage;
        if (msg.type === "reply" && msg.id === id) {
          if (msg.ok) return msg.result;
          throw msg.unavailable
            ? unavailable(msg.error)
            : failure(500, "InternalError", `Internal error occurred: ${msg.error}`);
        }
        this.dispatch(msg, false);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw unavailable(`etcd did not answer within ${this.timeoutMs} ms`);
      Atomics.wait(this.wake, 0, seen, left);
    }
  }
}
