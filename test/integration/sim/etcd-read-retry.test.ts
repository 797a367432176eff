// The SIMULATED kube-apiserver's etcd client retries as kube-apiserver's does (etcd's clientv3
// unary retry interceptor, client/v3/retry_interceptor.go and options.go): a read that etcd
// answers with gRPC Unavailable ("leader changed" after an election) is sent again, 100 attempts
// in all; a write is sent at most once; a read that etcd's own request timeout ended is not sent
// again. A real etcd (Debian's) behind a fault-injecting proxy gives the errors.
import type { ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePorts } from "../../support/ports.js";
import { startTlsEtcd } from "../../support/tls-etcd.js";
import { startFakeApiServer, type FakeApiServer } from "../../support/sim/apiserver/index.js";
import { makeCA, makeLeaf } from "../../support/sim/apiserver/test-pki.js";
import { startEtcdFaultProxy, type EtcdFaultProxy } from "../../support/sim/etcd-fault-proxy.js";

const LEADER_CHANGED = { code: 14, error: "etcdserver: leader changed" };

let dir: string;
let etcd: ChildProcess;
let proxy: EtcdFaultProxy;
let api: FakeApiServer;
let caPem: string;
let admin: { cert: string; key: string };

function call(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      new URL(path, api.url),
      {
        method,
        headers: { Accept: "application/json", "Content-Type": "application/json" },
        ca: caPem,
        agent: false,
        ...admin,
      },
      (res) => {
        let out = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (out += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: out }));
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

const configMap = (name: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data: { a: "1" },
});
const cmPath = (name = "") => `/api/v1/namespaces/default/configmaps${name ? `/${name}` : ""}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-sim-etcd-retry-"));
  const etcdCA = await makeCA(dir, "etcd-ca");
  const server = await makeLeaf(dir, "etcd-server", etcdCA, {
    cn: "etcd",
    eku: "serverAuth,clientAuth",
    san: "IP:127.0.0.1,DNS:localhost",
  });
  const client = await makeLeaf(dir, "apiserver-etcd-client", etcdCA, {
    cn: "kube-apiserver-etcd-client",
  });
  const ca = await makeCA(dir, "ca");
  caPem = await readFile(ca.cert, "utf8");
  const serving = await makeLeaf(dir, "apiserver", ca, {
    cn: "kube-apiserver",
    eku: "serverAuth",
    san: "IP:127.0.0.1,DNS:localhost",
  });
  const adminPair = await makeLeaf(dir, "admin", ca, {
    cn: "kubernetes-admin",
    orgs: ["system:masters"],
  });
  admin = {
    cert: await readFile(adminPair.cert, "utf8"),
    key: await readFile(adminPair.key, "utf8"),
  };
  const [clientPort, peerPort] = await freePorts(2);
  etcd = startTlsEtcd({
    dataDir: join(dir, "etcd-data"),
    clientPort: clientPort!,
    peerPort: peerPort!,
    certFile: server.cert,
    keyFile: server.key,
    trustedCAFile: etcdCA.cert,
    logFile: join(dir, "etcd.log"),
  });
  proxy = await startEtcdFaultProxy({
    target: `https://127.0.0.1:${clientPort}`,
    certFile: server.cert,
    keyFile: server.key,
    caFile: etcdCA.cert,
    clientCertFile: server.cert,
    clientKeyFile: server.key,
  });
  api = await startFakeApiServer({
    securePort: 0,
    tlsCertFile: serving.cert,
    tlsPrivateKeyFile: serving.key,
    clientCAFile: ca.cert,
    enableBootstrapTokenAuth: false,
    serviceClusterIPRange: "10.96.0.0/12",
    etcd: {
      servers: [proxy.url],
      caFile: etcdCA.cert,
      certFile: client.cert,
      keyFile: client.key,
      requestTimeoutMs: 10_000,
    },
  });
}, 60_000);

afterAll(async () => {
  await api?.stop();
  await proxy?.stop();
  if (etcd && etcd.exitCode === null) {
    const exited = new Promise((r) => etcd.once("exit", r));
    etcd.kill("SIGTERM");
    await exited;
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the simulated API server's etcd client", () => {
  afterEach(() => proxy.clear());

  it("sends a read again when etcd answers 'leader changed', as clientv3 does", async () => {
    expect((await call("POST", cmPath(), configMap("after-election"))).status).toBe(201);
    await proxy.arm({ path: "/v3/kv/range", n: 3, ...LEADER_CHANGED });
    const got = await call("GET", cmPath("after-election"));
    expect(got.status, got.text).toBe(200);
    expect(JSON.parse(got.text)).toMatchObject({ data: { a: "1" } });
    expect(await proxy.left()).toEqual([0]);
  });

  it("gives up after clientv3's 100 attempts, with etcd's error as a 500", async () => {
    await proxy.arm({ path: "/v3/kv/range", n: 1000, ...LEADER_CHANGED });
    const got = await call("GET", cmPath("after-election"));
    expect(got.status).toBe(500);
    expect(got.text).toContain("etcdserver: leader changed");
    expect(await proxy.left()).toEqual([900]);
  });

  it("does not send a write again (at most once): the client gets the 500", async () => {
    await proxy.arm({ path: "/v3/kv/txn", n: 1, ...LEADER_CHANGED });
    const created = await call("POST", cmPath(), configMap("during-election"));
    expect(created.status).toBe(500);
    expect(created.text).toContain("etcdserver: leader changed");
    expect((await call("GET", cmPath("during-election"))).status).toBe(404);
  });

  it("does not send a read again that etcd's own request timeout ended", async () => {
    await proxy.arm({
      path: "/v3/kv/range",
      n: 1,
      code: 14,
      error: "etcdserver: request timed out",
    });
    const got = await call("GET", cmPath("after-election"));
    expect(got.status).toBe(500);
    expect(got.text).toContain("etcdserver: request timed out");
    expect((await call("GET", cmPath("after-election"))).status).toBe(200);
  });
});
