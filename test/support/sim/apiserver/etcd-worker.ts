// SIMULATION (test double). The etcd client thread of the simulated kube-apiserver: it talks to
// a real etcd over etcd's v3 JSON gateway (gRPC-gateway, HTTPS with the client certificate:
// POST /v3/kv/range, /v3/kv/txn and the streaming /v3/watch; keys and values base64, int64s as
// strings, false and zero fields omitted) and keeps one watch on the whole storage prefix, whose
// events it hands to the main thread in revision order. It runs in a worker thread so that the
// ObjectStore's synchronous API can wait for etcd (Atomics.wait) while this thread's event loop
// does the I/O. k8s: staging/src/k8s.io/apiserver/pkg/storage/etcd3/watcher.go (one watch from
// the list's revision + 1, prev_kv for deletions, a new list after compaction),
// staging/src/k8s.io/apiserver/pkg/storage/storagebackend/factory/etcd3.go (TLS client).
//
// etcdWorkerMain runs from its own source text (new Worker(source, { eval: true })): the same
// code works from the TypeScript sources under vitest and from the bundled simulated kubelet.
// So it must stay self-contained — no imports, no module-level values; Node's builtins come
// from process.getBuiltinModule. Only types may be shared with the rest of the file.

import type { MessagePort } from "node:worker_threads";

export interface EtcdWorkerConfig {
  /** Client URLs (--etcd-servers), tried in turn. */
  endpoints: string[];
  /** PEM contents of --etcd-cafile, --etcd-certfile, --etcd-keyfile. */
  ca?: string;
  cert?: string;
  key?: string;
  /** Storage prefix with a trailing slash: "/registry/". */
  prefix: string;
  /** One etcd request, and one wait for the watch. */
  requestTimeoutMs: number;
  /** How long "open" keeps retrying until etcd answers. */
  startTimeoutMs: number;
}

export interface KV {
  key: string;
  /** UTF-8 value; absent with keysOnly. */
  value?: string;
  modRevision: number;
  createRevision: number;
}

export interface WatchEvent {
  type: "PUT" | "DELETE";
  key: string;
  value?: string;
  /** The value before a DELETE (prev_kv). */
  prevValue?: string;
  modRevision: number;
  createRevision: number;
}

export type TxnOp =
  | { put: { key: string; value: string } }
  | { delete: { key: string } }
  | { range: { key: string } };

export type WorkerRequest = { id: number; sync: boolean } & (
  | { op: "open" }
  | { op: "range"; key: string; rangeEnd?: string; keysOnly?: boolean }
  | {
      op: "txn";
      /** Each key's mod_revision must equal modRevision (0: the key does not exist). */
      compare: { key: string; modRevision: number }[];
      success: TxnOp[];
      failure: TxnOp[];
    }
  /** Replies once every event up to `revision` has been posted. */
  | { op: "through"; revision: number }
  /** Replies once an event of `key` newer than `after` has been posted. */
  | { op: "keyPast"; key: string; after: number }
  | { op: "close" }
);

export interface RangeResult {
  revision: number;
  kvs: KV[];
}

export interface TxnResult {
  succeeded: boolean;
  revision: number;
  /** What the range operations of the branch taken returned. */
  kvs: KV[];
}

export type WorkerMessage =
  | { type: "reply"; id: number; ok: true; result: unknown }
  | { type: "reply"; id: number; ok: false; error: string; unavailable: boolean }
  | { type: "events"; revision: number; events: WatchEvent[] }
  /** After a compaction the watch restarts from a new list: the state to reconcile with. */
  | { type: "reset"; revision: number; kvs: KV[] }
  | { type: "status"; watching: boolean; error?: string };

