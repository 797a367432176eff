import { execFile, spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createProbeObjects,
  PROBE_NAMESPACE,
} from "../../../src/cluster/upgrade/probes/api-targets.js";
import { DNS_COMMAND, dnsTarget } from "../../../src/cluster/upgrade/probes/dns-target.js";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import type { KubeClient, RawResponse } from "../../../src/kube/types.js";
import { CANARY_NAME } from "../../../src/manifests/probe-canary.js";
import { canaryServiceTo } from "../../support/canary-service.js";
import { freePort } from "../../support/ports.js";
import { running } from "../../support/processes.js";
import {
  startInProcessControlPlane,
  type InProcessControlPlane,
} from "../../support/sim-control-plane.js";
import { fileDir } from "../../support/temp-dir.js";

// The DNS probe's lookup with the real programs: real dig (bind9) run by /bin/sh as netexec's
// /shell runs it, reading a Pod's resolv.conf, against a real DNS server (dnsmasq), reached by
// dnsTarget through the simulated API server's service proxy.
//
// The Pod: a process in a mount namespace of its own (unshare -m) in which /etc/resolv.conf is a
// bind mount of the file a ClusterFirst Pod gets. The kubelet makes its content
// (k8s pkg/kubelet/network/dns/dns.go, GetPodDNS and generateSearchesForDNSClusterFirst: the
// search list <ns>.svc.<clusterDomain> svc.<clusterDomain> <clusterDomain> followed by the node's
// own search domains, the clusterDNS servers as nameservers, defaultDNSOptions "ndots:5"), and
// the container runtime writes it in this form (containerd's CRI plugin, parseDNSOptions:
// "search a b c\nnameserver x\noptions ndots:5\n"). In that process runs the simulated netexec
// (test/support/sim/kubelet/agnhost.ts), whose /shell runs the command with /bin/sh -c.
// SIMULATION LIMITS: the Pod shares the node's network namespace, and the nameserver is an
// address of this machine's loopback (127.53.x.y, chosen per run; nothing else here serves DNS
// there) instead of a Service IP that kube-proxy translates; the canary's Service has no selector
// and this test writes its Endpoints (as api-probes.test.ts does) because no Deployment's Pods run.
//
// The DNS server plays CoreDNS's kubernetes plugin for the Service kubernetes in default:
// kubernetes.default.svc.cluster.local A 10.96.0.1, no AAAA (NOERROR, no data, for a cluster
// without IPv6), NXDOMAIN for every other name (no upstream: the bare `kubernetes.default` and
// the node's search domain are not forwarded anywhere).

const run = promisify(execFile);
const CLUSTER_DOMAIN = "cluster.local";
const SERVICE_NAME = `kubernetes.default.svc.${CLUSTER_DOMAIN}`;
const SERVICE_IP = "10.96.0.1";
// The node's own search domain (the kubelet's --resolv-conf), after the cluster's.
const NODE_SEARCH = "corp.example";

/** The Pod's /etc/resolv.conf as the kubelet and containerd write it for a Pod in `ns`. */
const podResolvConf = (ns: string, clusterDNS: string) =>
  `search ${ns}.svc.${CLUSTER_DOMAIN} svc.${CLUSTER_DOMAIN} ${CLUSTER_DOMAIN} ${NODE_SEARCH}\n` +
  `nameserver ${clusterDNS}\n` +
  `options ndots:5\n`;

let cp: InProcessControlPlane;
let admin: KubeClient;
let dir: string;
let hostsFile: string;
let dnsAddress: string;
let dnsmasq: ChildProcess | undefined;
let dnsmasqLog = "";
let pod: ChildProcess | undefined;
let podLog = "";
/** The netexec answers dnsTarget got, newest last. */
const answers: RawResponse[] = [];

const killAtExit = () => {
  for (const p of [dnsmasq, pod]) if (p?.pid && running(p.pid)) p.kill("SIGKILL");
};

async function stopProcess(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once("exit", r));
  p.kill("SIGCONT");
  p.kill("SIGTERM");
  const done = await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)]);
  if (!done) {
    p.kill("SIGKILL");
    await exited;
  }
}

