import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EtcdClient, isEtcdTLSFailure, type EtcdTLSCredentials } from "../../../src/etcd/client.js";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import type { Forward, Host } from "../../../src/remote/host.js";
import { canConnect, routeThrough, type Route } from "../../../src/remote/route.js";
import type { SshHost } from "../../../src/remote/ssh/host.js";
import { initFirstControlPlane } from "../../support/stacked-cluster.js";
import { connectTestHost } from "../../support/testbed-connect.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";

// The route of a node over real SSH when the runner (this process, on the testbed bridge's
// gateway address) can reach only the node's sshd: `kubeforge init` runs on cp-1, then cp-1's
// firewall rejects the gateway on 6443 and 2379. A kube client and an etcd client along
// routeThrough(sshHost) still work, through the node; TLS is still verified against the
// original address or name; a target the runner reaches stays direct.

const TOKEN = "abcdef.0123456789abcdef";
const CERTIFICATE_KEY = "5e".repeat(32);

let bed: SshTestbed;
let cp: SshTestHost;
let ssh: SshHost;
let adminConf: string;
let etcdTLS: EtcdTLSCredentials;

/** A Host whose forward() calls are counted, around the real SSH host. */
function counting(host: SshHost): { host: Host; forwards: string[] } {
  const forwards: string[] = [];
  const wrapped: Host = Object.create(host) as Host;
  wrapped.forward = (h: string, p: number): Promise<Forward> => {
    forwards.push(`${h}:${p}`);
    return host.forward(h, p);
  };
  return { host: wrapped, forwards };
}

/** The firewall rule of cp-1 that rejects the runner (the bridge's gateway) on `port`. */
async function rejectRunner(port: number, action: "-A" | "-D"): Promise<void> {
  const r = await cp.exec([
    "iptables",
    action,
    "INPUT",
    "-s",
    bed.gateway,
    "-p",
    "tcp",
    "--dport",
    String(port),
    "-j",
    "REJECT",
  ]);
  if (r.code !== 0) throw new Error(`iptables ${action} for ${port}: ${r.stderr}`);
}

/** admin.conf with its cluster fields changed (server, CA, tls-server-name). */
function adminWith(change: { server?: string; ca?: string; tlsServerName?: string }): string {
  let text = adminConf;
  if (change.server) text = text.replace(/server: .*/, `server: ${change.server}`);
  if (change.ca) {
    text = text.replace(
      /certificate-authority-data: .*/,
      `certificate-authority-data: ${Buffer.from(change.ca).toString("base64")}`,
    );
  }
  if (change.tlsServerName) {
    text = text.replace(/(\n(\s+)server: .*)/, `$1\n$2tls-server-name: ${change.tlsServerName}`);
  }
  return text;
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1"], { ssh: true });
  cp = bed.host("cp-1");
  const init = await initFirstControlPlane(cp, { token: TOKEN, certificateKey: CERTIFICATE_KEY });
  if (init.code !== 0) throw new Error(`init failed:\n${init.stderr}\n${await cp.node.logs()}`);
  ssh = await connectTestHost(cp);
  adminConf = (await ssh.readFile("/etc/kubernetes/admin.conf")).toString("utf8");
  const pki = (f: string) => ssh.readFile(`/etc/kubernetes/pki/etcd/${f}`).then(String);
  etcdTLS = {
    ca: await pki("ca.crt"),
    cert: await pki("healthcheck-client.crt"),
    key: await pki("healthcheck-client.key"),
  };
  await rejectRunner(6443, "-A");
  await rejectRunner(2379, "-A");
}, 300_000);

afterAll(async () => {
  await ssh?.close();
  await bed?.stop();
}, 120_000);

