import { createServer as createHttpServer, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { selfSignedServingCert } from "./pki.js";

// SIMULATION (test double). Health endpoints of the kubelet and of the control-plane components
// the simulation stands in for.

export interface ListeningServer {
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

function ok(res: ServerResponse) {
  // k8s.io/apiserver/pkg/server/healthz: 200 "ok", text/plain, nosniff.
  res.writeHead(200, {
    "Content-Type": "text/plain; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
  });
  res.end("ok");
}

async function listen(server: Server, host: string, port: number): Promise<ListeningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  return {
    address: addr.address,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The kubelet's healthz server (cmd/kubelet/app/server.go: when healthzPort > 0,
 * healthz.InstallHandler on a plain-HTTP mux at healthzBindAddress:healthzPort): /healthz
 * answers "ok"; every other path is 404.
 */
export function startKubeletHealthz(host: string, port: number): Promise<ListeningServer> {
  const server = createHttpServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") return ok(res);
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
    res.end("404 page not found\n");
  });
  return listen(server, host, port);
}

/**
 * The secure port of kube-controller-manager or kube-scheduler with no --tls-cert-file: a
 * self-signed serving certificate generated in memory (SecureServingOptions
 * MaybeDefaultWithSelfSignedCerts, for "localhost" and 127.0.0.1). /healthz, /livez and /readyz
 * are in --authorization-always-allow-paths by default, so anonymous requests get "ok"
 * (k8s.io/apiserver/pkg/server/options/authorization.go); anything else is Forbidden to them.
 */
export async function startComponentHealth(host: string, port: number): Promise<ListeningServer> {
  const { cert, key } = await selfSignedServingCert("localhost", ["127.0.0.1"], ["localhost"]);
  const server = createHttpsServer({ cert, key }, (req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (
      ["/healthz", "/livez", "/readyz"].includes(path) ||
      /^\/(healthz|livez|readyz)\//.test(path)
    ) {
      return ok(res);
    }
    res.writeHead(403, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `forbidden: User "system:anonymous" cannot get path "${path}"`,
        reason: "Forbidden",
        details: {},
        code: 403,
      }),
    );
  });
  return listen(server, host, port);
}
