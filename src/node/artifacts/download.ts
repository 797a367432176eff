import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import type { IncomingMessage, OutgoingHttpHeaders, RequestOptions } from "node:http";
import { rootCertificates } from "node:tls";
import type * as HttpClientModule from "@actions/http-client";
import { cancellable } from "../../remote/interruption.js";
import { startProgress } from "./progress.js";

// HTTP(S) downloads with the behaviour release downloads need. The requests go through
// @actions/http-client, which routes them as every GitHub Action does: through the proxy that
// HTTPS_PROXY / HTTP_PROXY name (CONNECT tunnels, credentials from the proxy URL), directly for
// the hosts NO_PROXY lists and for loopback addresses. On top of it: redirects followed here
// (GitHub release URLs answer 302 to their object store; HTTPS never to HTTP), an idle timeout
// (connecting, waiting for headers, or a stalled body), retries with back-off for transient
// failures only (5xx, connection errors, timeouts, truncated bodies; never 4xx, whose retry would
// only repeat the answer), a progress line every 20 s, and cancellation by the run's
// interruption (Ctrl-C, a cancelled job) or the caller's signal. (@actions/tool-cache's
// downloadTool has none of these controls: three attempts 10–20 s apart, a 3-minute socket
// timeout, no extra CA, no cancellation, no progress.)

export interface DownloadOptions {
  /** An extra CA trusted on top of the system's (a private mirror, or tests). */
  ca?: string | Buffer;
  /** Idle timeout: connecting, waiting for headers, or a stalled body. Default 60 s. */
  timeoutMs?: number;
  /** Retries after the first attempt for transient failures. Default 3. */
  retries?: number;
  /** First back-off delay, doubled per retry (at most 8 s). Default 500 ms. */
  retryDelayMs?: number;
  maxRedirects?: number;
  log?: (line: string) => void;
  /** Between two progress lines of a body still downloading. Default 20 s. */
  progressIntervalMs?: number;
  /** Stops the download (the run's interruption always does). */
  signal?: AbortSignal;
}

/** A failed download; `message` is one sentence naming the URL. */
export class DownloadError extends Error {
  constructor(
    message: string,
    readonly url: string,
    readonly retryable: boolean,
    opts?: { cause?: unknown },
  ) {
    super(message, opts);
    this.name = "DownloadError";
  }
}

/** Where the body of one response goes; `reset` starts it over for a retry. */
interface Sink {
  reset(): Promise<void>;
  write(chunk: Buffer): void;
  end(): Promise<void>;
}

export interface DownloadResult {
  size: number;
  sha256: string;
  /** The first bytes of the body (content checks). */
  head: Buffer;
  contentType: string | undefined;
  /** Where the body came from after redirects. */
  finalUrl: string;
}

const HEAD_BYTES = 512;

/** Reason text of a transient network error, or undefined for errors a retry cannot fix. */
function networkReason(e: unknown): string | undefined {
  const code = (e as NodeJS.ErrnoException).code;
  const transient = [
    "ECONNRESET",
    "ECONNREFUSED",
    "ETIMEDOUT",
    "EPIPE",
    "EAI_AGAIN",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "ECONNABORTED",
    "UND_ERR_SOCKET",
  ];
  if (code && transient.includes(code)) return `${(e as Error).message}`;
  return undefined;
}

class Transient extends Error {}

/** The download was stopped (interrupted or cancelled): never retried. */
class Stopped extends Error {}

let httpClientModule: Promise<typeof HttpClientModule> | undefined;
/** @actions/http-client (and undici under it) load with the first download. */
const loadHttpClient = () => (httpClientModule ??= import("@actions/http-client"));

/**
 * Resets on every sign of life; aborts `signal` with a Transient "no data" error when none came
 * for `timeoutMs`, or with a Stopped error when `outer` aborts.
 */
class Watchdog {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly onOuter: () => void;
  readonly signal = this.controller.signal;

  constructor(
    private readonly timeoutMs: number,
    private readonly outer: AbortSignal,
  ) {
    this.onOuter = () => this.stop(new Stopped(reasonText(outer.reason), { cause: outer.reason }));
    if (outer.aborted) this.onOuter();
    else outer.addEventListener("abort", this.onOuter, { once: true });
    this.alive();
  }

  alive(): void {
    if (this.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => this.stop(new Transient(`no data for ${this.timeoutMs} ms`)),
      this.timeoutMs,
    );
  }

  private stop(reason: Error): void {
    clearTimeout(this.timer);
    this.controller.abort(reason);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer.removeEventListener("abort", this.onOuter);
  }
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  return typeof reason === "string" && reason !== "" ? reason : "cancelled";
}

