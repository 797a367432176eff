import { STATUS_CODES } from "node:http";
import { request, type RequestOptions } from "node:https";
// By namespace: getCACertificates is newer than the Node versions the bundle must still load on
// to say that it needs Node 24 (scripts/build-options.mjs).
import * as tls from "node:tls";
import { formatGoDuration } from "../../config/duration.js";
import { urlTarget, verifyServerAs, type Route } from "../../remote/route.js";
import { describeNetworkFailure } from "../errors.js";

// HTTPS discovery's download (kubeadm: discovery/https/https.go RetrieveValidatedConfigInfo): a
// plain GET of the URL trusting the host's CA bundle, whose body is then read as a kubeconfig.
// Go's client follows up to 10 redirects; kubeforge follows them too, but only to https URLs,
// and, unlike kubeadm, refuses a non-2xx answer instead of parsing an error page.

const MAX_REDIRECTS = 10;
// A kubeconfig with embedded certificates is a few KB; anything this large is not one.
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface HttpsDownloadOptions {
  /** Bounds the whole download, redirects included. */
  timeoutMs: number;
  /** PEM certificates trusted besides the host's (a private CA; tests). */
  extraCACerts?: string | Buffer | readonly (string | Buffer)[];
  /** How the joining node reaches the URL's host from this process; default directly. */
  route?: Route;
}

/**
 * The CAs an HTTPS discovery URL is checked against: the host's certificate store (what Go's
 * crypto/x509 uses on Linux), Node's bundled Mozilla roots and NODE_EXTRA_CA_CERTS, and any
 * `extra` given.
 */
export function discoveryTrustStore(
  extra?: string | Buffer | readonly (string | Buffer)[],
): (string | Buffer)[] {
  const store: (string | Buffer)[] = [];
  try {
    store.push(...tls.getCACertificates("default"), ...tls.getCACertificates("system"));
  } catch {
    store.push(...tls.rootCertificates);
  }
  if (typeof extra === "string" || Buffer.isBuffer(extra)) store.push(extra);
  else if (extra !== undefined) store.push(...extra);
  return store;
}

interface Answer {
  status: number;
  location?: string;
  contentType?: string;
  body: Buffer;
}

/**
 * Connection options sending the request for `url` to its routed address: the certificate is
 * checked against the URL's host and the Host header still names it (virtual hosts).
 */
async function routedOptions(url: URL, route: Route | undefined): Promise<RequestOptions> {
  if (!route) return {};
  const { host, port } = urlTarget(url);
  const to = await route(host, port);
  if (to.host === host && to.port === port) return {};
  return {
    hostname: to.host,
    port: to.port,
    ...verifyServerAs(host, to.host),
    headers: { Accept: "*/*", Host: url.host },
  };
}

function getOnce(
  url: URL,
  ca: (string | Buffer)[],
  signal: AbortSignal,
  via: RequestOptions,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "GET", ca, agent: false, signal, headers: { Accept: "*/*" }, ...via },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            req.destroy(new Error(`the answer is larger than ${MAX_BODY_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(res.headers.location ? { location: res.headers.location } : {}),
            ...(res.headers["content-type"] ? { contentType: res.headers["content-type"] } : {}),
            body: Buffer.concat(chunks),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** GET `url` over verified TLS; throws one sentence naming the URL when no kubeconfig came back. */
export async function downloadDiscoveryFile(
  url: string,
  opts: HttpsDownloadOptions,
): Promise<Buffer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch (e) {
    throw new Error(`"${url}" is not a valid URL`, { cause: e });
  }
  const ca = discoveryTrustStore(opts.extraCACerts);
  const signal = AbortSignal.timeout(opts.timeoutMs);
  for (let redirects = 0; ; redirects++) {
    if (target.protocol !== "https:") {
      throw new Error(
        `cannot download the discovery file ${url}: ${target.href} is not an https URL`,
      );
    }
    let answer: Answer;
    try {
      answer = await getOnce(target, ca, signal, await routedOptions(target, opts.route));
    } catch (e) {
      const why = signal.aborted
        ? `no answer within ${formatGoDuration(opts.timeoutMs)}`
        : describeNetworkFailure(e).text;
      throw new Error(`cannot download the discovery file ${url}: ${why}`, { cause: e });
    }
    if (answer.status >= 300 && answer.status < 400 && answer.location) {
      if (redirects >= MAX_REDIRECTS) {
        throw new Error(
          `cannot download the discovery file ${url}: stopped after ${MAX_REDIRECTS} redirects`,
        );
      }
      target = new URL(answer.location, target);
      continue;
    }
    if (answer.status < 200 || answer.status > 299) {
      throw new Error(
        `cannot download the discovery file ${url}: the server answered ${answer.status} ${STATUS_CODES[answer.status] ?? ""}`.trimEnd(),
      );
    }
    if (answer.contentType && /^\s*text\/html\b/i.test(answer.contentType)) {
      throw new Error(
        `the discovery file ${url} is not a kubeconfig: the server sent an HTML page`,
      );
    }
    return answer.body;
  }
}