describe("routeThrough(SshHost) when the runner reaches only SSH", () => {
  it("the runner cannot connect to the API server or etcd itself", async () => {
    expect(await canConnect(cp.address, 22, 2_000)).toBe(true);
    expect(await canConnect(cp.address, 6443, 2_000)).toBe(false);
    expect(await canConnect(cp.address, 2379, 2_000)).toBe(false);
    // Without a route, a client from admin.conf fails.
    const direct = await kubeClientFromKubeConfig(adminConf, {
      description: "admin.conf",
      requestTimeoutMs: 3_000,
    });
    await expect(direct.getRaw("/livez")).rejects.toThrow(/ECONNREFUSED/);
  });

  it("a kube client reaches the API server through the node, TLS verified against its IP", async () => {
    expect(adminConf).toContain(`server: https://${cp.address}:6443`);
    const { host, forwards } = counting(ssh);
    const access = new NodeClusterAccess(host, { route: routeThrough(host, {}) });
    const admin = await access.clientFor("/etc/kubernetes/admin.conf");
    const ns = await admin.get({ apiVersion: "v1", kind: "Namespace", name: "kube-system" });
    expect(ns.metadata.name).toBe("kube-system");
    const nodes = await admin.list("v1", "Node");
    expect(nodes.map((n) => n.metadata.name)).toEqual(["cp-1"]);
    expect(forwards).toEqual([`${cp.address}:6443`]);
  });

  it("a DNS name is verified as the certificate's DNS SAN; a name or IP it lacks is refused", async () => {
    // A route that resolves names as a DNS server of the node would: to cp-1's address.
    const nodeRoute = routeThrough(ssh, {});
    const viaNode: Route = (h, p) => nodeRoute(/^\d/.test(h) ? h : cp.address, p);
    const get = async (text: string) => {
      const client = await kubeClientFromKubeConfig(text, {
        description: "admin.conf",
        route: viaNode,
        requestTimeoutMs: 5_000,
      });
      return client.get({ apiVersion: "v1", kind: "Namespace", name: "default" });
    };
    // kubeadm's API server certificate names kubernetes.default and the node name.
    expect((await get(adminWith({ server: "https://kubernetes.default:6443" }))).kind).toBe(
      "Namespace",
    );
    await expect(
      get(adminWith({ server: "https://api.not-in-the-cert.test:6443" })),
    ).rejects.toThrow(/api\.not-in-the-cert\.test.*(certificate|altnames)/i);
    // A kubeconfig's own tls-server-name is what the certificate is checked against.
    expect(
      (
        await get(
          adminWith({
            server: "https://api.not-in-the-cert.test:6443",
            tlsServerName: "kubernetes",
          }),
        )
      ).kind,
    ).toBe("Namespace");
    // 10.96.0.1 is in the certificate, 10.96.0.2 is not; both are routed to cp-1.
    const ipRoute: Route = (_h, p) => nodeRoute(cp.address, p);
    const byIP = async (ip: string) =>
      (
        await kubeClientFromKubeConfig(adminWith({ server: `https://${ip}:6443` }), {
          description: "admin.conf",
          route: ipRoute,
          requestTimeoutMs: 5_000,
        })
      ).getRaw("/livez");
    expect((await byIP("10.96.0.1")).status).toBe(200);
    await expect(byIP("10.96.0.2")).rejects.toThrow(/10\.96\.0\.2.*(certificate|altnames|IP)/i);
    await nodeRoute.close();
  });

  it("a kube client with a CA that did not sign the server's certificate is refused", async () => {
    const client = await kubeClientFromKubeConfig(adminWith({ ca: etcdTLS.ca }), {
      description: "admin.conf",
      route: routeThrough(ssh),
      requestTimeoutMs: 5_000,
    });
    await expect(client.getRaw("/livez")).rejects.toThrow(/certificate/);
  });

  it("an etcd client reaches etcd through the node, TLS verified against the endpoint's IP", async () => {
    const route = routeThrough(ssh, {});
    const etcd = new EtcdClient({
      endpoints: [`https://${cp.address}:2379`],
      tls: etcdTLS,
      route,
      requestTimeoutMs: 5_000,
    });
    const members = await etcd.memberList();
    expect(members.map((m) => m.name)).toEqual(["cp-1"]);
    expect((await etcd.health(`https://${cp.address}:2379`)).healthy).toBe(true);
    // The node's own loopback: etcd's server certificate names 127.0.0.1 too.
    expect((await etcd.status("https://127.0.0.1:2379")).version).toMatch(/^3\./);

    // An address the certificate lacks, carried to the same etcd: refused as a TLS failure.
    const elsewhere = new EtcdClient({
      endpoints: ["https://10.96.0.2:2379"],
      tls: etcdTLS,
      route: (_h, p) => route(cp.address, p),
      requestTimeoutMs: 5_000,
    });
    const wrongName = await elsewhere.memberList().catch((e: unknown) => e);
    expect(isEtcdTLSFailure(wrongName)).toBe(true);
    expect((wrongName as Error).message).toMatch(/10\.96\.0\.2/);
    // A CA that did not sign etcd's certificate: refused too.
    const wrongCA = new EtcdClient({
      endpoints: [`https://${cp.address}:2379`],
      tls: { ...etcdTLS, ca: adminCA() },
      route,
      requestTimeoutMs: 5_000,
    });
    expect(isEtcdTLSFailure(await wrongCA.memberList().catch((e: unknown) => e))).toBe(true);
    await route.close();
  });

  it("a target the runner reaches stays direct: no forward opened", async () => {
    await rejectRunner(6443, "-D");
    try {
      const { host, forwards } = counting(ssh);
      const route = routeThrough(host, {});
      expect(await route(cp.address, 6443)).toEqual({ host: cp.address, port: 6443 });
      const admin = await kubeClientFromKubeConfig(adminConf, { description: "admin.conf", route });
      expect((await admin.getRaw("/livez")).status).toBe(200);
      // etcd is still closed to the runner: forwarded, on the same route.
      expect((await route(cp.address, 2379)).host).toBe("127.0.0.1");
      expect(forwards).toEqual([`${cp.address}:2379`]);
      await route.close();
    } finally {
      await rejectRunner(6443, "-A");
    }
  });
});

/** The cluster CA (from admin.conf): not etcd's CA. */
function adminCA(): string {
  const data = /certificate-authority-data: (\S+)/.exec(adminConf)![1]!;
  return Buffer.from(data, "base64").toString("utf8");
}
