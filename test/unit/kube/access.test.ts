import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import {
  connect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import { LocalHost } from "../../../src/remote/local.js";
import {
  b64,
  FakeAPIServer,
  kubeconfigText,
  makePKI,
  removePKI,
  type TestPKI,
} from "./fake-apiserver.js";

let pki: TestPKI;
let server: FakeAPIServer;
let rootfs: string;
let host: LocalHost;

beforeAll(async () => {
  pki = makePKI();
  server = new FakeAPIServer(pki);
  await server.start();
});

afterAll(async () => {
  await server.stop();
  removePKI(pki);
});

beforeEach(() => {
  server.requests.length = 0;
  rootfs = mkdtempSync(join(tmpdir(), "kubeforge-access-"));
  host = new LocalHost({ rootfs });
  return () => rmSync(rootfs, { recursive: true, force: true });
});

describe("NodeClusterAccess.clientFor", () => {
  it("reads kubelet.conf and the certificate it references through the host (rootfs-mapped)", async () => {
    await host.writeFile("/etc/kubernetes/pki/ca.crt", pki.caCert, 0o644);
    await host.writeFile(
      "/var/lib/kubelet/pki/kubelet-client-current.pem",
      pki.clientCert + pki.clientKey,
      0o600,
    );
    const pem = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    await host.writeFile(
      "/etc/kubernetes/kubelet.conf",
      kubeconfigText(
        server.url,
        { "certificate-authority": "/etc/kubernetes/pki/ca.crt" },
        { "client-certificate": pem, "client-key": pem },
      ),
      0o600,
    );
    const client = await new NodeClusterAccess(host).clientFor("/etc/kubernetes/kubelet.conf");
    expect(client.description).toBe("/etc/kubernetes/kubelet.conf");
    await client.getRaw("/version");
    expect(server.requests[0]!.clientCN).toBe("kubernetes-admin");
  });

  it("points the client at another server when asked", async () => {
    await host.writeFile(
      "/etc/kubernetes/admin.conf",
      kubeconfigText(
        "https://192.0.2.1:6443",
        { "certificate-authority-data": b64(pki.caCert) },
        { token: "t" },
      ),
      0o600,
    );
    const client = await new NodeClusterAccess(host).clientFor("/etc/kubernetes/admin.conf", {
      server: server.url,
    });
    await client.getRaw("/livez");
    expect(server.requests.map((r) => r.path)).toEqual(["/livez"]);
  });

  it("names the kubeconfig it cannot read", async () => {
    await expect(
      new NodeClusterAccess(host).clientFor("/etc/kubernetes/admin.conf"),
    ).rejects.toThrow(/^cannot read the kubeconfig \/etc\/kubernetes\/admin\.conf: ENOENT/);
  });
});

describe("NodeClusterAccess.probe", () => {
  let plain: Server;
  let plainURL: string;

  beforeAll(async () => {
    plain = createServer((req, res) =>
      res.writeHead(req.url === "/healthz" ? 500 : 404).end("[-]poststarthook failed"),
    );
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    plainURL = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => plain.close(() => resolve())));

  it("resolves with any HTTP answer", async () => {
    const access = new NodeClusterAccess(host);
    expect(await access.probe(`${plainURL}/healthz`, { timeoutMs: 1000 })).toEqual({
      status: 500,
      body: "[-]poststarthook failed",
    });
  });

  it("rejects when nothing answers", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/healthz`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(new NodeClusterAccess(host).probe(url, { timeoutMs: 1000 })).rejects.toThrow(
      `GET ${url}: connect ECONNREFUSED`,
    );
  });

  it("checks certificates unless told not to (component endpoints are self-signed)", async () => {
    const access = new NodeClusterAccess(host);
    await expect(access.probe(`${server.url}/livez`, { timeoutMs: 1000 })).rejects.toThrow(
      /certificate/,
    );
    const answer = await access.probe(`${server.url}/livez`, {
      timeoutMs: 1000,
      insecureSkipTLSVerify: true,
    });
    expect(answer.status).toBe(200);
    expect(server.requests.at(-1)!.clientCN).toBeUndefined();
  });
});

describe("NodeClusterAccess over a host that forwards ports", () => {
  /** Forwards by relaying from this machine, recording each target it was asked for. */
  class RelayHost extends LocalHost {
    forwarded: string[] = [];
    private readonly servers: NetServer[] = [];
    private readonly sockets = new Set<Socket>();

    async forward(targetHost: string, targetPort: number) {
      this.forwarded.push(`${targetHost}:${targetPort}`);
      const relay = createNetServer((inbound) => {
        const outbound = connect(targetPort, targetHost);
        this.sockets.add(inbound).add(outbound);
        inbound.pipe(outbound).pipe(inbound);
        inbound.on("error", () => outbound.destroy());
        outbound.on("error", () => inbound.destroy());
      });
      await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
      this.servers.push(relay);
      return {
        port: (relay.address() as AddressInfo).port,
        close: () => new Promise<void>((resolve) => relay.close(() => resolve())),
      };
    }

    override async close() {
      for (const s of this.sockets) s.destroy();
      await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
    }
  }

  it("probes the node's loopback through the host, the URL named as given", async () => {
    const relay = new RelayHost({ rootfs });
    const access = new NodeClusterAccess(relay);
    const answer = await access.probe(`${server.url}/livez`, {
      timeoutMs: 1000,
      insecureSkipTLSVerify: true,
    });
    expect(answer.status).toBe(200);
    expect(relay.forwarded).toEqual([`127.0.0.1:${new URL(server.url).port}`]);
    await relay.close();
  });

  it("sends API requests for the node's loopback through the node, TLS verified", async () => {
    const relay = new RelayHost({ rootfs });
    await relay.writeFile(
      "/etc/kubernetes/admin.conf",
      kubeconfigText(server.url, { "certificate-authority-data": b64(pki.caCert) }, { token: "t" }),
      0o600,
    );
    const access = new NodeClusterAccess(relay);
    const client = await access.clientFor("/etc/kubernetes/admin.conf");
    expect((await client.getRaw("/livez")).status).toBe(200);
    expect(relay.forwarded).toHaveLength(1);
    expect(server.requests.map((r) => r.path)).toEqual(["/livez"]);
    await relay.close();
  });
});
