import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import { rootCertificates } from "node:tls";

// HTTP(S) downloads with the behaviour release downloads need: redirects followed (GitHub
// release URLs answer 302 to their object store), a per-request idle timeout, and retries with
// back-off for transient failures only (5xx, connection errors, timeouts, truncated bodies);
// never for 4xx answers, whose retry would only repeat the answer.

export interface DownloadOptions {
  /** An extra CA trusted on top of the system's (a private mirror, or tests). */
  ca?: string | Buffer;
  /** Socket idle timeout: connecting, waiting for headers, or a stalled body. Default 60 s. */
  timeoutMs?: number;
  /** Retries after the first attempt for transient failures. Default 3. */
  retries?: number;
  /** First back-off delay, doubled per retry (at most 8 s). Default 500 ms. */
  retryDelayMs?: number;
  maxRedirects?: number;
  log?: (line: string) => void;
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

function requestOnce(
  url: URL,
  opts: DownloadOptions,
  onResponse: (res: http.IncomingMessage) => Promise<void>,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const lib = url.protocol === "https:" ? https : http;
    const req = lib.request(
      url,
      {
        method: "GET",
        agent: false,
        headers: { "user-agent": "kubeforge", accept: "*/*" },
        ...(opts.ca && url.protocol === "https:" ? { ca: [...rootCertificates, opts.ca] } : {}),
      },
      (res) => {
        onResponse(res).then(resolve, reject);
      },
    );
    req.setTimeout(timeoutMs, () => {
      req.destroy(new Transient(`no data for ${timeoutMs} ms`));
    });
    req.on("error", (e) => reject(e));
    req.end();
  });
}

/** Reads a response body into the sink, checking its length against Content-Length. */
function drain(res: http.IncomingMessage, sink: Sink): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let received = 0;
    let failed = false;
    const expected = res.headers["content-length"];
    const fail = (e: Error) => {
      if (failed) return;
      failed = true;
      reject(e);
    };
    res.on("data", (chunk: Buffer) => {
      received += chunk.length;
      try {
        sink.write(chunk);
      } catch (e) {
        fail(e as Error);
        res.destroy();
      }
    });
    const cut = (detail: string) =>
      fail(
        new Transient(
          expected !== undefined
            ? `the body was truncated (${received} of ${expected} bytes; ${detail})`
            : `${detail} after ${received} bytes`,
        ),
      );
    res.on("aborted", () => cut("the connection closed"));
    res.on("error", (e) => cut(`the connection failed: ${e.message}`));
    res.on("end", () => {
      if (failed) return;
      if (expected !== undefined && Number(expected) !== received) {
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

/** One attempt: follows redirects, streams the final 200 body into the sink. */
async function attempt(
  start: URL,
  opts: DownloadOptions,
  sink: Sink,
): Promise<{ contentType: string | undefined; finalUrl: string; size: number }> {
  let url = start;
  const maxRedirects = opts.maxRedirects ?? 10;
  for (let hop = 0; ; hop++) {
    let next: URL | undefined;
    let result: { contentType: string | undefined; size: number } | undefined;
    // Emptied before the request, not once the answer is in: an await between the response and
    // drain's listeners could miss a connection cut meanwhile and wait forever.
    await sink.reset();
    await requestOnce(url, opts, async (res) => {
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        res.resume();
        const location = res.headers.location;
        if (!location) throw new Error(`HTTP ${status} without a Location header from ${url.href}`);
        next = new URL(location, url);
        return;
      }
      if (status !== 200) {
        res.resume();
        const text = `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ""}${url.href !== start.href ? ` from ${url.href}` : ""}`;
        throw status >= 500 ? new Transient(text) : new Error(text);
      }
      const size = await drain(res, sink);
      await sink.end();
      result = { contentType: res.headers["content-type"], size };
    });
    if (result) return { ...result, finalUrl: url.href };
    if (!next) throw new Error(`no answer from ${url.href}`);
    if (hop + 1 > maxRedirects) throw new Error(`more than ${maxRedirects} redirects`);
    if (url.protocol === "https:" && next.protocol !== "https:") {
      throw new Error(`a redirect from HTTPS to ${next.href} (refused)`);
    }
    url = next;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Runs `attempt` with retries for transient failures; the error names `url` in one sentence. */
async function withRetries<T>(
  url: string,
  opts: DownloadOptions,
  run: () => Promise<T>,
): Promise<T> {
  const retries = opts.retries ?? 3;
  let delay = opts.retryDelayMs ?? 500;
  for (let n = 0; ; n++) {
    try {
      return await run();
    } catch (e) {
      const reason =
        e instanceof Transient ? e.message : (networkReason(e) ?? (e as Error).message);
      const retryable = e instanceof Transient || networkReason(e) !== undefined;
      if (retryable && n < retries) {
        opts.log?.(`downloading ${url}: ${reason}; retrying in ${delay} ms`);
        await sleep(delay);
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
  return withRetries(url, opts, async () => {
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
      const r = await attempt(start, opts, sink);
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
  return withRetries(url, opts, async () => {
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
    await attempt(start, opts, sink);
    return Buffer.concat(chunks).toString("utf8");
  });
}
