import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { posix } from "node:path";
import type { Host } from "../remote/host.js";
import { kubeClientFromKubeConfig } from "./client.js";
import { describeNetworkFailure } from "./errors.js";
import type { ClusterAccess, KubeClient, ProbeOptions, RawResponse } from "./types.js";

// The cluster as seen from a machine kubeforge reaches directly: kubeconfig files (and the
// certificates they reference, such as kubelet.conf's kubelet-client-current.pem) are read
// through the node's Host, so --rootfs and remote hosts map paths; requests leave from this
// process.

export interface NodeClusterAccessOptions {
  /** Bound on each API request (default 30 s). */
  requestTimeoutMs?: number;
}

// Health bodies are short ("ok", a /livez?verbose report); more is never needed.
const MAX_PROBE_BODY = 64 * 1024;

/** One GET from this process; resolves with any HTTP answer, rejects only when none arrives. */
export function httpGet(url: string, opts: ProbeOptions): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
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
        ...(secure ? { rejectUnauthorized: opts.insecureSkipTLSVerify !== true } : {}),
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
 * ClusterAccess for a node: its Host reads the files. Probes of node-local endpoints (the
 * kubelet's healthz, the controller-manager and scheduler on 127.0.0.1) are made on the node, as
 * kubeadm makes them: through the host's forwarding when it is remote (SSH), from this process
 * when the host is this machine.
 */
export class NodeClusterAccess implements ClusterAccess {
  private readonly forwards = new Map<string, Promise<string>>();

  constructor(
    private readonly host: Host,
    private readonly opts: NodeClusterAccessOptions = {},
  ) {}

  /** The URL that reaches `url` as the node sees it. */
  private async onNode(url: string): Promise<string> {
    const forward = this.host.forward?.bind(this.host);
    if (!forward) return url;
    const target = new URL(url);
    const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
    const hostname = target.hostname.replace(/^\[|\]$/g, "");
    const key = `${hostname}:${port}`;
    let local = this.forwards.get(key);
    if (!local) {
      local = forward(hostname, port).then((f) => `127.0.0.1:${f.port}`);
      // A failed forward is not cached: the next attempt of a poll tries again.
      local.catch(() => this.forwards.delete(key));
      this.forwards.set(key, local);
    }
    target.host = await local;
    return target.toString();
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
      ...(opts.server === undefined ? {} : { server: opts.server }),
      ...(this.opts.requestTimeoutMs === undefined
        ? {}
        : { requestTimeoutMs: this.opts.requestTimeoutMs }),
    });
  }

  async probe(url: string, opts: ProbeOptions): Promise<RawResponse> {
    return httpGet(await this.onNode(url), opts);
  }
}