export function etcdWorkerMain(): void {
  const threads = process.getBuiltinModule("node:worker_threads");
  const https = process.getBuiltinModule("node:https");
  const { port, signal, config } = threads.workerData as {
    port: MessagePort;
    signal: SharedArrayBuffer;
    config: EtcdWorkerConfig;
  };
  const wake = new Int32Array(signal);

  type Json = Record<string, unknown>;
  interface RawKV {
    key?: string;
    value?: string;
    mod_revision?: string;
    create_revision?: string;
  }

  class EtcdError extends Error {
    constructor(
      message: string,
      /** The member could not be reached or cannot serve (try again later / another one). */
      readonly unavailable: boolean,
      /** etcd answered gRPC Unavailable at once (not its own request timeout): read again. */
      readonly readRetryable = false,
    ) {
      super(message);
    }
  }

  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
  const unb64 = (s: string | undefined) => Buffer.from(s ?? "", "base64").toString("utf8");
  const num = (s: unknown) => Number(s ?? 0);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const kvOf = (raw: RawKV): KV => ({
    key: unb64(raw.key),
    ...(raw.value !== undefined ? { value: unb64(raw.value) } : {}),
    modRevision: num(raw.mod_revision),
    createRevision: num(raw.create_revision),
  });
  /** The end of the range of keys starting with `p` (etcd's clientv3.GetPrefixRangeEnd). */
  const prefixEnd = (p: string) => {
    const b = Buffer.from(p, "utf8");
    for (let i = b.length - 1; i >= 0; i--) {
      if (b[i]! < 0xff) {
        b[i] = b[i]! + 1;
        return b.subarray(0, i + 1).toString("base64");
      }
    }
    return Buffer.from([0]).toString("base64");
  };

  // clientv3.WithRequireLeader, as kube-apiserver's client sets it: a member that has lost its
  // leader answers "etcdserver: no leader" at once (and cancels watches) instead of holding
  // requests until they time out. The gateway passes Grpc-Metadata-* headers on as gRPC metadata.
  // etcd: etcdserver/api/v3rpc/rpctypes/md.go (hasleader), etcdserver/api/v3rpc/interceptor.go.
  const REQUEST_HEADERS = { "Content-Type": "application/json", "Grpc-Metadata-hasleader": "true" };
  const tls = { ca: config.ca, cert: config.cert, key: config.key };
  const agent = new https.Agent({ keepAlive: true, maxSockets: 8, ...tls });
  let current = 0;

  function post(endpoint: string, path: string, body: unknown): Promise<Json> {
    return new Promise<Json>((resolve, reject) => {
      const req = https.request(
        new URL(path, endpoint),
        {
          method: "POST",
          agent,
          headers: REQUEST_HEADERS,
          timeout: config.requestTimeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", (e) => reject(new EtcdError(e.message, true)));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: Json = {};
            try {
              parsed = JSON.parse(text) as Json;
            } catch {
              /* not JSON: reported below */
            }
            if (res.statusCode === 200) return resolve(parsed);
            // gRPC-gateway errors: {"error": "...", "code": <gRPC code>}; 14 is Unavailable,
            // 4 DeadlineExceeded (no leader, a learner that cannot serve yet).
            const message = typeof parsed.error === "string" ? parsed.error : text.trim();
            const code = num(parsed.code);
            reject(
              new EtcdError(
                message || `HTTP ${res.statusCode}`,
                code === 14 || code === 4,
                code === 14 && !message.includes("timed out"),
              ),
            );
          });
        },
      );
      req.on("timeout", () => req.destroy(new EtcdError("etcdserver: request timed out", true)));
      req.on("error", (e) =>
        reject(e instanceof EtcdError ? e : new EtcdError(`${endpoint}: ${e.message}`, true)),
      );
      req.end(JSON.stringify(body));
    });
  }

  /** One request, on the endpoints in turn (the client balancer's job in clientv3). */
  async function call(path: string, body: unknown): Promise<Json> {
    let last: unknown;
    for (let i = 0; i < config.endpoints.length; i++) {
      const endpoint = config.endpoints[(current + i) % config.endpoints.length]!;
      try {
        const out = await post(endpoint, path, body);
        current = (current + i) % config.endpoints.length;
        return out;
      } catch (e) {
        last = e;
        if (!(e instanceof EtcdError) || !e.unavailable) throw e;
      }
    }
    throw last instanceof Error ? last : new EtcdError(String(last), true);
  }

  // clientv3's unary retry interceptor, which kube-apiserver's etcd client runs: a read (Range)
  // that etcd answers with gRPC Unavailable ("leader changed" after an election, "no leader"
  // during one) is sent again, 100 attempts in all, waiting 25 ms (jittered by 10%) between
  // rounds over the endpoints; a write (Txn) is not (at most once), nor a read that timed out.
  // Deliberately not retried here: a member that cannot be reached (gRPC's WaitForReady would
  // hold the read until the request's deadline), since a synchronous read blocks its whole
  // simulated server; it fails at once, as before. Bounded by the main thread's wait. etcd:
  // client/v3/retry_interceptor.go (isSafeRetryImmutableRPC), client/v3/options.go
  // (defaultUnaryMaxRetries, defaultBackoffWaitBetween, defaultBackoffJitterFraction).
  const READ_ATTEMPTS = 100;
  const READ_BACKOFF_MS = 25;
  async function callRead(path: string, body: unknown): Promise<Json> {
    const deadline = Date.now() + config.requestTimeoutMs;
    for (let attempts = 0; ;) {
      try {
        return await call(path, body);
      } catch (e) {
        attempts += config.endpoints.length;
        const wait = READ_BACKOFF_MS * (0.9 + Math.random() * 0.2);
        const retryable = e instanceof EtcdError && e.readRetryable;
        if (!retryable || attempts >= READ_ATTEMPTS || Date.now() + wait >= deadline) throw e;
        await sleep(wait);
      }
    }
  }

  /** `rangeEnd` is base64 already. */
  async function range(
    key: string,
    rangeEnd: string | undefined,
    keysOnly: boolean,
  ): Promise<RangeResult> {
    // Paged at a fixed revision, as the reflector's paginated list.
    let revision = 0;
    const kvs: KV[] = [];
    let from = b64(key);
    for (;;) {
      const body: Json = { key: from, limit: "1000" };
      if (rangeEnd !== undefined) body.range_end = rangeEnd;
      if (keysOnly) body.keys_only = true;
      if (revision) body.revision = String(revision);
      const r = await callRead("/v3/kv/range", body);
      revision ||= num((r.header as Json | undefined)?.revision);
      const page = ((r.kvs ?? []) as RawKV[]).map(kvOf);
      kvs.push(...page);
      if (!r.more || rangeEnd === undefined || page.length === 0) break;
      from = b64(`${page[page.length - 1]!.key}\u0000`);
    }
    return { revision, kvs };
  }

  function encodeOp(op: TxnOp): Json {
    if ("put" in op) return { request_put: { key: b64(op.put.key), value: b64(op.put.value) } };
    if ("delete" in op) return { request_delete_range: { key: b64(op.delete.key) } };
    return { request_range: { key: b64(op.range.key) } };
  }

  async function txn(req: Extract<WorkerRequest, { op: "txn" }>): Promise<TxnResult> {
    const r = await call("/v3/kv/txn", {
      compare: req.compare.map((c) => ({
        key: b64(c.key),
        target: "MOD",
        result: "EQUAL",
        mod_revision: String(c.modRevision),
      })),
      success: req.success.map(encodeOp),
      failure: req.failure.map(encodeOp),
    });
    const kvs: KV[] = [];
    for (const resp of (r.responses ?? []) as Json[]) {
      const rr = resp.response_range as { kvs?: RawKV[] } | undefined;
      if (rr?.kvs) kvs.push(...rr.kvs.map(kvOf));
    }
    return {
      succeeded: r.succeeded === true,
      revision: num((r.header as Json | undefined)?.revision),
      kvs,
    };
  }

  // ---- the watch --------------------------------------------------------------------------

  const watchEnd = prefixEnd(config.prefix);
  /** Every event up to this revision has been posted to the main thread. */
  let delivered = 0;
  const lastEventOf = new Map<string, number>();
  let waiters: { done: () => boolean; reply: () => void }[] = [];
  let closed = false;
  let watchReq: ReturnType<typeof https.request> | undefined;
  let watching = false;

  let onWatching: (() => void) | undefined;

  function setWatching(on: boolean, error?: string) {
    if (on === watching) return;
    watching = on;
    port.postMessage({ type: "status", watching: on, ...(error ? { error } : {}) });
    if (on) onWatching?.();
  }

  function settleWaiters() {
    const still: typeof waiters = [];
    for (const w of waiters) {
      if (w.done()) w.reply();
      else still.push(w);
    }
    waiters = still;
  }

  function startWatch(fromRevision: number) {
    if (closed) return;
    const endpoint = config.endpoints[current % config.endpoints.length]!;
    let buffered = "";
    let ended = false;
    /** Ends this stream; then either a new watch from what was delivered, or a new list. */
    const end = (why: string, next: "watch" | "relist") => {
      if (ended) return;
      ended = true;
      req.destroy();
      setWatching(false, why);
      if (closed) return;
      if (next === "relist") return void relist();
      current = (current + 1) % config.endpoints.length;
      setTimeout(() => startWatch(delivered + 1), 200);
    };
    const req = https.request(
      new URL("/v3/watch", endpoint),
      { method: "POST", agent: false, ...tls, headers: REQUEST_HEADERS },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return end(`watch: HTTP ${res.statusCode}`, "watch");
        }
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffered += chunk;
          for (let nl = buffered.indexOf("\n"); nl >= 0 && !ended; nl = buffered.indexOf("\n")) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line === "") continue;
            let msg: Json;
            try {
              msg = JSON.parse(line) as Json;
            } catch {
              return end("watch: unreadable response", "watch");
            }
            const outcome = onWatchMessage(msg);
            if (outcome) end(outcome.why, outcome.next);
          }
        });
        res.on("end", () => end("watch: stream ended", "watch"));
        res.on("error", (e) => end(`watch: ${e.message}`, "watch"));
      },
    );
    watchReq = req;
    req.on("error", (e) => end(`watch: ${e.message}`, "watch"));
    req.end(
      JSON.stringify({
        create_request: {
          key: b64(config.prefix),
          range_end: watchEnd,
          start_revision: String(fromRevision),
          prev_kv: true,
        },
      }),
    );
  }

  /** Handles one watch response; says how the stream ends when it must. */
  function onWatchMessage(msg: Json): { why: string; next: "watch" | "relist" } | undefined {
    if (msg.error) return { why: `watch: ${JSON.stringify(msg.error)}`, next: "watch" };
    const r = (msg.result ?? {}) as Json;
    if (r.created) {
      setWatching(true);
      return undefined; // its header revision says nothing about what was delivered
    }
    // k8s: etcd3/watcher.go — a compacted watch ends; the reflector lists again.
    if (num(r.compact_revision) > 0) return { why: "watch: compacted", next: "relist" };
    if (r.canceled) {
      const reason = typeof r.cancel_reason === "string" ? r.cancel_reason : "";
      return { why: `watch canceled: ${reason}`, next: "watch" };
    }
    const events: WatchEvent[] = [];
    for (const e of (r.events ?? []) as { type?: string; kv: RawKV; prev_kv?: RawKV }[]) {
      const kv = kvOf(e.kv);
      const ev: WatchEvent = {
        type: e.type === "DELETE" ? "DELETE" : "PUT",
        key: kv.key,
        modRevision: kv.modRevision,
        createRevision: kv.createRevision,
      };
      if (kv.value !== undefined && ev.type === "PUT") ev.value = kv.value;
      if (e.prev_kv?.value !== undefined) ev.prevValue = unb64(e.prev_kv.value);
      events.push(ev);
      lastEventOf.set(kv.key, kv.modRevision);
    }
    const revision = Math.max(
      num((r.header as Json | undefined)?.revision),
      ...events.map((e) => e.modRevision),
    );
    if (events.length === 0 && revision <= delivered) return undefined;
    delivered = Math.max(delivered, revision);
    port.postMessage({ type: "events", revision, events } satisfies WorkerMessage);
    settleWaiters();
    return undefined;
  }

  async function relist(): Promise<void> {
    for (;;) {
      if (closed) return;
      try {
        const { revision, kvs } = await range(config.prefix, watchEnd, false);
        delivered = revision;
        lastEventOf.clear();
        for (const kv of kvs) lastEventOf.set(kv.key, kv.modRevision);
        port.postMessage({ type: "reset", revision, kvs } satisfies WorkerMessage);
        // After a reset the main thread's cache is current: every key wait is over.
        for (const w of waiters) w.reply();
        waiters = [];
        startWatch(revision + 1);
        return;
      } catch {
        await sleep(500);
      }
    }
  }

  async function open(): Promise<RangeResult> {
    const deadline = Date.now() + config.startTimeoutMs;
    for (;;) {
      try {
        const snapshot = await range(config.prefix, watchEnd, false);
        delivered = snapshot.revision;
        for (const kv of snapshot.kvs) lastEventOf.set(kv.key, kv.modRevision);
        // Serving starts with the watch established (else the "etcd" check would fail at
        // first); a watch that is slow to come up keeps retrying on its own.
        const established = new Promise<void>((resolve) => {
          onWatching = resolve;
          setTimeout(resolve, config.requestTimeoutMs);
        });
        startWatch(snapshot.revision + 1);
        await established;
        onWatching = undefined;
        return snapshot;
      } catch (e) {
        // kube-apiserver retries until etcd answers (a member not started yet, a learner not
        // promoted yet, no leader yet).
        if (Date.now() > deadline) throw e;
        await sleep(500);
      }
    }
  }

  function wait(done: () => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (done()) return resolve();
      const timer = setTimeout(() => {
        waiters = waiters.filter((w) => w !== entry);
        reject(
          new EtcdError(
            `timed out after ${config.requestTimeoutMs} ms waiting for the etcd watch to deliver`,
            true,
          ),
        );
      }, config.requestTimeoutMs);
      const entry = {
        done,
        reply: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      waiters.push(entry);
    });
  }

  async function handle(req: WorkerRequest): Promise<unknown> {
    switch (req.op) {
      case "open":
        return open();
      case "range":
        return range(
          req.key,
          req.rangeEnd !== undefined ? b64(req.rangeEnd) : undefined,
          req.keysOnly ?? false,
        );
      case "txn":
        return txn(req);
      case "through":
        return wait(() => delivered >= req.revision);
      case "keyPast":
        return wait(() => (lastEventOf.get(req.key) ?? 0) > req.after);
      case "close":
        closed = true;
        watchReq?.destroy();
        agent.destroy();
        return undefined;
    }
  }

  port.on("message", (req: WorkerRequest) => {
    void handle(req)
      .then(
        (result) => port.postMessage({ type: "reply", id: req.id, ok: true, result }),
        (e: unknown) =>
          port.postMessage({
            type: "reply",
            id: req.id,
            ok: false,
            error: e instanceof Error ? e.message : String(e),
            unavailable: e instanceof EtcdError ? e.unavailable : false,
          }),
      )
      .finally(() => {
        // The reply is queued on the port before the waiting main thread is woken.
        if (req.sync) {
          Atomics.add(wake, 0, 1);
          Atomics.notify(wake, 0);
        }
        if (req.op === "close") port.close();
      });
  });
}
