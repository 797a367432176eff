import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UpgradeReport } from "../../../src/cluster/upgrade/report.js";
import { stopTunnelProcess } from "../../../src/cluster/tunnel.js";
import { CANARY_NAME } from "../../../src/manifests/probe-canary.js";
import { bundledCli } from "../../support/cli.js";
import { etcdctl } from "../../support/etcdctl.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { alive } from "../../support/processes.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { SUDO_USER } from "../../support/testbed-ssh.js";
import {
  apiServerLog,
  clusterFile,
  diagnostics,
  eventually,
  nodeReadiness,
  runner,
  upButSilent,
  type LogLine,
  type Runner,
} from "./support.js";

// `kubeforge up` with three control planes, two workers and NO controlPlaneEndpoint: kubeforge
// provides the stable endpoint itself — a real HAProxy on every node (node-local load balancing,
// as kubespray and k0s do) that the workers' kubelets and kube-proxy use, and a runner-side
// tunnel with failover that the exported admin.conf names. With one control plane stopped, the
// workers stay Ready and kubectl through the exported admin.conf still works. cp-2 is reached as
// a non-root user with password-less sudo. Before that, `kubeforge upgrade -f --via auto --probe
// api,workload` takes it from v1.34 to v1.36 in two hops behind those proxies, sampled from the
// side every second: every node gated in each hop, etcd keeps its quorum throughout (real etcd),
// the addons move only during each hop's last control plane step, the API probes through the
// stable endpoint see no outage while a control plane restarts (each is taken out of every proxy
// through HAProxy's runtime API before it changes), and the canary workload — one replica per
// worker, its Pods run by the simulated kubelets — keeps a replica throughout, the settle gate
// holding w-2's batch until w-1's evicted replica is back.

let bed: SshTestbed;
let r: Runner;
let kubeconfig: string;
let clusterPath: string;
let server: ReleaseServer;
/** The report of the two-hop upgrade. */
let upgradeReport: UpgradeReport;

const FROM = "v1.34.7";
// --via auto goes through stable-1.35: the release server has no label files, so the version
// table's newest v1.35 answers (what an offline resolver does, with a warning).
const MIDDLE = "v1.35.8";
const TARGET = "v1.36.3";
const CONTROL_PLANES = ["cp-1", "cp-2", "cp-3"];
const WORKERS = ["w-1", "w-2"];
/** An `up` of the five nodes; alone it takes about 4 minutes, on a loaded CI machine over 7. */
const HA_UP_TIMEOUT_MS = 840_000;

interface ConfigMap {
  data: Record<string, string>;
}

interface DaemonSet {
  spec: { template: { spec: { containers: { image: string }[] } } };
}

beforeAll(async () => {
  const nodes = [...CONTROL_PLANES, ...WORKERS];
  bed = await createTestbed(nodes, {
    ssh: true,
    // The simulated kubelets report the version the cluster is built at.
    kubeletVersions: Object.fromEntries(nodes.map((n) => [n, FROM])),
  });
  r = await runner();
  kubeconfig = join(r.dir, "admin.conf");
  server = await startReleaseServer();
}, 120_000);

afterAll(async () => {
  if (kubeconfig) await stopTunnelProcess(`${kubeconfig}.tunnel.json`);
  await bed?.stop();
  await server?.close();
}, 120_000);

/**
 * `kubeforge upgrade -f --to TARGET --via auto` with its report; kubelet and kubectl from the
 * release server, labels looked up there.
 */
async function upgrade(): Promise<{ code: number; stderr: string; report: UpgradeReport }> {
  const cli = await bundledCli();
  const caFile = join(r.dir, "release-ca.pem");
  await writeFile(caFile, server.ca);
  const reportPath = join(r.dir, "upgrade-report.json");
  const result = await cli.kubeforge(
    [
      "upgrade",
      "-f",
      clusterPath,
      "--to",
      TARGET,
      "--via",
      "auto",
      "--probe",
      "api,workload",
      "--report",
      reportPath,
      "--node-timeout",
      "3m",
    ],
    {
      // Two hops of five nodes: about 3 minutes alone, more than twice that on a loaded machine.
      timeoutMs: 1_200_000,
      env: {
        HOME: r.dir,
        NODE_EXTRA_CA_CERTS: caFile,
        KUBEFORGE_RELEASE_BASE_URL: `${server.url}/dl/release`,
      },
    },
  );
  if (result.code !== 0) throw new Error(await diagnostics(bed, result));
  const report = JSON.parse(await readFile(reportPath, "utf8")) as UpgradeReport;
  return { code: result.code, stderr: result.stderr, report };
}

