import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EtcdClient,
  EtcdRequestError,
  EtcdUnavailableError,
  formatMemberID,
  type EtcdTLSCredentials,
} from "../../../src/etcd/client.js";
import {
  EtcdCluster,
  initialClusterFlag,
  joinStackedEtcdMember,
  removeStackedEtcdMember,
} from "../../../src/etcd/cluster.js";
import type { KubeObject } from "../../../src/kube/types.js";
import type { EtcdMember } from "../../../src/manifests/etcd.js";
import { freePort, freePorts } from "../../support/ports.js";

// Debian's real etcd 3.4 with mutual TLS on 127.0.0.1 (free ports, so files can run in
// parallel): our client over etcd's JSON gateway grows a one-member cluster to two the way
// kubeadm's join does (learner add, etcd started with the --initial-cluster we built and
// --initial-cluster-state=existing, promote, wait), and etcdctl — etcd's own Go gRPC client —
// is the judge of the result. Certificates come from openssl, shaped like kubeadm's: one etcd
// CA, member certificates for serving and peering, a healthcheck-client certificate.

const run = promisify(execFile);
const HOST = "127.0.0.1";

interface Member {
  name: string;
  client: string;
  peer: string;
  metrics: string;
  dataDir: string;
}

interface RawMember {
  ID: string;
  name?: string;
  peerURLs: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

describe("etcd client and kubeadm's cluster operations, against a real etcd", () => {
  let dir: string;
  let tls: EtcdTLSCredentials;
  let wrongCA: EtcdTLSCredentials;
  let foreignClient: EtcdTLSCredentials;
  const processes: ChildProcess[] = [];
  const logs = new Map<string, string>();
  let m1: Member;
  let m2: Member;

  const openssl = (...args: string[]) => run("openssl", args);

  /** A CA, and a certificate signed by it with the given extensions section. */
  async function issue(ca: string, name: string, cn: string, section: string): Promise<void> {
    await openssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      `/CN=${cn}`,
      "-keyout",
      `${dir}/${name}.key`,
      "-out",
      `${dir}/${name}.csr`,
    );
    await openssl(
      "x509",
      "-req",
      "-in",
      `${dir}/${name}.csr`,
      "-CA",
      `${dir}/${ca}.crt`,
      "-CAkey",
      `${dir}/${ca}.key`,
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      `${dir}/ext.cnf`,
      "-extensions",
      section,
      "-out",
      `${dir}/${name}.crt`,
    );
  }

  async function selfSignedCA(name: string, cn: string): Promise<void> {
    await openssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      `/CN=${cn}`,
      "-days",
      "1",
      "-keyout",
      `${dir}/${name}.key`,
      "-out",
      `${dir}/${name}.crt`,
    );
  }

  const pem = (name: string) => readFile(`${dir}/${name}`, "utf8");

  async function newMember(name: string): Promise<Member> {
    const [client, peer, metrics] = await freePorts(3);
    return {
      name,
      client: `https://${HOST}:${client}`,
      peer: `https://${HOST}:${peer}`,
      metrics: `http://${HOST}:${metrics}`,
      dataDir: join(dir, `${name}.etcd`),
    };
  }

  /** Starts etcd for `m` with kubeadm's TLS flags and the given cluster flags. */
  function startEtcd(m: Member, clusterFlags: string[]): ChildProcess {
    const argv = [
      `--name=${m.name}`,
      `--data-dir=${m.dataDir}`,
      `--listen-client-urls=${m.client}`,
      `--advertise-client-urls=${m.client}`,
      `--listen-peer-urls=${m.peer}`,
      `--initial-advertise-peer-urls=${m.peer}`,
      `--listen-metrics-urls=${m.metrics}`,
      `--cert-file=${dir}/member.crt`,
      `--key-file=${dir}/member.key`,
      `--trusted-ca-file=${dir}/ca.crt`,
      "--client-cert-auth=true",
      `--peer-cert-file=${dir}/member.crt`,
      `--peer-key-file=${dir}/member.key`,
      `--peer-trusted-ca-file=${dir}/ca.crt`,
      "--peer-client-cert-auth=true",
      "--snapshot-count=10000",
      ...clusterFlags,
    ];
    const child = spawn("etcd", argv, { stdio: ["ignore", "pipe", "pipe"] });
    processes.push(child);
    logs.set(m.name, "");
    const append = (b: Buffer) => logs.set(m.name, (logs.get(m.name) ?? "") + b.toString());
    child.stdout.on("data", append);
    child.stderr.on("data", append);
    return child;
  }