/** TLS trust and cancellation for each request @actions/http-client prepares. */
function requestHandler(url: URL, opts: DownloadOptions, signal: AbortSignal) {
  return {
    prepareRequest(options: RequestOptions & { ca?: (string | Buffer)[] }) {
      options.signal = signal;
      if (opts.ca === undefined || url.protocol !== "https:") return;
      // Node's own CAs plus the extra one, for a direct connection (the request's TLS options)
      // and through a proxy's tunnel, which takes them from its agent's options (as
      // http-client itself does for ignoreSslError).
      const ca = [...rootCertificates, opts.ca];
      options.ca = ca;
      const agent = options.agent as { options?: Record<string, unknown> } | undefined;
      if (agent && typeof agent === "object") agent.options = { ...agent.options, ca };
    },
    canHandleAuthentication: () => false,
    handleAuthentication: () => Promise.reject(new Error("no authentication handler")),
  };
}

/** One GET without following redirects; resolves with the response once its headers are in. */
async function requestOnce(
  HttpClient: typeof HttpClientModule.HttpClient,
  url: URL,
  opts: DownloadOptions,
  watchdog: Watchdog,
): Promise<IncomingMessage> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const client = new HttpClient("kubeforge", [requestHandler(url, opts, watchdog.signal)], {
    allowRedirects: false,
    allowRetries: false,
    keepAlive: false,
    // Only a backstop: the watchdog's idle timeout (the same length) ends a silent request
    // first, with its own message.
    socketTimeout: timeoutMs * 2,
  });
  const headers: OutgoingHttpHeaders = { accept: "*/*" };
  try {
    const res = await client.get(url.href, headers);
    watchdog.alive();
    return res.message;
  } catch (e) {
    if (watchdog.signal.aborted) throw watchdog.signal.reason as Error;
    throw e;
  }
}

/**
 * Reads a response body into the sink, checking its length against Content-Length; a line of
 * progress every so often.
 */
function drain(
  res: IncomingMessage,
  sink: Sink,
  url: string,
  opts: DownloadOptions,
  watchdog: Watchdog,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let received = 0;
    let failed = false;
    const expected = res.headers["content-length"];
    const total = expected === undefined ? undefined : Number(expected);
    const stopProgress = startProgress(
      url,
      total,
      () => received,
      opts.log,
      opts.progressIntervalMs,
    );
    const fail = (e: Error) => {
      stopProgress();
      if (failed) return;
      failed = true;
      reject(e);
    };
    res.on("data", (chunk: Buffer) => {
      received += chunk.length;
      watchdog.alive();
      try {
        sink.write(chunk);
      } catch (e) {
        fail(e as Error);
        res.destroy();
      }
    });
    const cut = (detail: string) => {
      // A stalled body ended by the watchdog, or a stopped run, says so rather than "truncated".
      if (watchdog.signal.aborted) return fail(watchdog.signal.reason as Error);
      fail(
        new Transient(
          expected !== undefined
            ? `the body was truncated (${received} of ${expected} bytes; ${detail})`
            : `${detail} after ${received} bytes`,
        ),
      );
    };
    res.on("aborted", () => cut("the connection closed"));
    res.on("error", (e) => cut(`the connection failed: ${e.message}`));
    res.on("end", () => {
      stopProgress();
      if (failed) return;
      if (total !== undefined && total !== received) {
        fail(new Transient(`the body was truncated (${received} of ${expected} bytes)`));
        return;
      }
      resolve(received);
    });
    res.on("close", () => {
      if (!res.complete) cut("the connection closed");
    });
  });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The answer to one request: a redirect's target, or the 200 body drained into the sink. */
async function hop(
  url: URL,
  start: URL,
  opts: DownloadOptions,
  sink: Sink,
  signal: AbortSignal,
): Promise<{ next: URL } | { contentType: string | undefined; size: number }> {
  // Loaded before the clock starts: the first load is no part of the server's time to answer.
  const { HttpClient } = await loadHttpClient();
  const watchdog = new Watchdog(opts.timeoutMs ?? 60_000, signal);
  try {
    const res = await requestOnce(HttpClient, url, opts, watchdog);
    const status = res.statusCode ?? 0;
    if (REDIRECTS.has(status)) {
      res.resume();
      const location = res.headers.location;
      if (!location) throw new Error(`HTTP ${status} without a Location header from ${url.href}`);
      return { next: new URL(location, url) };
    }
    if (status !== 200) {
      res.resume();
      const text = `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ""}${url.href !== start.href ? ` from ${url.href}` : ""}`;
      throw status >= 500 ? new Transient(text) : new Error(text);
    }
    const size = await drain(res, sink, url.href, opts, watchdog);
    await sink.end();
    return { contentType: res.headers["content-type"], size };
  } finally {
    watchdog.dispose();
  }
}

