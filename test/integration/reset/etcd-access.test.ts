import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer, connect, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EtcdClient, type EtcdTLSCredentials } from "../../../src/etcd/client.js";
import { ETCD_CLIENT_URLS_ANNOTATION } from "../../../src/manifests/etcd.js";
import type { KubeClient, KubeObject } from "../../../src/kube/types.js";
import { realResetEtcd } from "../../../src/phases/reset/etcd-access.js";
import type { Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { initPhase } from "../../support/sim-control-plane.js";
import {
  baseInitConfig,
  runPhase,
  tempRootHost,
  testInitData,
} from "../../support/init-fixtures.js";
import { freePorts } from "../../support/ports.js";

// How reset reaches etcd (realResetEtcd), against Debian's real etcd serving the certificates
// init's own certs phase makes: the last member is kept; a member that is not in the cluster is
// "already removed"; a learner whose etcd never started (a half-done control-plane join) is
// removed through the endpoints the API knows; over a Host that forwards ports (as SshHost
// will), etcd is reached through the node, and TLS verifies against 127.0.0.1.

let etcd: ChildProcess;
let tls: EtcdTLSCredentials;
let clientURL: string;
let peerURL: string;
let cleanup: () => Promise<void>;
let etcdLog = "";

/** A Host that reaches ports "from the node" through a local TCP relay, and counts them. */
class ForwardingHost extends LocalHost {
  forwarded: string[] = [];
  open = 0;

  async forward(targetHost: string, targetPort: number) {
    this.forwarded.push(`${targetHost}:${targetPort}`);
    const sockets = new Set<Socket>();
    const server: Server = createServer((inbound) => {
      const outbound = connect(targetPort, targetHost);
      sockets.add(inbound).add(outbound);
      inbound.pipe(outbound).pipe(inbound);
      const drop = () => {
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on("error", drop);
      outbound.on("error", drop);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.open++;
    return {
      port: (server.address() as { port: number }).port,
      close: () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(() => resolve());
          this.open--;
        }),
    };
  }
}

/** A client whose etcd Pods carry `urls` in kubeadm's client-URL annotation. */
function apiWithEtcdPods(urls: string[]): KubeClient {
  const pods: KubeObject[] = urls.map((url, i) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `etcd-cp-${i + 1}`,
      namespace: "kube-system",
      annotations: { [ETCD_CLIENT_URLS_ANNOTATION]: url },
    },
  }));
  return { description: "test", list: () => Promise.resolve(pods) } as unknown as KubeClient;
}

const access = realResetEtcd({ apiCallTimeoutMs: 3_000, retryIntervalMs: 200 });

async function memberNames(): Promise<string[]> {
  const members = await new EtcdClient({ endpoints: [clientURL], tls }).memberList();
  return members.map((m) => m.name || `(unstarted ${m.peerURLs[0]})`).sort();
}

beforeAll(async () => {
  const t = await tempRootHost();
  cleanup = t.cleanup;
  const cfg = baseInitConfig({ nodeName: "cp-1", advertiseAddress: "127.0.0.1" });
  await runPhase(initPhase("certs"), testInitData(t.host, cfg));
  const pki = join(t.root, "etc/kubernetes/pki/etcd");
  const read = (f: string) => readFile(join(pki, f), "utf8");
  tls = {
    ca: await read("ca.crt"),
    cert: await read("healthcheck-client.crt"),
    key: await read("healthcheck-client.key"),
  };
  const [client, peer, metrics] = await freePorts(3);
  clientURL = `https://127.0.0.1:${client}`;
  peerURL = `https://127.0.0.1:${peer}`;
  etcd = spawn(
    "etcd",
    [
      "--name=cp-1",
      `--data-dir=${join(t.root, "var/lib/etcd")}`,
      `--listen-client-urls=${clientURL}`,
      `--advertise-client-urls=${clientURL}`,
      `--listen-peer-urls=${peerURL}`,
      `--initial-advertise-peer-urls=${peerURL}`,
      `--initial-cluster=cp-1=${peerURL}`,
      `--listen-metrics-urls=http://127.0.0.1:${metrics}`,
      `--cert-file=${pki}/server.crt`,
      `--key-file=${pki}/server.key`,
      `--trusted-ca-file=${pki}/ca.crt`,
      "--client-cert-auth=true",
      `--peer-cert-file=${pki}/peer.crt`,
      `--peer-key-file=${pki}/peer.key`,
      `--peer-trusted-ca-file=${pki}/ca.crt`,
      "--peer-client-cert-auth=true",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  etcd.stderr!.on("data", (b: Buffer) => (etcdLog += b.toString()));
  const client0 = new EtcdClient({ endpoints: [clientURL], tls });
  for (let i = 0; ; i++) {
    try {
      await client0.memberList();
      break;
    } catch (e) {
      if (i > 100) throw new Error(`etcd did not start:\n${etcdLog}`, { cause: e });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}, 60_000);

afterAll(async () => {
  etcd?.kill("SIGTERM");
  await new Promise((r) => etcd?.once("exit", r));
  await cleanup?.();
});

describe("realResetEtcd against a real etcd", () => {
  const host: Host = new LocalHost();

  it("keeps the only member", async () => {
    expect(
      await access.removeMember(host, { name: "cp-1", peerURL, clientURL }, tls, undefined),
    ).toBe("only-member");
    expect(await memberNames()).toEqual(["cp-1"]);
  });

  it("calls a member that is not in the cluster already removed", async () => {
    const member = { peerURL: "https://127.0.0.1:1", clientURL };
    expect(await access.removeMember(host, member, tls, undefined)).toBe("not-a-member");
    expect(await memberNames()).toEqual(["cp-1"]);
  });

  it("removes a learner that never started, reaching etcd through the endpoints the API knows", async () => {
    const learnerPeer = "https://127.0.0.2:2380";
    await new EtcdClient({ endpoints: [clientURL], tls }).memberAdd([learnerPeer], {
      isLearner: true,
    });
    expect(await memberNames()).toEqual(["(unstarted https://127.0.0.2:2380)", "cp-1"]);
    // Its own client URL answers nothing: only the API's view of the etcd Pods leads to etcd.
    const halfJoined = { name: "cp-2", peerURL: learnerPeer, clientURL: "https://127.0.0.2:2379" };
    expect(await access.removeMember(host, halfJoined, tls, apiWithEtcdPods([clientURL]))).toBe(
      "removed",
    );
    expect(await memberNames()).toEqual(["cp-1"]);
  });

  it("fails, in bounded time, when no etcd answers", async () => {
    const started = Date.now();
    const nowhere = { peerURL: "https://127.0.0.3:2380", clientURL: "https://127.0.0.3:2379" };
    await expect(access.removeMember(host, nowhere, tls, undefined)).rejects.toThrow(
      /etcd member list/,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("through a Host that forwards ports, reaches etcd from the node and closes what it opened", async () => {
    const forwarding = new ForwardingHost();
    expect(
      await access.removeMember(forwarding, { name: "cp-1", peerURL, clientURL }, tls, undefined),
    ).toBe("only-member");
    expect(forwarding.forwarded).toEqual([clientURL.slice("https://".length)]);
    expect(forwarding.open).toBe(0);
  });
});
