import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { createServer as createHttpsServer, type Server } from "node:https";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWithCerts, renderKubeConfig } from "../../../src/kubeconfig/build.js";
import { certsPhase } from "../../../src/phases/init/certs.js";
import { kubeconfigPhase } from "../../../src/phases/init/kubeconfig.js";
import { newSelfSignedCACert, newSignedCert } from "../../../src/pki/certs.js";
import { generateKeyPair, privateKeyToPEM } from "../../../src/pki/keys.js";
import { LocalHost } from "../../../src/remote/local.js";
import {
  recordingLogger,
  tempRootHost,
  testInitConfig,
  testInitData,
} from "../../unit/pki/fixtures.js";
import { runPhase } from "../../unit/pki/run-phase.js";

// Go TLS peers against the generated PKI: kubectl (client-go) talks to a TLS server that
// serves apiserver.crt and demands a client certificate from ca.crt, as kube-apiserver does;
// etcd 3.4 serves with etcd/server.crt and etcdctl authenticates with the etcd client
// certificates.

const run = promisify(execFile);

interface Seen {
  cn: string;
  o: string | undefined;
  path: string | undefined;
}

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

let root: string;
let cleanup: () => Promise<void>;
const pki = (p: string) => join(root, "etc/kubernetes/pki", p);
const k8s = (p: string) => join(root, "etc/kubernetes", p);

beforeAll(async () => {
  const t = await tempRootHost();
  root = t.root;
  cleanup = t.cleanup;
  const data = testInitData(testInitConfig({ advertiseAddress: "127.0.0.1" }), t.host);
  await runPhase(certsPhase, data, recordingLogger());
});
afterAll(async () => cleanup());

describe("kubectl (a Go TLS client) against the generated apiserver certificate", () => {
  let server: Server;
  let port: number;
  const seen: Seen[] = [];
  const tlsErrors: string[] = [];
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "" };

  beforeAll(async () => {
    env.HOME = root;
    server = createHttpsServer(
      {
        cert: await readFile(pki("apiserver.crt")),
        key: await readFile(pki("apiserver.key")),
        ca: await readFile(pki("ca.crt")),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        const o: string | string[] | undefined = peer.subject.O;
        const path = new URL(req.url ?? "/", "https://x").pathname;
        const entry = { cn: String(peer.subject.CN), o: Array.isArray(o) ? o.join(",") : o, path };
        seen.push(entry);
        if (path === "/version") {
          // Debian's kubectl is a dispatcher that asks the server version first.
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ major: "1", minor: "32", gitVersion: "v1.32.4" }));
        } else if (path === "/livez") {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end(`ok CN=${entry.cn} O=${entry.o ?? ""}`);
        } else {
          res.writeHead(404).end();
        }
      },
    );
    server.on("tlsClientError", (e: Error) => tlsErrors.push(e.message));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
    // The kubeconfig files point at this server: advertiseAddress 127.0.0.1, bindPort = its port.
    const data = testInitData(
      testInitConfig({ advertiseAddress: "127.0.0.1", bindPort: port }),
      new LocalHost({ rootfs: root }),
    );
    await runPhase(kubeconfigPhase, data, recordingLogger());
  });
  afterAll(async () => new Promise((r) => server.close(r)));

  function kubectl(kubeconfig: string, ...args: string[]) {
    return run("kubectl", ["--kubeconfig", kubeconfig, "--request-timeout", "10s", ...args], {
      env,
    });
  }

  it.each([
    ["admin.conf", "kubernetes-admin", "kubeadm:cluster-admins"],
    ["super-admin.conf", "kubernetes-super-admin", "system:masters"],
    ["kubelet.conf", "system:node:cp-1", "system:nodes"],
    ["controller-manager.conf", "system:kube-controller-manager", ""],
    ["scheduler.conf", "system:kube-scheduler", ""],
  ])("%s authenticates as CN=%s O=%s", async (file, cn, o) => {
    const { stdout } = await kubectl(k8s(file), "get", "--raw", "/livez");
    expect(stdout.trim()).toBe(`ok CN=${cn} O=${o}`);
    expect(seen.at(-1)).toEqual({ cn, o: o || undefined, path: "/livez" });
  });

  it("is refused by the server with a client certificate from another CA", async () => {
    const otherKeys = await generateKeyPair("RSA-2048");
    const other = await newSelfSignedCACert(
      { commonName: "kubernetes", notBefore: new Date(Date.now() - 60_000) },
      otherKeys,
    );
    const clientKeys = await generateKeyPair("RSA-2048");
    const client = await newSignedCert(
      {
        commonName: "kubernetes-admin",
        organization: ["kubeadm:cluster-admins"],
        extKeyUsages: ["clientAuth"],
      },
      clientKeys.publicKey,
      { cert: other, key: otherKeys.privateKey },
    );
    const file = join(root, "foreign.conf");
    await writeFile(
      file,
      renderKubeConfig(
        createWithCerts(
          `https://127.0.0.1:${port}`,
          "kubernetes",
          "kubernetes-admin",
          await readFile(pki("ca.crt")),
          privateKeyToPEM(clientKeys.privateKey),
          client.pem,
        ),
      ),
    );
    const before = seen.length;
    const tlsBefore = tlsErrors.length;
    const failure = await kubectl(file, "get", "--raw", "/livez").then(
      () => undefined,
      (e: { stderr: string }) => e,
    );
    // Under TLS 1.3 the client only sees the connection close: the server ended the handshake
    // (the same kubeconfig shape with a client certificate from ca.crt succeeds above).
    expect(failure?.stderr).toMatch(/Unable to connect to the server/);
    expect(seen.length).toBe(before);
    expect(tlsErrors.length).toBeGreaterThan(tlsBefore);
  });

  it("is refused by kubectl when the server name is not in the apiserver certificate", async () => {
    const text = (await readFile(k8s("admin.conf"), "utf8")).replace(
      `https://127.0.0.1:${port}`,
      `https://localhost:${port}`,
    );
    const file = join(root, "localhost.conf");
    await writeFile(file, text);
    await expect(kubectl(file, "get", "--raw", "/livez")).rejects.toMatchObject({
      stderr: expect.stringMatching(/certificate is valid for .*not localhost/) as unknown,
    });
  });
});

