// A fault injector in front of a real etcd's client port: HTTPS in, HTTPS with the client
// certificate out, every request and its (streaming) answer passed through, except the next `n`
// requests to an armed path, which get the answer etcd's gRPC gateway gives for a gRPC error
// (HTTP 503, {"error", "code", "message"}). It runs in its own process: a simulated API server in
// the test's process blocks that process's event loop while it waits for etcd.
import { spawn, type ChildProcess } from "node:child_process";
import { request } from "node:http";
import { createInterface } from "node:readline";

export interface EtcdFault {
  /** The gateway path, e.g. "/v3/kv/range". */
  path: string;
  /** How many requests to answer with the error. */
  n: number;
  /** The gRPC code: 14 is Unavailable. */
  code: number;
  error: string;
}

export interface EtcdFaultProxy {
  /** The URL to give the API server instead of etcd's. */
  url: string;
  arm(fault: EtcdFault): Promise<void>;
  /** How many requests of each armed fault are still to be failed, in the order armed. */
  left(): Promise<number[]>;
  /** Disarms every fault. */
  clear(): Promise<void>;
  stop(): Promise<void>;
}

const PROXY = String.raw`
const https = require("node:https"), http = require("node:http"), fs = require("node:fs");
const [target, cert, key, ca, clientCert, clientKey] = process.argv.slice(1);
const faults = [];
const agent = new https.Agent({
  keepAlive: true, ca: fs.readFileSync(ca), cert: fs.readFileSync(clientCert), key: fs.readFileSync(clientKey),
});
const proxy = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  const fault = faults.find((f) => f.path === req.url && f.n > 0);
  if (fault) {
    fault.n--;
    req.resume();
    res.writeHead(503, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: fault.error, code: fault.code, message: fault.error }));
    return;
  }
  const up = https.request(new URL(req.url, target), { method: req.method, headers: req.headers, agent }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on("error", () => res.destroy());
  res.on("close", () => up.destroy());
  req.pipe(up);
});
const control = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    if (req.method === "POST") faults.push(JSON.parse(body));
    if (req.method === "DELETE") faults.length = 0;
    res.end(JSON.stringify(faults.map((f) => f.n)));
  });
});
proxy.listen(0, "127.0.0.1", () =>
  control.listen(0, "127.0.0.1", () =>
    console.log(JSON.stringify({ proxy: proxy.address().port, control: control.address().port })),
  ),
);
`;

export interface EtcdFaultProxyOptions {
  /** etcd's client URL. */
  target: string;
  /** The proxy's serving certificate and key (files), trusted by the etcd CA the client uses. */
  certFile: string;
  keyFile: string;
  /** What the proxy presents to etcd: its CA and a client certificate (files). */
  caFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

export async function startEtcdFaultProxy(o: EtcdFaultProxyOptions): Promise<EtcdFaultProxy> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["-e", PROXY, o.target, o.certFile, o.keyFile, o.caFile, o.clientCertFile, o.clientKeyFile],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const first = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the etcd fault proxy exited (${code})`)));
  });
  const ports = JSON.parse(first) as { proxy: number; control: number };
  const control = (method: "GET" | "POST" | "DELETE", body?: EtcdFault) =>
    new Promise<number[]>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port: ports.control, method }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve(JSON.parse(text) as number[]));
      });
      req.on("error", reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });
  return {
    url: `https://127.0.0.1:${ports.proxy}`,
    arm: async (fault) => void (await control("POST", fault)),
    left: () => control("GET"),
    clear: async () => void (await control("DELETE")),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
