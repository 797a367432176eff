// kubeforge's upgrade canary (src/manifests/probe-canary.ts) running END TO END on the simulated
// cluster: `kubeforge up` builds one control plane and two workers on the testbed; the canary's
// Deployment becomes a ReplicaSet and Pods (simulated controllers), the simulated scheduler binds
// them, each worker's simulated kubelet runs agnhost netexec on a Pod IP of its own (a /32 on the
// worker namespace's eth0), the endpoints controller publishes the Ready ones, and the simulated
// API server's service proxy reaches them — what the upgrade's workload probe asks. Then an
// eviction (policy/v1, as a drain makes it) takes one Pod away: it is stopped on its node, leaves
// the Endpoints, and its ReplicaSet's replacement becomes Ready; with a PodDisruptionBudget that
// allows no disruption the eviction is refused with 429. The Service is a NodePort one: the
// simulated API server gives it a port of 30000-32767 and every node's simulated kube-proxy
// (sim/kubelet/kube-proxy.ts) serves it on the node's address, forwarding to a ready Pod on any
// node, and refuses it once the Service has no ready endpoint (kube-proxy's REJECT).
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectFrom, nodePortGet } from "../../../src/cluster/upgrade/probes/node-port-request.js";
import { PathUnavailable } from "../../../src/cluster/upgrade/probes/prober.js";
import { CANARY_NAME, canaryObjects } from "../../../src/manifests/probe-canary.js";
import { connectTestHost } from "../../support/testbed-connect.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { clusterFile, diagnostics, eventually, runner, type Runner } from "../up/support.js";

const NS = "kubeforge-probes";

interface Pod {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}
interface Endpoints {
  subsets?: {
    addresses?: { ip: string; targetRef?: { name: string } }[];
    ports?: { name?: string; port: number }[];
  }[];
}

let bed: SshTestbed;
let r: Runner;
let kubeconfig: string;

/** kubectl without -o (raw requests); rejects with stderr on failure. */
function kubectlRaw(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "kubectl",
      ["--kubeconfig", kubeconfig, "--request-timeout", "20s", ...args],
      { timeout: 60_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(stderr || error.message)) : resolve(stdout),
    );
  });
}

const proxy = (path: string) =>
  kubectlRaw([
    "get",
    "--raw",
    `/api/v1/namespaces/${NS}/services/${CANARY_NAME}:http/proxy${path}`,
  ]);

const ready = (p: Pod) =>
  p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True");

async function canaryPods(): Promise<Pod[]> {
  const list = await r.kubectl<{ items: Pod[] }>(kubeconfig, [
    "-n",
    NS,
    "get",
    "pods",
    "-l",
    `app.kubernetes.io/name=${CANARY_NAME}`,
  ]);
  return list.items;
}

async function endpointPods(): Promise<string[]> {
  const eps = await r.kubectl<Endpoints>(kubeconfig, ["-n", NS, "get", "endpoints", CANARY_NAME]);
  return (eps.subsets ?? [])
    .flatMap((s) => (s.addresses ?? []).map((a) => a.targetRef?.name ?? ""))
    .sort();
}

async function endpointIPs(): Promise<string[]> {
  const eps = await r.kubectl<Endpoints>(kubeconfig, ["-n", NS, "get", "endpoints", CANARY_NAME]);
  return (eps.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip)).sort();
}

/** One GET from the test process (the runner's view); rejects with the socket error's code. */
function get(host: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, timeout: 5_000, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })));
    req.on("error", (e: NodeJS.ErrnoException) =>
      reject(Object.assign(new Error(e.code ?? e.message), { code: e.code })),
    );
    req.end();
  });
}

async function nodePort(): Promise<number> {
  const svc = await r.kubectl<{ spec: { type: string; ports: { nodePort?: number }[] } }>(
    kubeconfig,
    ["-n", NS, "get", "service", CANARY_NAME],
  );
  expect(svc.spec.type).toBe("NodePort");
  return svc.spec.ports[0]!.nodePort!;
}

/** Two Ready canary Pods, none terminating; resolves with them. */
function twoReadyPods(): Promise<Pod[]> {
  return eventually(
    "two Ready canary Pods",
    async () => {
      const pods = await canaryPods();
      const live = pods.filter((p) => !p.metadata.deletionTimestamp);
      if (pods.length !== 2 || live.filter(ready).length !== 2)
        throw new Error(
          JSON.stringify(pods.map((p) => [p.metadata.name, p.spec.nodeName, p.status])),
        );
      return live;
    },
    90_000,
  );
}

