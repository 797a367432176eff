import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { posix } from "node:path";
import type { ConnectionOptions } from "node:tls";
import type { Host } from "../remote/host.js";
import { routeThrough, routeURL, verifyServerAs, type Route } from "../remote/route.js";
import { kubeClientFromKubeConfig } from "./client.js";
import { describeNetworkFailure } from "./errors.js";
import type { ClusterAccess, KubeClient, ProbeOptions, RawResponse } from "./types.js";

// The cluster as seen from a machine kubeforge reaches directly: kubeconfig files (and the
// certificates they reference, such as kubelet.conf's kubelet-client-current.pem) are read
// through the node's Host, so --rootfs and remote hosts map paths; requests leave from this
// process, along the node's Route (remote/route.ts): directly when this process reaches the
// address, else through the node's SSH connection, so they connect as the node would.

export interface NodeClusterAccessOptions {
  /** Bound on each API request (default 30 s). */
  requestTimeoutMs?: number;
  /** How connections reach what the node sees; default the node's shared routeThrough(host). */
  route?: Route;
}

// Health bodies are short ("ok", a /livez?verbose report); more is never needed.
const MAX_PROBE_BODY = 64 * 1024;

/** Where a probe connects instead of its URL's own address (remote/route.ts). */
export interface ProbeVia {
  /** The routed URL: same path, the routed host and port. */
  url: string;
  /** TLS options verifying the server as the original URL's host. */
  tls: ConnectionOptions;
}

/**
 * One GET from this process; resolves with any HTTP answer, rejects only when none arrives.
 * With `via`, the request goes to the routed address; messages still name `url`.
 */
export function httpGet(url: string, opts: ProbeOptions, via?: ProbeVia): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(via?.url ?? url);
    } catch (e) {
      reject(new Error(`"${url}" is not a URL`, { cause: e }));
      return;
    }
    const secure = target.protocol === "https:";
    if (!secure && target.protocol !== "http:") {
      reject(new Error(`cannot probe ${url}: only http and https are supported`));
      return;
    }
    const send = secure ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: "GET",
        timeout: opts.timeoutMs,
        // No keep-alive: a probe must not hold the process open once the wait is over.
        agent: false,
        ...(secure ? { ...via?.tls, rejectUnauthorized: opts.insecureSkipTLSVerify !== true } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          if (size < MAX_PROBE_BODY) chunks.push(chunk);
          size += chunk.length;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8").slice(0, MAX_PROBE_BODY),
          }),
        );
        res.on("error", (e) =>
          reject(new Error(`GET ${url}: ${describeNetworkFailure(e).text}`, { cause: e })),
        );
      },
    );
    req.on("timeout", () => {
      const timeout = Object.assign(new Error(`no answer within ${opts.timeoutMs} ms`), {
        name: "TimeoutError",
      });
      req.destroy(timeout);
    });
    req.on("error", (e) => {
      reject(
        new Error(`GET ${url}: ${describeNetworkFailure(e, opts.timeoutMs).text}`, { cause: e }),
      );
    });
    req.end();
  });
}

/**
 * ClusterAccess for a node: its Host reads the files, its Route carries the connections. Probes
 * of node-local endpoints (the kubelet's healthz, the controller-manager and scheduler on
 * 127.0.0.1) and API requests are made as kubeadm makes them on the node: over a remote host
 * (SSH) through its forwarding when this process cannot connect itself (always for loopback),
 * from this process when the host is this machine.
 */
export class NodeClusterAccess implements ClusterAccess {
  private readonly route: Route;

  constructor(
    private readonly host: Host,
    private readonly opts: NodeClusterAccessOptions = {},
  ) {
    this.route = opts.route ?? routeThrough(host);
  }

  async clientFor(kubeconfigPath: string, opts: { server?: string } = {}): Promise<KubeClient> {
    let text: string;
    try {
      text = (await this.host.readFile(kubeconfigPath)).toString("utf8");
    } catch (e) {
      throw new Error(`cannot read the kubeconfig ${kubeconfigPath}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    return kubeClientFromKubeConfig(text, {
      description: kubeconfigPath,
      readFile: (path) => this.host.readFile(path),
      baseDir: posix.dirname(kubeconfigPath),
      route: this.route,
      ...(opts.server === undefined ? {} : { server: opts.server }),
      ...(this.opts.requestTimeoutMs === undefined
        ? {}
        : { requestTimeoutMs: this.opts.requestTimeoutMs }),
    });
  }

  async probe(url: string, opts: ProbeOptions): Promise<RawResponse> {
    // Not a URL, or not http(s): httpGet says so.
    if (!/^https?:\/\/[^/]/i.test(url) || !URL.canParse(url)) return httpGet(url, opts);
    const routed = await routeURL(this.route, url);
    if (routed.url === url) return httpGet(url, opts);
    return httpGet(url, opts, {
      url: routed.url,
      tls: verifyServerAs(routed.original, routed.routed),
    });
  }
}
