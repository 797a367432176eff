// TEST DOUBLE for the kube/ unit tests only: an HTTPS server that answers like kube-apiserver
// (metav1.Status bodies, 201 on create, 409 AlreadyExists/Conflict, resourceVersion checks), with
// throwaway certificates made by openssl, and hooks to script failures. It records every request
// with the client certificate subject and Authorization header it arrived with. (The simulated
// control plane shared by phase tests lives in test/support/sim.)
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestPKI {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second CA that signed nothing the server uses. */
  otherCaCert: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

/** CA, a server certificate for 127.0.0.1 and a client certificate (CN kubernetes-admin). */
export function makePKI(): TestPKI {
  const dir = mkdtempSync(join(tmpdir(), "kubeforge-kube-pki-"));
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  const ca = (name: string, cn: string) =>
    openssl(dir, [
      "req",
      "-x509",
      ...ec,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
      "-subj",
      `/CN=${cn}`,
      "-days",
      "1",
    ]);
  ca("ca", "kubernetes");
  ca("other-ca", "not-kubernetes");
  const leaf = (name: string, subject: string, ext: string) => {
    openssl(dir, ["req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject]);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(dir, [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      "-extfile",
      `${name}.ext`,
    ]);
  };
  leaf(
    "server",
    "/CN=kube-apiserver",
    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
  );
  leaf("client", "/O=kubeadm:cluster-admins/CN=kubernetes-admin", "extendedKeyUsage=clientAuth\n");
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return {
    dir,
    caCert: read("ca.crt"),
    caKey: read("ca.key"),
    serverCert: read("server.crt"),
    serverKey: read("server.key"),
    clientCert: read("client.crt"),
    clientKey: read("client.key"),
    otherCaCert: read("other-ca.crt"),
  };
}

export function removePKI(pki: TestPKI): void {
  rmSync(pki.dir, { recursive: true, force: true });
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  authorization: string | undefined;
  /** Subject CN of the client certificate, if one was presented. */
  clientCN: string | undefined;
  body: string;
}

export interface Reply {
  status: number;
  body: unknown;
}

/** metav1.Status as kube-apiserver writes it. */
export function status(code: number, reason: string, message: string): Reply {
  return {
    status: code,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      code,
    },
  };
}

/** Returns a reply to override the store, or undefined to let the store answer. */
export type Hook = (req: RecordedRequest) => Reply | undefined;

interface Stored {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    [k: string]: unknown;
  };
  [field: string]: unknown;
}

function resourceOfPath(path: string): { plural: string; name?: string } {
  const parts = path.split("/").filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const rest = parts[0] === "api" ? parts.slice(2) : parts.slice(3);
  const scoped = rest[0] === "namespaces" && rest.length >= 3 ? rest.slice(2) : rest;
  return scoped.length > 1 ? { plural: scoped[0]!, name: scoped[1]! } : { plural: scoped[0]! };
}

export class FakeAPIServer {
  readonly requests: RecordedRequest[] = [];
  readonly objects = new Map<string, Stored>();
  hooks: Hook[] = [];
  private server!: Server;
  private serial = 0;
  url = "";

  constructor(private readonly pki: TestPKI) {}

  async start(): Promise<void> {
    this.server = createServer(
      {
        key: this.pki.serverKey,
        cert: this.pki.serverCert,
        ca: this.pki.caCert,
        requestCert: true,
        rejectUnauthorized: false,
      },
      (req, res) => void this.handle(req, res),
    );
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Puts an object in the store as if it had been created. */
  seed(path: string, obj: Stored): void {
    this.serial++;
    this.objects.set(path, {
      ...obj,
      metadata: {
        ...obj.metadata,
        uid: `uid-${this.serial}`,
        resourceVersion: String(this.serial),
      },
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", "https://localhost");
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    const recorded: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      contentType: req.headers["content-type"],
      authorization: req.headers.authorization,
      clientCN: peer && peer.subject ? (peer.subject.CN as string) : undefined,
      body: Buffer.concat(chunks).toString("utf8"),
    };
    this.requests.push(recorded);
    let reply: Reply | undefined;
    for (const hook of this.hooks) {
      reply = hook(recorded);
      if (reply) break;
    }
    reply ??= this.store(recorded);
    if (reply.status === -1) {
      req.socket.destroy(); // a dropped connection
      return;
    }
    const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      "content-type": typeof reply.body === "string" ? "text/plain" : "application/json",
    });
    res.end(text);
  }

  private store(req: RecordedRequest): Reply {
    const { plural, name } = resourceOfPath(req.path);
    const notFound = () => status(404, "NotFound", `${plural} "${name}" not found`);
    if (req.method === "POST") {
      const obj = JSON.parse(req.body) as Stored;
      const path = `${req.path}/${obj.metadata.name}`;
      if (this.objects.has(path)) {
        return status(409, "AlreadyExists", `${plural} "${obj.metadata.name}" already exists`);
      }
      this.seed(path, obj);
      return { status: 201, body: this.objects.get(path) };
    }
    const existing = this.objects.get(req.path);
    if (req.method === "GET") {
      if (name !== undefined) return existing ? { status: 200, body: existing } : notFound();
      const items = [...this.objects.entries()]
        .filter(([path]) => path.startsWith(`${req.path}/`))
        .map(([, obj]) => {
          const { apiVersion: _a, kind: _k, ...rest } = obj;
          return rest;
        });
      return { status: 200, body: { kind: "List", apiVersion: "v1", metadata: {}, items } };
    }
    if (!existing) return notFound();
    if (req.method === "PUT") {
      const obj = JSON.parse(req.body) as Stored;
      const rv = obj.metadata.resourceVersion;
      if (rv && rv !== "0" && rv !== existing.metadata.resourceVersion) {
        return status(
          409,
          "Conflict",
          `Operation cannot be fulfilled on ${plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        );
      }
      this.serial++;
      const updated = {
        ...obj,
        metadata: {
          ...obj.metadata,
          uid: existing.metadata.uid,
          resourceVersion: String(this.serial),
        },
      };
      this.objects.set(req.path, updated);
      return { status: 200, body: updated };
    }
    if (req.method === "PATCH") return { status: 200, body: existing };
    if (req.method === "DELETE") {
      this.objects.delete(req.path);
      return { status: 200, body: { kind: "Status", apiVersion: "v1", status: "Success" } };
    }
    return status(405, "MethodNotAllowed", "the server does not allow this method");
  }
}

/** A kubeconfig for the fake server, with the given user fields and cluster fields. */
export function kubeconfigText(
  server: string,
  cluster: Record<string, unknown>,
  user: Record<string, unknown> | undefined,
): string {
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "kubernetes", cluster: { server, ...cluster } }],
    contexts: [{ name: "ctx", context: { cluster: "kubernetes", user: "u" } }],
    "current-context": "ctx",
    users: user === undefined ? [] : [{ name: "u", user }],
  };
  return JSON.stringify(doc); // JSON is YAML
}

export const b64 = (text: string): string => Buffer.from(text).toString("base64");