/** One attempt: follows redirects, streams the final 200 body into the sink. */
async function attempt(
  start: URL,
  opts: DownloadOptions,
  sink: Sink,
  signal: AbortSignal,
): Promise<{ contentType: string | undefined; finalUrl: string; size: number }> {
  let url = start;
  const maxRedirects = opts.maxRedirects ?? 10;
  for (let n = 0; ; n++) {
    // Emptied before the request, not once the answer is in: an await between the response and
    // drain's listeners could miss a connection cut meanwhile and wait forever.
    await sink.reset();
    const answer = await hop(url, start, opts, sink, signal);
    if (!("next" in answer)) return { ...answer, finalUrl: url.href };
    if (n + 1 > maxRedirects) throw new Error(`more than ${maxRedirects} redirects`);
    if (url.protocol === "https:" && answer.next.protocol !== "https:") {
      throw new Error(`a redirect from HTTPS to ${answer.next.href} (refused)`);
    }
    url = answer.next;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      reject(new Stopped(reasonText(signal.reason), { cause: signal.reason }));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", done);
      resolve();
    }, ms);
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}

/** Runs `attempt` with retries for transient failures; the error names `url` in one sentence. */
async function withRetries<T>(
  url: string,
  opts: DownloadOptions,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const retries = opts.retries ?? 3;
  let delay = opts.retryDelayMs ?? 500;
  const signal = cancellable(opts.signal);
  for (let n = 0; ; n++) {
    try {
      if (signal.aborted) throw new Stopped(reasonText(signal.reason), { cause: signal.reason });
      return await run(signal);
    } catch (e) {
      if (e instanceof Stopped) {
        throw new DownloadError(`downloading ${url} was stopped: ${e.message}`, url, false, {
          cause: e,
        });
      }
      const reason =
        e instanceof Transient ? e.message : (networkReason(e) ?? (e as Error).message);
      const retryable = e instanceof Transient || networkReason(e) !== undefined;
      if (retryable && n < retries) {
        opts.log?.(`downloading ${url}: ${reason}; retrying in ${delay} ms`);
        await sleep(delay, signal).catch((stop: Stopped) => {
          throw new DownloadError(`downloading ${url} was stopped: ${stop.message}`, url, false, {
            cause: stop,
          });
        });
        delay = Math.min(delay * 2, 8_000);
        continue;
      }
      const tries = n > 0 ? ` after ${n + 1} attempts` : "";
      throw new DownloadError(`downloading ${url} failed${tries}: ${reason}`, url, retryable, {
        cause: e,
      });
    }
  }
}

function parseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (e) {
    throw new DownloadError(`"${url}" is not a URL`, url, false, { cause: e });
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new DownloadError(`"${url}" is not an http or https URL`, url, false);
  }
  return parsed;
}

/** Downloads `url` into `dest` (created or truncated), hashing it on the way. */
export async function downloadToFile(
  url: string,
  dest: string,
  opts: DownloadOptions = {},
): Promise<DownloadResult> {
  const start = parseUrl(url);
  return withRetries(url, opts, async (signal) => {
    let out: ReturnType<typeof createWriteStream> | undefined;
    let hash = createHash("sha256");
    let head = Buffer.alloc(0);
    const sink: Sink = {
      reset: async () => {
        hash = createHash("sha256");
        head = Buffer.alloc(0);
        // Once per redirect hop: the stream of the hop before is closed, the file truncated.
        if (out && !out.closed) out.destroy();
        out = createWriteStream(dest, { mode: 0o600 });
        await new Promise<void>((resolve, reject) => {
          out!.once("open", () => resolve()).once("error", reject);
        });
      },
      write: (chunk) => {
        hash.update(chunk);
        if (head.length < HEAD_BYTES) {
          head = Buffer.concat([head, chunk.subarray(0, HEAD_BYTES - head.length)]);
        }
        out!.write(chunk);
      },
      end: () =>
        new Promise<void>((resolve, reject) => {
          out!.end((e?: Error | null) => (e ? reject(e) : resolve()));
        }),
    };
    try {
      const r = await attempt(start, opts, sink, signal);
      return { ...r, sha256: hash.digest("hex"), head };
    } finally {
      if (out && !out.closed) out.destroy();
    }
  });
}

/** Downloads a small text file (a checksum); at most `maxBytes`. */
export async function downloadText(
  url: string,
  opts: DownloadOptions = {},
  maxBytes = 64 * 1024,
): Promise<string> {
  const start = parseUrl(url);
  return withRetries(url, opts, async (signal) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const sink: Sink = {
      reset: () => {
        chunks.length = 0;
        size = 0;
        return Promise.resolve();
      },
      write: (chunk) => {
        size += chunk.length;
        if (size > maxBytes) throw new Error(`the answer is larger than ${maxBytes} bytes`);
        chunks.push(chunk);
      },
      end: () => Promise.resolve(),
    };
    await attempt(start, opts, sink, signal);
    return Buffer.concat(chunks).toString("utf8");
  });
}