describe("etcd 3.4 and etcdctl (Go TLS peers) with the generated etcd certificates", () => {
  let etcd: ChildProcess | undefined;
  let clientURL: string;
  let etcdLog = "";

  beforeAll(async () => {
    const [client, peer, metrics] = [await freePort(), await freePort(), await freePort()];
    clientURL = `https://127.0.0.1:${client}`;
    const peerURL = `https://127.0.0.1:${peer}`;
    etcd = spawn(
      "etcd",
      [
        "--name=cp-1",
        `--data-dir=${join(root, "var/lib/etcd")}`,
        `--listen-client-urls=${clientURL}`,
        `--advertise-client-urls=${clientURL}`,
        `--listen-peer-urls=${peerURL}`,
        `--initial-advertise-peer-urls=${peerURL}`,
        `--initial-cluster=cp-1=${peerURL}`,
        `--listen-metrics-urls=http://127.0.0.1:${metrics}`,
        `--cert-file=${pki("etcd/server.crt")}`,
        `--key-file=${pki("etcd/server.key")}`,
        "--client-cert-auth=true",
        `--trusted-ca-file=${pki("etcd/ca.crt")}`,
        `--peer-cert-file=${pki("etcd/peer.crt")}`,
        `--peer-key-file=${pki("etcd/peer.key")}`,
        "--peer-client-cert-auth=true",
        `--peer-trusted-ca-file=${pki("etcd/ca.crt")}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    etcd.stderr?.on("data", (b: Buffer) => (etcdLog += b.toString()));
  });
  afterAll(() => {
    if (etcd?.pid && etcd.exitCode === null) process.kill(etcd.pid, "SIGTERM");
  });

  async function etcdctl(cert: string, key: string, ...args: string[]) {
    return run(
      "etcdctl",
      [
        `--endpoints=${clientURL}`,
        `--cacert=${pki("etcd/ca.crt")}`,
        `--cert=${pki(cert)}`,
        `--key=${pki(key)}`,
        ...args,
      ],
      { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ETCDCTL_API: "3" } },
    );
  }

  async function healthy(cert: string, key: string): Promise<string> {
    let last: unknown;
    for (let i = 0; i < 40; i++) {
      try {
        // etcdctl 3.4 reports health on stderr.
        const { stdout, stderr } = await etcdctl(cert, key, "endpoint", "health");
        return stdout + stderr;
      } catch (e) {
        last = e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    throw new Error(`etcd did not become healthy: ${String(last)}\n${etcdLog.slice(-2000)}`);
  }

  it.each([
    ["etcd/healthcheck-client.crt", "etcd/healthcheck-client.key"],
    ["apiserver-etcd-client.crt", "apiserver-etcd-client.key"],
  ])("answers endpoint health to %s", async (cert, key) => {
    expect(await healthy(cert, key)).toMatch(/is healthy/);
    const put = await etcdctl(cert, key, "put", "kubeforge", cert);
    expect(put.stdout.trim()).toBe("OK");
  });

  it("refuses a client certificate from the cluster CA instead of the etcd CA", async () => {
    await healthy("etcd/healthcheck-client.crt", "etcd/healthcheck-client.key");
    await expect(
      etcdctl("apiserver-kubelet-client.crt", "apiserver-kubelet-client.key", "get", "x"),
    ).rejects.toThrow();
  });
});