  /** etcdctl with the healthcheck-client identity (kubeadm's etcd client certificate). */
  const etcdctl = (endpoints: string[], ...args: string[]) =>
    run(
      "etcdctl",
      [
        `--endpoints=${endpoints.join(",")}`,
        `--cacert=${dir}/ca.crt`,
        `--cert=${dir}/healthcheck-client.crt`,
        `--key=${dir}/healthcheck-client.key`,
        "--dial-timeout=3s",
        "--command-timeout=5s",
        ...args,
      ],
      { env: { ...process.env, ETCDCTL_API: "3" } },
    );

  /** etcdctl's member list; uint64 IDs kept as strings (JSON numbers would lose precision). */
  async function etcdctlMembers(endpoints: string[]): Promise<RawMember[]> {
    const { stdout } = await etcdctl(endpoints, "member", "list", "-w", "json");
    const safe = stdout.replace(/"ID":(\d+)/g, '"ID":"$1"');
    return (JSON.parse(safe) as { members: RawMember[] }).members;
  }

  async function waitHealthy(m: Member): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await etcdctl([m.client], "endpoint", "health");
        return;
      } catch (e) {
        if (Date.now() > deadline) {
          throw new Error(
            `etcd ${m.name} did not become healthy: ${(e as Error).message}\n${(logs.get(m.name) ?? "").slice(-3000)}`,
            { cause: e },
          );
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** The etcd Pods kubeadm would list: one per member, annotated with its client URL. */
  const podsFor =
    (...members: Member[]) =>
    (): Promise<KubeObject[]> =>
      Promise.resolve(
        members.map((m) => ({
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name: `etcd-${m.name}`,
            namespace: "kube-system",
            labels: { component: "etcd", tier: "control-plane" },
            annotations: { "kubeadm.kubernetes.io/etcd.advertise-client-urls": m.client },
          },
        })),
      );

  const fastCluster = (client: EtcdClient) =>
    new EtcdCluster(client, { apiCallTimeoutMs: 30_000, retryIntervalMs: 200 });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "kubeforge-etcd-client-"));
    await writeFile(
      `${dir}/ext.cnf`,
      [
        "[member]",
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth,clientAuth",
        `subjectAltName=IP:${HOST},DNS:localhost`,
        "[client]",
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=clientAuth",
        "",
      ].join("\n"),
    );
    await selfSignedCA("ca", "etcd-ca");
    await selfSignedCA("other-ca", "other-ca");
    await issue("ca", "member", "etcd-member", "member");
    await issue("ca", "healthcheck-client", "kube-etcd-healthcheck-client", "client");
    await issue("other-ca", "intruder", "intruder", "client");
    tls = {
      ca: await pem("ca.crt"),
      cert: await pem("healthcheck-client.crt"),
      key: await pem("healthcheck-client.key"),
    };
    wrongCA = { ...tls, ca: await pem("other-ca.crt") };
    foreignClient = {
      ca: tls.ca,
      cert: await pem("intruder.crt"),
      key: await pem("intruder.key"),
    };

    m1 = await newMember("cp-1");
    m2 = await newMember("cp-2");
    startEtcd(m1, [`--initial-cluster=${m1.name}=${m1.peer}`, "--initial-cluster-state=new"]);
    await waitHealthy(m1);
  }, 120_000);

  afterAll(async () => {
    for (const p of processes) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("reads the member list and a member's status and health over the JSON gateway", async () => {
    const client = new EtcdClient({ endpoints: [m1.client], tls });
    const members = await client.memberList();
    const viaEtcdctl = await etcdctlMembers([m1.client]);
    expect(members).toEqual([
      {
        id: viaEtcdctl[0]!.ID,
        name: "cp-1",
        peerURLs: [m1.peer],
        clientURLs: [m1.client],
        isLearner: false,
      },
    ]);
    const status = await client.status(m1.client);
    expect(status.memberId).toBe(viaEtcdctl[0]!.ID);
    expect(status.leader).toBe(viaEtcdctl[0]!.ID);
    expect(status.version).toMatch(/^3\.\d+\.\d+/);
    expect(status.dbSize).toBeGreaterThan(0);
    expect(status.isLearner).toBe(false);
    expect(await client.health(m1.client)).toEqual({ healthy: true });
  });

  it("takes a snapshot etcdctl restores: the whole keyspace with etcd's sha256 trailer", async () => {
    await etcdctl([m1.client], "put", "/registry/kubeforge/snapshot-probe", "before-upgrade");
    const client = new EtcdClient({ endpoints: [m1.client], tls });
    const data = await client.snapshot(m1.client);
    const file = join(dir, "snapshot.db");
    await writeFile(file, data);
    // etcdctl is the judge: its status reads the database, its restore checks the trailer.
    const { stdout } = await etcdctl([], "snapshot", "status", file, "-w", "json");
    const status = JSON.parse(stdout) as { totalKey: number; totalSize: number };
    expect(status.totalKey).toBeGreaterThan(0);
    expect(status.totalSize).toBe(data.length - 32);
    const restored = join(dir, "restored.etcd");
    await etcdctl([], "snapshot", "restore", file, `--data-dir=${restored}`);
    // And restore does check it (so the pass above means the trailer is whole): one byte short fails.
    await writeFile(file, data.subarray(0, data.length - 1));
    const cut = await etcdctl([], "snapshot", "restore", file, `--data-dir=${restored}-cut`).then(
      () => "restored",
      (e: Error) => e.message,
    );
    expect(cut).not.toBe("restored");
  });

  it("finds the endpoints in the etcd Pods' annotation, then syncs them with the member list", async () => {
    // The Pod names m1 by "localhost"; Sync replaces it with the URL the member advertises.
    const viaLocalhost = { ...m1, client: m1.client.replace(HOST, "localhost") };
    const cluster = await EtcdCluster.fromPods(podsFor(viaLocalhost), tls, {
      apiCallTimeoutMs: 10_000,
    });
    expect(cluster.endpoints).toEqual([m1.client]);
  });

  it("joins a second member as kubeadm does: learner, etcd.yaml's --initial-cluster, promote, wait", async () => {
    const cluster = fastCluster(new EtcdClient({ endpoints: [m1.client], tls }));

    // An earlier join was interrupted right after the member add: the learner exists already.
    const first = await cluster.addMemberAsLearner(m2.name, m2.peer);
    const afterFirst = await etcdctlMembers([m1.client]);
    expect(afterFirst).toHaveLength(2);
    const learner = afterFirst.find((m) => m.peerURLs[0] === m2.peer)!;
    expect(learner.isLearner).toBe(true);
    expect(learner.name ?? "").toBe(""); // not started yet
    // kubeadm's order is etcd's: the member list as the server returns it.
    expect(first).toEqual(
      afterFirst.map((m) => ({
        name: m.peerURLs[0] === m2.peer ? m2.name : m.name,
        peerURL: m.peerURLs[0],
      })),
    );
    expect(cluster.endpoints).toEqual([m1.client]); // a learner serves no clients (#137251)

    let initialCluster = "";
    const lines: string[] = [];
    const members = await joinStackedEtcdMember(cluster, {
      nodeName: m2.name,
      peerURL: m2.peer,
      writeManifest: (ms: EtcdMember[]) => {
        initialCluster = initialClusterFlag(ms);
        // What the kubelet does with etcd.yaml: start the member with these flags.
        startEtcd(m2, [`--initial-cluster=${initialCluster}`, "--initial-cluster-state=existing"]);
        return Promise.resolve();
      },
      healthyCheckRetries: 8,
      healthyCheckIntervalMs: 500,
      log: (l) => lines.push(l),
    });

    // The retried add reused the learner: no third member, same list.
    expect(members).toEqual(first);
    expect(initialCluster.split(",").sort()).toEqual(
      [`${m1.name}=${m1.peer}`, `${m2.name}=${m2.peer}`].sort(),
    );
    expect(lines).toContain(
      "[etcd] Announced new etcd member joining to the existing etcd cluster",
    );
    expect(lines).toContain(
      "[etcd] Waiting for the new etcd member to join the cluster. This can take up to 4s",
    );

    const final = await etcdctlMembers([m1.client, m2.client]);
    expect(
      final.map((m) => [m.name, m.peerURLs, m.clientURLs, m.isLearner ?? false]).sort(),
    ).toEqual(
      [
        [m1.name, [m1.peer], [m1.client], false],
        [m2.name, [m2.peer], [m2.client], false],
      ].sort(),
    );
    const { stdout, stderr } = await etcdctl([m1.client], "endpoint", "health", "--cluster");
    expect(stdout + stderr).toContain(`${m1.client} is healthy`);
    expect(stdout + stderr).toContain(`${m2.client} is healthy`);

    // Synced, the client sees both voters and both answer.
    await cluster.sync();
    expect([...cluster.endpoints].sort()).toEqual([m1.client, m2.client].sort());
    await cluster.checkClusterHealth();
    const statuses = await cluster.clusterStatus();
    expect(new Set([...statuses.values()].map((s) => s.leader)).size).toBe(1);

    // Adding a member that is already a voter changes nothing; promoting it is a no-op.
    expect(await cluster.addMemberAsLearner(m2.name, m2.peer)).toEqual(first);
    expect(await etcdctlMembers([m1.client])).toHaveLength(2);
    await cluster.memberPromote((await cluster.getMemberID(m2.peer))!);
  }, 90_000);

  it("passes etcd's refusal to promote an unknown member through, naming member and endpoint", async () => {
    const client = new EtcdClient({ endpoints: [m1.client], tls });
    const error = await client.memberPromote("12345").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EtcdRequestError);
    expect((error as EtcdRequestError).message).toBe(
      `etcd member promote of ${formatMemberID("12345")} at ${m1.client} failed: etcdserver: member not found`,
    );
  });

  it("removes the second member, and treats removing it again as done", async () => {
    const cluster = fastCluster(new EtcdClient({ endpoints: [m1.client, m2.client], tls }));
    const id = (await cluster.getMemberID(m2.peer))!;
    expect(id).toMatch(/^\d+$/);
    // etcd refuses ("unhealthy cluster") until the new member has been connected for 5 s:
    // kubeadm's retry loop rides that out.
    const remaining = await cluster.removeMember(id);
    expect(remaining).toEqual([{ name: m1.name, peerURL: m1.peer }]);
    const left = await etcdctlMembers([m1.client]);
    expect(left.map((m) => m.name)).toEqual([m1.name]);
    expect(await cluster.removeMember(id)).toEqual([]);
    expect(await cluster.getMemberID(m2.peer)).toBeUndefined();

    // kubeadm's reset: the last member is never removed.
    const last = fastCluster(new EtcdClient({ endpoints: [m1.client], tls }));
    expect(await removeStackedEtcdMember(last, { peerURL: m1.peer, clientURL: m1.client })).toBe(
      false,
    );
    expect(await etcdctlMembers([m1.client])).toHaveLength(1);
  }, 60_000);

  it("keeps trying to promote a learner that never starts, then says why it gave up", async () => {
    const m3 = await newMember("cp-3");
    const cluster = new EtcdCluster(new EtcdClient({ endpoints: [m1.client], tls }), {
      apiCallTimeoutMs: 1_500,
      retryIntervalMs: 200,
    });
    const members = await cluster.addMemberAsLearner(m3.name, m3.peer);
    expect(members).toContainEqual({ name: m3.name, peerURL: m3.peer });
    const id = (await cluster.getMemberID(m3.peer))!;
    let attempts = 0;
    const promote = cluster.client.memberPromote.bind(cluster.client);
    cluster.client.memberPromote = (x: string) => {
      attempts++;
      return promote(x);
    };
    const start = Date.now();
    const error = await cluster.memberPromote(id).catch((e: unknown) => e);
    expect(Date.now() - start).toBeGreaterThanOrEqual(1_400);
    expect(attempts).toBeGreaterThan(2);
    expect((error as Error).message).toBe(
      `timed out after 1.5s waiting for etcd to promote the learner ${formatMemberID(id)}: etcd member promote of ${formatMemberID(id)} at ${m1.client} failed: etcdserver: can only promote a learner member which is in sync with leader`,
    );
    // A learner does not count for quorum: the cluster still serves, and the learner can go.
    await cluster.checkClusterHealth();
    await cluster.removeMember(id);
    expect((await etcdctlMembers([m1.client])).map((m) => m.name)).toEqual([m1.name]);
  });

  it("tries each endpoint in turn: a dead first endpoint does not fail the call", async () => {
    const dead = `https://${HOST}:${await freePort()}`;
    const client = new EtcdClient({ endpoints: [dead, m1.client], tls });
    expect((await client.memberList()).map((m) => m.name)).toEqual([m1.name]);
  });

  it("fails fast and clearly on a CA that did not sign the server certificate", async () => {
    const client = new EtcdClient({ endpoints: [m1.client], tls: wrongCA });
    const start = Date.now();
    const error = (await client.memberList().catch((e: unknown) => e)) as EtcdRequestError;
    expect(error).toBeInstanceOf(EtcdRequestError);
    expect(error.kind).toBe("tls");
    expect(error.message).toMatch(
      new RegExp(
        `^etcd member list at ${m1.client} failed: the server certificate did not verify against the etcd CA`,
      ),
    );
    // kubeadm would retry for 2 minutes; a certificate mismatch is reported at once.
    const cluster = new EtcdCluster(client, { apiCallTimeoutMs: 60_000 });
    await expect(cluster.listMembers()).rejects.toThrow(/did not verify against the etcd CA/);
    await expect(EtcdCluster.fromPods(podsFor(m1), wrongCA)).rejects.toThrow(
      /did not verify against the etcd CA/,
    );
    expect(Date.now() - start).toBeLessThan(3_000);
  });

  it("is refused by etcd with a client certificate of another CA", async () => {
    const client = new EtcdClient({ endpoints: [m1.client], tls: foreignClient });
    const error = (await client.memberList().catch((e: unknown) => e)) as EtcdRequestError;
    expect(error).toBeInstanceOf(EtcdRequestError);
    expect(error.kind).toBe("tls");
    expect(error.message).toBe(
      `etcd member list at ${m1.client} failed: the server ended the TLS handshake with the alert "bad certificate": it does not accept the client certificate`,
    );
  });

  it("names the endpoint and the operation when nothing listens, and says so for every endpoint", async () => {
    const [a, b] = await freePorts(2);
    const one = new EtcdClient({ endpoints: [`https://${HOST}:${a}`], tls });
    await expect(one.memberList()).rejects.toThrow(
      `etcd member list at https://${HOST}:${a} failed: connection refused`,
    );
    const two = new EtcdClient({
      endpoints: [`https://${HOST}:${a}`, `https://${HOST}:${b}`],
      tls,
    });
    const error = await two.memberAdd([m2.peer], { isLearner: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EtcdUnavailableError);
    expect((error as Error).message).toBe(
      `etcd member add (as learner) failed at every endpoint: https://${HOST}:${a}: connection refused; https://${HOST}:${b}: connection refused`,
    );
  });

  it("gives up on an endpoint that never answers after the request timeout", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, HOST, r));
    const port = (silent.address() as { port: number }).port;
    try {
      const client = new EtcdClient({
        endpoints: [`https://${HOST}:${port}`],
        tls,
        requestTimeoutMs: 300,
      });
      const start = Date.now();
      await expect(client.memberList()).rejects.toThrow(
        `etcd member list at https://${HOST}:${port} failed: no answer within 300ms`,
      );
      expect(Date.now() - start).toBeLessThan(2_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it("reports an unavailable cluster after kubeadm's retries, naming the endpoint at fault", async () => {
    const dead = `https://${HOST}:${await freePort()}`;
    const cluster = new EtcdCluster(new EtcdClient({ endpoints: [m1.client, dead], tls }), {
      apiCallTimeoutMs: 300,
      retryIntervalMs: 100,
    });
    await expect(cluster.checkClusterHealth()).rejects.toThrow(
      new RegExp(`^etcd cluster is not healthy: .*${dead} failed: connection refused`),
    );
    await expect(cluster.waitForClusterAvailable(2, 100)).rejects.toThrow(
      /^timeout waiting for etcd cluster to be available after 2 attempts 100ms apart: /,
    );
  });

  it("refuses unusable credentials without echoing them", () => {
    const broken = { ...tls, key: tls.key.replace(/[A-Za-z]{20}/, "A".repeat(20)) };
    let message = "";
    try {
      new EtcdClient({ endpoints: [m1.client], tls: broken });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(
      /^the etcd client (key is not a PEM private key|certificate and key do not belong together)$/,
    );
    expect(
      () => new EtcdClient({ endpoints: [m1.client], tls: { ...tls, key: foreignClient.key } }),
    ).toThrow("the etcd client certificate and key do not belong together");
    expect(() => new EtcdClient({ endpoints: ["http://127.0.0.1:2379"], tls })).toThrow(
      'etcd endpoint "http://127.0.0.1:2379" must use https (client certificates are required)',
    );
  });
});