/** dig asked straight at the server (not through the Pod): its status line and answers. */
async function askServer(): Promise<string> {
  const r = await run("dig", [`@${dnsAddress}`, "+tries=1", "+time=1", SERVICE_NAME, "A"]).catch(
    (e: { stdout?: string }) => ({ stdout: e.stdout ?? "" }),
  );
  return r.stdout;
}

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms; dnsmasq: ${dnsmasqLog}`);
    await sleep(50);
  }
}

/** dnsmasq on 127.53.x.y:53 (a free one), answering from hostsFile only. */
async function startDnsmasq(): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    dnsAddress = `127.53.${1 + Math.floor(Math.random() * 254)}.${1 + Math.floor(Math.random() * 254)}`;
    dnsmasqLog = "";
    const p = spawn(
      "dnsmasq",
      [
        "--keep-in-foreground",
        "--conf-file=/dev/null",
        "--pid-file=",
        // The test's folders are root's (0700): dnsmasq keeps root to read the hosts file again
        // on SIGHUP, instead of becoming the dnsmasq user.
        "--user=root",
        `--listen-address=${dnsAddress}`,
        "--bind-interfaces",
        "--port=53",
        "--no-resolv",
        "--no-hosts",
        "--no-poll",
        `--addn-hosts=${hostsFile}`,
        // Every name is local: what the hosts file lacks is NXDOMAIN, never forwarded.
        "--local=/#/",
        "--log-queries",
        "--log-facility=-",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    p.stderr.on("data", (b: Buffer) => (dnsmasqLog += b.toString()));
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    dnsmasq = p;
    const up = await Promise.race([
      until("dnsmasq answering", async () => (await askServer()).includes(SERVICE_IP)).then(
        () => true,
      ),
      exited.then(() => false),
    ]);
    if (up) return;
    // Another program holds that address's port 53: another address.
    if (!/Address already in use/.test(dnsmasqLog))
      throw new Error(`dnsmasq failed: ${dnsmasqLog}`);
  }
  throw new Error("no free 127.53.x.y:53 for dnsmasq after 10 attempts");
}

/** The netexec Pod: its own mount namespace with the Pod's resolv.conf, serving on 127.0.0.1:port. */
async function startPod(port: number): Promise<void> {
  const resolvConf = join(dir, "resolv.conf");
  await writeFile(resolvConf, podResolvConf(PROBE_NAMESPACE, dnsAddress));
  const script = join(dir, "netexec-pod.ts");
  await writeFile(
    script,
    `import { createServer } from "node:http";