async function evict(pod: string): Promise<void> {
  const file = join(r.dir, `eviction-${pod}.json`);
  await writeFile(
    file,
    JSON.stringify({
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: pod, namespace: NS },
    }),
  );
  await kubectlRaw([
    "create",
    "--raw",
    `/api/v1/namespaces/${NS}/pods/${pod}/eviction`,
    "-f",
    file,
  ]);
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1", "w-2"], { ssh: true });
  r = await runner();
  const clusterPath = await r.writeClusterFile(
    clusterFile({
      name: "ci",
      controlPlanes: [bed.host("cp-1")],
      workers: [bed.host("w-1"), bed.host("w-2")],
    }),
  );
  kubeconfig = join(r.dir, "admin.conf");
  const up = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
  if (up.code !== 0) throw new Error(await diagnostics(bed, up));
  const file = join(r.dir, "canary.json");
  await writeFile(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
        ...canaryObjects(NS, 2),
      ],
    }),
  );
  await kubectlRaw(["create", "--validate=false", "-f", file]);
}, 600_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("the upgrade canary on the simulated cluster", () => {
  let first: Pod[];

  it("runs 2 Ready Pods on different workers with distinct IPs, and the Deployment counts them", async () => {
    first = await twoReadyPods();
    expect(first.map((p) => p.spec.nodeName).sort()).toEqual(["w-1", "w-2"]);
    const ips = first.map((p) => p.status.podIP!);
    expect(new Set(ips).size).toBe(2);
    for (const p of first) {
      expect(p.metadata.name).toMatch(
        new RegExp(`^${CANARY_NAME}-[a-z0-9]+-[bcdfghjklmnpqrstvwxz2456789]{5}$`),
      );
      // Each Pod IP is its own, not its node's.
      expect(p.status.podIP).not.toBe(bed.host(p.spec.nodeName!).address);
    }
    const d = await eventually("the canary Deployment available", async () => {
      const got = await r.kubectl<{ status: Record<string, unknown> }>(kubeconfig, [
        "-n",
        NS,
        "get",
        "deployment",
        CANARY_NAME,
      ]);
      if (got.status.availableReplicas !== 2) throw new Error(JSON.stringify(got.status));
      return got;
    });
    expect(d.status).toMatchObject({
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    });
    // Reachable from another host's namespace (cp-1) by ARP on the bridge.
    for (const p of first) {
      const out = await bed
        .host("cp-1")
        .exec(["curl", "-sS", "--max-time", "5", `http://${p.status.podIP}:8080/hostname`]);
      expect([out.code, out.stdout]).toEqual([0, p.metadata.name]);
    }
  }, 120_000);

  it("publishes both Pods in the Endpoints, and the service proxy answers a Pod's name and runs /shell", async () => {
    const ips = first.map((p) => p.status.podIP!).sort();
    await eventually("both Pods in the Endpoints", async () => {
      expect(await endpointIPs()).toEqual(ips);
    });
    const eps = await r.kubectl<Endpoints>(kubeconfig, ["-n", NS, "get", "endpoints", CANARY_NAME]);
    expect(eps.subsets?.[0]?.ports).toEqual([{ name: "http", port: 8080, protocol: "TCP" }]);
    const names = new Set<string>();
    for (let i = 0; i < 20 && names.size < 2; i++) names.add(await proxy("/hostname"));
    expect([...names].sort()).toEqual(first.map((p) => p.metadata.name).sort());
    const shell = JSON.parse(
      await proxy(`/shell?cmd=${encodeURIComponent("echo canary")}`),
    ) as unknown;
    expect(shell).toEqual({ output: "canary\n" });
  }, 60_000);

  it("serves the Service's NodePort on every node's address, forwarding to the Pods of both workers", async () => {
    const port = await nodePort();
    // --service-node-port-range's default (kube-apiserver: 30000-32767).
    expect(port).toBeGreaterThanOrEqual(30000);
    expect(port).toBeLessThanOrEqual(32767);
    const names = new Set<string>();
    for (const node of ["cp-1", "w-1", "w-2"]) {
      // Every node forwards (externalTrafficPolicy Cluster), the control plane without a Pod too.
      await eventually(`${node} serving NodePort ${port}`, async () => {
        const res = await get(bed.host(node).address, port, "/hostname");
        expect(res.status).toBe(200);
      });
      for (let i = 0; i < 10; i++) {
        const res = await get(bed.host(node).address, port, "/hostname");
        expect(res.status).toBe(200);
        names.add(res.body);
      }
    }
    // A random ready endpoint per connection: both Pods answered.
    expect([...names].sort()).toEqual(first.map((p) => p.metadata.name).sort());
    // The way kubeforge takes when the runner cannot connect itself: w-2 connects to its own
    // address over kubeforge's SSH connection to it (OpenSSH's direct-tcpip).
    const w2 = await connectTestHost(bed.host("w-2"));
    try {
      const res = await nodePortGet(
        connectFrom(w2)!,
        bed.host("w-2").address,
        port,
        "/hostname",
        5_000,
      );
      expect([res.status, names.has(res.body)]).toEqual([200, true]);
    } finally {
      await w2.close();
    }
  }, 60_000);

  it("keeps serving w-1's NodePort while w-1's kubelet restarts: kube-proxy is not the kubelet", async () => {
    const port = await nodePort();
    const w1 = bed.host("w-1");
    const before = (await w1.daemonPids()).kubelet;
    const answers: string[] = [];
    let restarting = true;
    const during = (async () => {
      while (restarting) {
        const res = await get(w1.address, port, "/hostname");
        answers.push(`${res.status} ${res.body}`);
        await new Promise((done) => setTimeout(done, 100));
      }
    })();
    const restart = await w1.exec(["systemctl", "restart", "kubelet"]);
    expect(restart.code, restart.stderr).toBe(0);
    await eventually("a new kubelet process on w-1", async () => {
      const now = (await w1.daemonPids()).kubelet;
      if (now === undefined || now === before) throw new Error(`kubelet pid ${now}`);
    });
    await new Promise((done) => setTimeout(done, 1_000));
    restarting = false;
    await during;
    expect(answers.length).toBeGreaterThan(5);
    for (const a of answers) expect(a).toMatch(new RegExp(`^200 ${CANARY_NAME}-`));
  }, 60_000);

  it("stops an evicted Pod on its node, drops it from the Endpoints, and replaces it with a Ready Pod", async () => {
    const victim = first.find((p) => p.spec.nodeName === "w-1")!;
    const port = await nodePort();
    // Requests through w-2's NodePort while w-1's Pod is evicted: each reaches a Pod still serving.
    const answers: string[] = [];
    let evicting = true;
    const during = (async () => {
      while (evicting) {
        const res = await get(bed.host("w-2").address, port, "/hostname");
        answers.push(`${res.status} ${res.body}`);
        await new Promise((done) => setTimeout(done, 100));
      }
    })();
    await evict(victim.metadata.name);
    await eventually("the evicted Pod gone", async () => {
      const pods = await canaryPods();
      if (pods.some((p) => p.metadata.uid === victim.metadata.uid)) throw new Error("still there");
    });
    evicting = false;
    await during;
    expect(answers.length).toBeGreaterThan(3);
    for (const a of answers) expect(a).toMatch(new RegExp(`^200 ${CANARY_NAME}-`));
    // Its server is gone with it (the address may already serve its replacement).
    const probe = await bed
      .host("w-2")
      .exec(["curl", "-sS", "--max-time", "3", `http://${victim.status.podIP}:8080/hostname`]);
    expect(probe.code === 0 ? probe.stdout : "").not.toBe(victim.metadata.name);
    const now = await twoReadyPods();
    const replacement = now.find(
      (p) => p.metadata.uid !== first.find((f) => f !== victim)!.metadata.uid,
    )!;
    expect(replacement.metadata.name).not.toBe(victim.metadata.name);
    await eventually("the Endpoints follow", async () => {
      expect(await endpointIPs()).toEqual(now.map((p) => p.status.podIP!).sort());
    });
    expect(await endpointPods()).toEqual(now.map((p) => p.metadata.name).sort());
    expect(await endpointPods()).not.toContain(victim.metadata.name);
    const names = new Set<string>();
    for (let i = 0; i < 20 && names.size < 2; i++) names.add(await proxy("/hostname"));
    expect(names).toContain(replacement.metadata.name);
  }, 120_000);

  it("refuses an eviction the PodDisruptionBudget does not allow (429)", async () => {
    await r.kubectl(kubeconfig, [
      "-n",
      NS,
      "patch",
      "pdb",
      CANARY_NAME,
      "--type=merge",
      "-p",
      '{"spec":{"maxUnavailable":0}}',
    ]);
    const pods = await twoReadyPods();
    const err = await eventually("the budget to allow nothing", async () => {
      const e = await evict(pods[0]!.metadata.name).then(
        () => undefined,
        (x: Error) => x,
      );
      if (!e) throw new Error("eviction allowed");
      return e;
    });
    expect(err.message).toMatch(/429|TooManyRequests|disruption budget/i);
    expect((await canaryPods()).map((p) => p.metadata.uid)).toContain(pods[0]!.metadata.uid);
  }, 60_000);

  it("refuses the NodePort once the Service has no ready endpoint, as kube-proxy's REJECT does", async () => {
    const port = await nodePort();
    await r.kubectl(kubeconfig, [
      "-n",
      NS,
      "patch",
      "deployment",
      CANARY_NAME,
      "--type=merge",
      "-p",
      '{"spec":{"replicas":0}}',
    ]);
    await eventually("no Pod in the Endpoints", async () => {
      expect(await endpointIPs()).toEqual([]);
    });
    for (const node of ["cp-1", "w-1", "w-2"]) {
      const code = await eventually(`${node} refusing NodePort ${port}`, async () => {
        type Failure = Error & { code?: string };
        const e = await get(bed.host(node).address, port, "/hostname").then(
          (res): Failure => new Error(`answered ${res.status} ${res.body}`),
          (x: Failure) => x,
        );
        if (e.code !== "ECONNREFUSED") throw e;
        return e.code;
      });
      expect(code).toBe("ECONNREFUSED");
    }
    // Over the node's SSH connection, OpenSSH says what the node's connect said: refused is the
    // workload's failure (no Pod ready), not a path that is down.
    const w2 = await connectTestHost(bed.host("w-2"));
    try {
      const e = await nodePortGet(connectFrom(w2)!, bed.host("w-2").address, port, "/", 5_000).then(
        (res) => new Error(`answered ${res.status}`),
        (x: Error) => x,
      );
      expect(e).not.toBeInstanceOf(PathUnavailable);
      expect(e.message).toBe("Connection refused");
    } finally {
      await w2.close();
    }
  }, 60_000);
});