interface Observation {
  at: number;
  /** Control planes whose etcd member answered its health check. */
  etcdHealthy: string[];
  /** kube-proxy's image tag (undefined: the read failed). */
  kubeProxy?: string;
}

/** Samples etcd's members and kube-proxy's image every second until `stop` is called. */
function observe(): { stop: () => Promise<Observation[]> } {
  const seen: Observation[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = Date.now();
      const health = await Promise.all(
        CONTROL_PLANES.map((n) =>
          etcdctl(bed.host(n), ["endpoint", "health", "--command-timeout=2s"]).then(
            () => n,
            () => undefined,
          ),
        ),
      );
      const image = await r
        .kubectl<DaemonSet>(kubeconfig, ["-n", "kube-system", "get", "ds", "kube-proxy"])
        .then(
          (ds) => ds.spec.template.spec.containers[0]!.image.split(":").pop(),
          () => undefined,
        );
      seen.push({
        at,
        etcdHealthy: health.filter((n): n is string => n !== undefined),
        ...(image ? { kubeProxy: image } : {}),
      });
      await new Promise((res) => setTimeout(res, 1000));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return seen;
    },
  };
}

describe("kubeforge up: 3 control planes + 2 workers, no endpoint of the user's", () => {
  it(
    "builds the cluster behind node-local proxies and a runner-side tunnel",
    async () => {
      clusterPath = await r.writeClusterFile(
        clusterFile({
          name: "ha-local",
          controlPlanes: ["cp-1", "cp-2", "cp-3"].map((n) => bed.host(n)),
          workers: WORKERS.map((n) => bed.host(n)),
          // One control plane through a sudo user: its proxy, static pods and etcd go through sudo.
          userFor: (h) => (h.name === "cp-2" ? SUDO_USER : "root"),
          kubernetesDownloads: server.sources.kubernetes,
          kubernetesVersion: FROM,
        }),
      );
      // Five nodes, three joins in a row: under a loaded CI machine this took over 400 s.
      const result = await r.kubeforge(
        ["up", "-f", clusterPath, "--kubeconfig", kubeconfig],
        HA_UP_TIMEOUT_MS,
      );
      if (result.code !== 0) throw new Error(await diagnostics(bed, result));

      // The exported admin.conf names the tunnel and verifies the API server as "kubernetes".
      const admin = await readFile(kubeconfig, "utf8");
      expect(admin).toMatch(/server: https:\/\/127\.0\.0\.1:\d+/);
      expect(admin).toContain("tls-server-name: kubernetes");
      expect(await nodeReadiness(r, kubeconfig)).toEqual({
        "cp-1": "True",
        "cp-2": "True",
        "cp-3": "True",
        "w-1": "True",
        "w-2": "True",
      });

      // Every node runs the proxy; the worker's kubelet and kube-proxy use it.
      for (const h of bed.hosts) {
        const listening = await h.sshRun("ss -Hltn sport = :7443");
        expect(listening.stdout, h.name).toContain("127.0.0.1:7443");
      }
      // kubeadm's controlPlaneEndpoint is the node-local proxy: everything kubeadm derives from it
      // (kubelet.conf, admin.conf on every control plane, kube-proxy's kubeconfig) goes through it.
      const kubelet = await bed.host("w-1").sshRun("cat /etc/kubernetes/kubelet.conf");
      expect(kubelet.stdout).toContain("server: https://127.0.0.1:7443");
      const cpAdmin = await bed.host("cp-3").sshRun("cat /etc/kubernetes/admin.conf");
      expect(cpAdmin.stdout).toContain("server: https://127.0.0.1:7443");
      const proxy = await r.kubectl<ConfigMap>(kubeconfig, [
        "-n",
        "kube-system",
        "get",
        "configmap",
        "kube-proxy",
      ]);
      expect(proxy.data["kubeconfig.conf"]).toContain("server: https://127.0.0.1:7443");
      const cm = await r.kubectl<ConfigMap>(kubeconfig, [
        "-n",
        "kube-system",
        "get",
        "configmap",
        "kubeadm-config",
      ]);
      expect(cm.data.ClusterConfiguration).toContain("controlPlaneEndpoint: 127.0.0.1:7443");
    },
    HA_UP_TIMEOUT_MS + 60_000,
  );

  it(
    "a second up changes nothing and keeps the cluster reachable",
    async () => {
      const result = await r.kubeforge(
        ["up", "-f", clusterPath, "--kubeconfig", kubeconfig],
        HA_UP_TIMEOUT_MS,
      );
      if (result.code !== 0) throw new Error(await diagnostics(bed, result));
      expect(result.stderr).not.toMatch(/kubeforge-apiserver-proxy (started|restarted)/);
      expect(await nodeReadiness(r, kubeconfig)).toMatchObject({ "w-1": "True" });
    },
    HA_UP_TIMEOUT_MS + 60_000,
  );

  it("upgrades two minors with --via auto behind the node-local proxies: each hop gated, etcd keeps quorum, the addons move with the last control plane", async () => {
    const watch = observe();
    const upgraded = await upgrade().finally(() => watch.stop());
    const { report, stderr } = upgraded;
    upgradeReport = report;
    const seen = await watch.stop();
    expect(report.from).toBe(FROM);
    expect(report.hops!.map((h) => [h.from, h.to, h.result])).toEqual([
      [FROM, MIDDLE, "succeeded"],
      [MIDDLE, TARGET, "succeeded"],
    ]);
    expect(report.nodes.map((n) => [n.name, n.result])).toEqual([
      ...CONTROL_PLANES.map((n) => [n, "upgraded"]),
      ["w-1", "upgraded"],
      ["w-2", "upgraded"],
    ]);
    // Every node changed and was gated in each hop, the control planes one at a time.
    for (const n of report.nodes) {
      for (const hop of [MIDDLE, TARGET]) {
        const steps = n.steps.filter((s) => s.hop === hop);
        expect(
          steps.map((s) => s.name),
          `${n.name} in the hop to ${hop}`,
        ).toContain("gate");
        expect(steps.every((s) => s.result === "ok")).toBe(true);
      }
    }
    /** When `node`'s `step` started, in each hop. */
    const stepStarts = (node: string, step: string) =>
      report.nodes
        .find((n) => n.name === node)!
        .steps.filter((s) => s.name === step)
        .map((s) => Date.parse(s.startedAt));

    // Real etcd: never more than one member down, so the quorum held; all three healthy after.
    expect(seen.length).toBeGreaterThan(20);
    for (const o of seen) expect(o.etcdHealthy.length, JSON.stringify(o)).toBeGreaterThanOrEqual(2);
    const members = JSON.parse(
      await etcdctl(bed.host("cp-2"), ["endpoint", "health", "--cluster", "-w", "json"]),
    ) as { health: boolean }[];
    expect(members.map((m) => m.health)).toEqual([true, true, true]);

    // In each hop kube-proxy stays at the hop's old version until the last control plane's
    // `upgrade node` runs (kubeadm v1.28+: postupgrade.go UnupgradedControlPlaneInstances).
    const [firstHopLast, secondHopLast] = stepStarts("cp-3", "upgrade-node");
    const images = seen.filter((o) => o.kubeProxy !== undefined);
    const between = (from: number, to: number) =>
      images.filter((o) => o.at >= from && o.at < to).map((o) => o.kubeProxy);
    expect(between(0, firstHopLast!).length).toBeGreaterThan(10);
    expect(new Set(between(0, firstHopLast!))).toEqual(new Set([FROM]));
    const middle = between(firstHopLast!, secondHopLast!);
    expect(middle).toContain(MIDDLE);
    expect(middle).not.toContain(TARGET);
    expect(report.addons.kubeProxy).toEqual({ before: FROM, after: TARGET });
    expect(stderr).toMatch(
      /cp-1: .*\[upgrade\/addon\] Skipping upgrade of addons because control plane instances \[cp-2 cp-3\] have not been upgraded/,
    );

    // The API probes: a control plane's own endpoint goes away only during its own step (its
    // etcd restarted there: the simulated kube-apiserver restarts in-process on the node's
    // store within milliseconds, so what a sample sees is its etcd's restart, /readyz failing
    // while the store's watch is down); the stable endpoint (admin.conf's server: cp-1's
    // node-local proxy) rode through it. An etcd back within one probe interval (500 ms) shows no
    // failed sample, so not every restart is seen: of six, at least one is.
    const endpoints = report.api!.endpoints;
    expect(endpoints.map((e) => [e.name, e.url])).toEqual([
      ...CONTROL_PLANES.map((n) => [n, `https://${bed.host(n).address}:6443`]),
      ["stable", "https://127.0.0.1:7443"],
    ]);
    for (const e of endpoints) expect(e.samples, e.name).toBeGreaterThan(20);
    const ownOutages = CONTROL_PLANES.flatMap((n) =>
      endpoints.find((e) => e.name === n)!.outages.map((o) => ({ n, o })),
    );
    expect(ownOutages.length, JSON.stringify(endpoints)).toBeGreaterThan(0);
    const logs = new Map<string, LogLine[]>();
    for (const n of CONTROL_PLANES) logs.set(n, await apiServerLog(bed.host(n), n));
    for (const { n, o } of ownOutages) {
      const what = `${n}: ${JSON.stringify(o)}`;
      // A sample with no answer at all, while the server's own log shows it was up (answering
      // others, or held by the simulation's synchronous etcd call), says the machine was slow,
      // not that the endpoint went away; it may fall outside the node's own steps.
      const start = Date.parse(o.start);
      const silent = /^no answer within/.test(o.error)
        ? upButSilent(logs.get(n)!, start, start + o.seconds * 1000)
        : undefined;
      if (silent) {
        expect(o.samples, `${what}: ${silent}`).toBeLessThanOrEqual(2);
        continue;
      }
      expect(o.during.length, what).toBeGreaterThan(0);
      for (const step of o.during) expect(step, what).toMatch(new RegExp(`^${n} `));
    }
    // The stable endpoint never failed because a control plane's API server went away: before
    // each control plane changed, kubeforge took it out of every node's proxy through HAProxy's
    // runtime API (maintenance, its sessions closed, so clients moved before it stopped), and
    // put it back after its gate. What no proxy can hide remains:
    // - closing the sessions fails the one request in flight on such a session at that instant
    //   (TCP mode: HAProxy sees no request boundaries): one sample, a closed connection, at that
    //   control plane's proxy-out;
    // - when the restarted etcd member was the leader, no API server can serve until the others
    //   elect one (etcd's election timeout, 1 s by default): a write fails "etcdserver: no
    //   leader", a read waits while the etcd client sends it again (clientv3), /readyz fails
    //   meanwhile so HAProxy marks the servers down and closes their sessions: at most three
    //   samples, a closed connection or etcd's error, in that control plane's upgrade step;
    // - a sample no API server answered while one of them was held (the simulation's limit,
    //   as above): at most two samples.
    const CLOSED_CONNECTION = /other side closed|socket hang up|ECONNRESET|EPIPE/;
    const stable = endpoints.find((e) => e.name === "stable")!;
    expect(stable.outages.length).toBeLessThanOrEqual(4 * CONTROL_PLANES.length);
    for (const o of stable.outages) {
      const what = JSON.stringify(o);
      const start = Date.parse(o.start);
      const held = /^no answer within/.test(o.error)
        ? CONTROL_PLANES.map((n) =>
            upButSilent(logs.get(n)!, start, start + o.seconds * 1000),
          ).filter((why) => why?.includes("held the API server"))
        : [];
      if (held.length > 0) {
        expect(o.samples, `${what}: ${held.join("; ")}`).toBeLessThanOrEqual(2);
        continue;
      }
      const closed = CLOSED_CONNECTION.test(o.error);
      const election =
        o.during.length > 0 && o.during.every((s) => /^cp-[123] upgrade-(apply|node)$/.test(s));
      if (/etcdserver: (no leader|leader changed)/.test(o.error) || (closed && election)) {
        expect(o.samples, what).toBeLessThanOrEqual(3);
        for (const step of o.during) expect(step, what).toMatch(/^cp-[123] upgrade-(apply|node)$/);
        continue;
      }
      expect(o.samples, what).toBe(1);
      expect(o.error).toMatch(CLOSED_CONNECTION);
      for (const step of o.during) expect(step).toMatch(/^cp-[123] (etcd-quorum|proxy-out)$/);
    }
    for (const n of CONTROL_PLANES) {
      const steps = report.nodes.find((x) => x.name === n)!.steps.map((s) => s.name);
      expect(
        steps.filter((s) => s === "proxy-out"),
        n,
      ).toHaveLength(2);
    }
    for (const n of CONTROL_PLANES) {
      expect(stderr).toContain(
        `[apiserver-proxy] ${n} taken out of the node-local API server proxies of 5 of 5 node(s)`,
      );
    }
    expect(stderr).not.toMatch(/\[apiserver-proxy\] .*runtime API/);
  }, 900_000);

  it("keeps a canary replica through both hops; each hop's settle gate holds w-2 until w-1's replica is back", () => {
    const report = upgradeReport;
    const canary = report.workloads!.workloads.find((w) => w.name === CANARY_NAME)!;
    const seen = JSON.stringify({
      canary,
      nodes: report.nodes.slice(3),
      disruptions: report.disruptions,
    });
    expect(canary.samples, seen).toBeGreaterThan(20);
    // The runner reaches every node: the canary is asked on its NodePort, entering by the
    // workers first (kube-proxy serves it on every node, the control planes too).
    expect(canary.checks, seen).toMatch(
      / via NodePort \d+, on the first node no step runs on of w-1 \S+, w-2 \S+, cp-\d \S+, cp-\d \S+, cp-\d \S+$/,
    );
    const availability = canary.availability!;
    expect(availability[0], seen).toMatchObject({ available: 2, desired: 2 });
    // One replica per worker and a budget of one: a drain never takes the last one.
    expect(Math.min(...availability.map((a) => a.available)), seen).toBe(1);
    // A request can fail only if it was in flight on an evicted replica when it stopped.
    for (const o of canary.outages) {
      expect(o.samples, seen).toBeLessThanOrEqual(2);
      expect(
        o.during.some((step) => /^w-[12] drain$/.test(step)),
        seen,
      ).toBe(true);
    }
    const at = (s: { startedAt: string }) => Date.parse(s.startedAt);
    const end = (s: { startedAt: string; seconds: number }) => at(s) + s.seconds * 1000;
    const stepsOf = (node: string, hop: string) =>
      report.nodes.find((n) => n.name === node)!.steps.filter((s) => s.hop === hop);
    for (const hop of [MIDDLE, TARGET]) {
      const w1 = stepsOf("w-1", hop);
      const w2 = stepsOf("w-2", hop);
      // --worker-batch 1: w-1's batch, its settle gate, then w-2's (the last: no gate after it).
      expect(w1.map((s) => s.name).at(-1), `${hop} ${seen}`).toBe("settle");
      expect(w2.map((s) => s.name)).not.toContain("settle");
      const drain = w1.find((s) => s.name === "drain")!;
      const settle = w1.at(-1)!;
      expect(at(w2[0]!), `${hop} ${seen}`).toBeGreaterThanOrEqual(end(settle) - 5);
      // The Deployment was short of the replica w-1's drain evicted (the watches, to the
      // event) until before the gate let w-2 go; the watch event may reach the runner a moment
      // after the gate's own read of the same status.
      const short = report.disruptions!.disruptions.find(
        (x) =>
          x.kind === "unavailable" &&
          x.object === `Deployment kubeforge-probes/${CANARY_NAME}` &&
          Date.parse(x.at) >= at(drain) &&
          Date.parse(x.at) <= end(drain),
      );
      expect(short, `${hop} ${seen}`).toBeDefined();
      expect(Date.parse(short!.at) + short!.seconds! * 1000, `${hop} ${seen}`).toBeLessThanOrEqual(
        end(settle) + 1000,
      );
    }
  });

  it("keeps the worker Ready and kubectl working with the first control plane stopped", async () => {
    await bed.host("cp-1").node.stop({ keepFiles: true });
    const readiness = await eventually(
      "cp-1 to be seen as not Ready",
      async () => {
        const nodes = await nodeReadiness(r, kubeconfig);
        if (nodes["cp-1"] === "True") throw new Error(JSON.stringify(nodes));
        return nodes;
      },
      90_000,
    );
    expect(readiness).toMatchObject({ "cp-1": "Unknown", "cp-2": "True", "w-1": "True" });
  }, 180_000);

  it("down stops the runner-side tunnel", async () => {
    const state = JSON.parse(await readFile(`${kubeconfig}.tunnel.json`, "utf8")) as {
      pid: number;
    };
    expect(alive(state.pid)).toBe(true);
    const result = await r.kubeforge(
      ["down", "-f", clusterPath, "--kubeconfig", kubeconfig],
      240_000,
    );
    // cp-1 is stopped with its files kept: down still resets every host.
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stderr).toContain("the SSH tunnel to the API servers was stopped");
    // The proxies went with the cluster.
    for (const h of bed.hosts) {
      const unit = await h.sshRun("test -e /etc/systemd/system/kubeforge-apiserver-proxy.service");
      expect(unit.code, h.name).not.toBe(0);
      expect((await h.sshRun("ss -Hltn sport = :7443")).stdout.trim(), h.name).toBe("");
      // Not removed one by one, but every member's data is gone.
      expect((await h.sshRun("ls -A /var/lib/etcd")).stdout.trim(), h.name).toBe("");
    }
    await eventually("the tunnel process to end", () =>
      alive(state.pid) ? Promise.reject(new Error("still running")) : Promise.resolve(),
    );
  }, 300_000);
});
