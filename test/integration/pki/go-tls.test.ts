import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { createServer as createHttpsServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
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
import { runPhase, tempRootHost, testInitData } from "../../support/init-fixtures.js";
import { testInitConfig } from "../../unit/pki/fixtures.js";

// A Go TLS peer against the generated PKI: kubectl (client-go) talks to a TLS server that
// serves apiserver.crt and demands a client certificate from ca.crt, as kube-apiserver does.
// (etcd and etcdctl with the etcd certificates: test/integration/etcd/etcd.test.ts.)

const run = promisify(execFile);

interface Seen {
  cn: string;
  o: string | undefined;
  path: string | undefined;
}

let root: string;
let cleanup: () => Promise<void>;
const pki = (p: string) => join(root, "etc/kubernetes/pki", p);
const k8s = (p: string) => join(root, "etc/kubernetes", p);

beforeAll(async () => {
  const t = await tempRootHost();
  root = t.root;
  cleanup = t.cleanup;
  await runPhase(
    certsPhase,
    testInitData(t.host, testInitConfig({ advertiseAddress: "127.0.0.1" })),
  );
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
      new LocalHost({ rootfs: root }),
      testInitConfig({ advertiseAddress: "127.0.0.1", bindPort: port }),
    );
    await runPhase(kubeconfigPhase, data);
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
        { preferences: false },
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
