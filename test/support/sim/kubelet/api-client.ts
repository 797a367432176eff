import { request } from "node:https";
import type { ClientConfig } from "./kubeconfig.js";

// SIMULATION (test double). The few REST calls the kubelet makes, over HTTPS with the
// credentials of a kubeconfig: a client certificate, or a bearer token (the bootstrap token of
// bootstrap-kubelet.conf). JSON in and out, as client-go's REST client with JSON content type.

export interface ApiResponse {
  status: number;
  body: string;
  /** The parsed JSON body, when it is JSON. */
  json?: Record<string, unknown>;
}

export interface Credentials {
  cert?: Buffer;
  key?: Buffer;
  token?: string;
}

export type ContentType =
  "application/json" | "application/strategic-merge-patch+json" | "application/merge-patch+json";

/** An API error with the status the server answered and its message. */
export class ApiStatusError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const REQUEST_TIMEOUT_MS = 10_000;

export class SimApiClient {
  constructor(
    private readonly cfg: ClientConfig,
    private readonly creds: Credentials,
    /** What the client authenticates as, for messages. */
    readonly description: string,
  ) {}

  get server(): string {
    return this.cfg.server;
  }

  /** The same server with other credentials. */
  withCredentials(creds: Credentials): SimApiClient {
    return new SimApiClient(this.cfg, { ...this.creds, ...creds }, this.description);
  }

  request(method: string, path: string, body?: unknown, contentType?: ContentType) {
    const url = new URL(path, this.cfg.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = {
      Accept: "application/json",
      "User-Agent": "kubelet/simulated (kubeforge test double)",
    };
    if (payload) {
      headers["Content-Type"] = contentType ?? "application/json";
      headers["Content-Length"] = String(payload.length);
    }
    if (this.creds.token) headers.Authorization = `Bearer ${this.creds.token}`;
    return new Promise<ApiResponse>((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          headers,
          ...(this.cfg.caData ? { ca: this.cfg.caData } : {}),
          ...(this.creds.cert && this.creds.key
            ? { cert: this.creds.cert, key: this.creds.key }
            : {}),
          ...(this.cfg.tlsServerName ? { servername: this.cfg.tlsServerName } : {}),
          rejectUnauthorized: !this.cfg.insecureSkipTLSVerify,
          timeout: REQUEST_TIMEOUT_MS,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let json: Record<string, unknown> | undefined;
            try {
              const parsed: unknown = JSON.parse(text);
              if (parsed && typeof parsed === "object") json = parsed as Record<string, unknown>;
            } catch {
              /* not JSON (/healthz answers "ok") */
            }
            resolve({ status: res.statusCode ?? 0, body: text, ...(json ? { json } : {}) });
          });
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${url.href}: timed out`)));
      req.on("error", (e) =>
        reject(new Error(`${method} ${url.href}: ${e.message}`, { cause: e })),
      );
      req.end(payload);
    });
  }

  /** Like request, but a non-2xx answer throws ApiStatusError. */
  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: ContentType,
  ): Promise<T> {
    const res = await this.request(method, path, body, contentType);
    if (res.status < 200 || res.status > 299) {
      const reason = typeof res.json?.reason === "string" ? res.json.reason : "";
      const message =
        typeof res.json?.message === "string" ? res.json.message : res.body.slice(0, 300);
      throw new ApiStatusError(
        res.status,
        reason,
        `${method} ${path} as ${this.description}: ${res.status} ${reason} ${message}`.trim(),
      );
    }
    return (res.json ?? {}) as T;
  }
}