import { netexecHandler } from ${JSON.stringify(join(process.cwd(), "test/support/sim/kubelet/agnhost.ts"))};
const server = createServer(netexecHandler("kubeforge-canary-dns"));
server.listen(${port}, "127.0.0.1", () => console.log("listening"));
process.on("SIGTERM", () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
`,
  );
  const p = spawn(
    "unshare",
    [
      "--mount",
      "--propagation",
      "private",
      "--",
      "/bin/sh",
      "-c",
      'mount --bind "$0" /etc/resolv.conf && exec "$@"',
      resolvConf,
      join(process.cwd(), "node_modules/.bin/node"),
      join(process.cwd(), "node_modules/tsx/dist/cli.mjs"),
      script,
    ],
    // tsx keeps a cache (and a folder even without one) in the temporary folder: this file's own.
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TSX_DISABLE_CACHE: "1", TMPDIR: dir },
    },
  );
  pod = p;
  const out = (b: Buffer) => (podLog += b.toString());
  p.stdout.on("data", out);
  p.stderr.on("data", out);
  const exited = new Promise<void>((r) => p.once("exit", () => r()));
  const up = await Promise.race([
    until(
      "the netexec Pod listening",
      () => Promise.resolve(podLog.includes("listening")),
      30_000,
    ).then(() => true),
    exited.then(() => false),
  ]);
  if (!up) throw new Error(`the netexec Pod exited: ${podLog}`);
}

/** The queries dnsmasq logged since `from` (its log's length then): "A name", "AAAA name". */
const queriesSince = (from: number) =>
  [...dnsmasqLog.slice(from).matchAll(/query\[(A|AAAA)\] (\S+) from/g)].map(
    (m) => `${m[1]} ${m[2]}`,
  );

/** One sample of the DNS probe: its time and its error (undefined when up). */
async function sample(): Promise<{ ms: number; error?: string; answer: RawResponse }> {
  const started = Date.now();
  const error = await dnsTarget(recording)
    .check(AbortSignal.timeout(10_000))
    .then(
      () => undefined,
      (e: Error) => e.message,
    );
  return { ms: Date.now() - started, error, answer: answers.at(-1)! };
}

let recording: KubeClient;

beforeAll(async () => {
  process.once("exit", killAtExit);
  dir = await fileDir("kubeforge-dns-");
  hostsFile = join(dir, "hosts");
  await writeFile(hostsFile, `${SERVICE_IP} ${SERVICE_NAME}\n`);
  cp = await startInProcessControlPlane();
  admin = await new NodeClusterAccess(cp.data.host).clientFor("/etc/kubernetes/super-admin.conf");
  // The probe's client, keeping each raw answer the API server relayed from the Pod.
  recording = new Proxy(admin, {
    get: (target, key) =>
      key === "getRaw"
        ? async (path: string) => {
            const res = await target.getRaw(path);
            answers.push(res);
            return res;
          }
        : (Reflect.get(target, key) as unknown),
  });
  await startDnsmasq();
  const port = await freePort();
  await startPod(port);
  await createProbeObjects(admin);
  await canaryServiceTo(admin, port);
}, 60_000);

afterAll(async () => {
  await stopProcess(pod);
  await stopProcess(dnsmasq);
  process.removeListener("exit", killAtExit);
  await cp?.stop();
});

describe("the DNS probe's lookup with real dig and a real DNS server, in a Pod's resolver setup", () => {
  it("the Pod's /etc/resolv.conf is the kubelet's, and only inside the Pod", async () => {
    const res = await admin.getRaw(
      `/api/v1/namespaces/${PROBE_NAMESPACE}/services/${CANARY_NAME}:http/proxy/shell?cmd=${encodeURIComponent("cat /etc/resolv.conf")}`,
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({
      output: `search ${PROBE_NAMESPACE}.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver ${dnsAddress}\noptions ndots:5\n`,
    });
    expect(podLog).not.toContain("mount:");
  });

  it("finds the Service's address through the search path: dig prints it and exits 0", async () => {
    const from = dnsmasqLog.length;
    const s = await sample();
    expect(s.error, podLog).toBeUndefined();
    expect(s.answer.status).toBe(200);
    expect(JSON.parse(s.answer.body)).toEqual({ output: `${SERVICE_IP}\n` });
    // ndots:5: the search list first, in order, until a name exists; AAAA has no data there.
    expect(queriesSince(from)).toEqual([
      `A kubernetes.default.${PROBE_NAMESPACE}.svc.cluster.local`,
      "A kubernetes.default.svc.cluster.local",
      `AAAA kubernetes.default.${PROBE_NAMESPACE}.svc.cluster.local`,
      "AAAA kubernetes.default.svc.cluster.local",
    ]);
    expect(DNS_COMMAND).toBe(
      "dig +short +search +tries=1 +time=1 kubernetes.default A kubernetes.default AAAA",
    );
  });

  it("a name that is gone (NXDOMAIN everywhere): dig prints nothing and exits 0, found no address", async () => {
    await writeFile(hostsFile, "");
    dnsmasq!.kill("SIGHUP");
    await until("dnsmasq answering NXDOMAIN", async () =>
      (await askServer()).includes("status: NXDOMAIN"),
    );
    const from = dnsmasqLog.length;
    const s = await sample();
    expect(s.answer.status).toBe(200);
    // netexec leaves out an empty output, and there was no error.
    expect(JSON.parse(s.answer.body)).toEqual({});
    expect(s.error).toBe("the lookup of kubernetes.default found no address: an empty answer");
    // Every search domain, the node's too, then the name as it is; for each family.
    const tried = [
      `kubernetes.default.${PROBE_NAMESPACE}.svc.cluster.local`,
      "kubernetes.default.svc.cluster.local",
      "kubernetes.default.cluster.local",
      `kubernetes.default.${NODE_SEARCH}`,
      "kubernetes.default",
    ];
    expect(queriesSince(from)).toEqual([
      ...tried.map((n) => `A ${n}`),
      ...tried.map((n) => `AAAA ${n}`),
    ]);
    await writeFile(hostsFile, `${SERVICE_IP} ${SERVICE_NAME}\n`);
    dnsmasq!.kill("SIGHUP");
    await until("dnsmasq answering again", async () => (await askServer()).includes(SERVICE_IP));
  });

  it("a server that does not answer (stopped): dig exits 9 after 1 s per query, 2 s in all", async () => {
    dnsmasq!.kill("SIGSTOP");
    let s: Awaited<ReturnType<typeof sample>>;
    try {
      s = await sample();
    } finally {
      dnsmasq!.kill("SIGCONT");
    }
    // netexec answers 200 with the error set (its shellHandler, not its README's 417).
    expect(s.answer.status).toBe(200);
    const timedOut = `;; communications error to ${dnsAddress}#53: timed out\n;; no servers could be reached\n`;
    // A timed out, then AAAA: +tries=1 +time=1 each, and no other search domain tried.
    expect(JSON.parse(s.answer.body)).toEqual({
      output: timedOut + timedOut,
      error: "exit status 9",
    });
    expect(s.error).toBe(
      "the lookup of kubernetes.default failed (exit status 9): ;; no servers could be reached",
    );
    expect(s.ms).toBeGreaterThanOrEqual(1_900);
    // Within the prober's 5 s timeout (PROBE_TIMEOUT_MS), so the sample says what dig said.
    expect(s.ms).toBeLessThan(5_000);
  });

  it("nothing listening (the server gone): dig is refused at once and exits 9", async () => {
    await stopProcess(dnsmasq);
    const s = await sample();
    expect(s.answer.status).toBe(200);
    const refused = `;; communications error to ${dnsAddress}#53: connection refused\n;; no servers could be reached\n`;
    expect(JSON.parse(s.answer.body)).toEqual({
      output: refused + refused,
      error: "exit status 9",
    });
    expect(s.error).toBe(
      "the lookup of kubernetes.default failed (exit status 9): ;; no servers could be reached",
    );
    expect(s.ms).toBeLessThan(2_000);
  });
});
