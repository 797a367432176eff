import { spawn, type ChildProcess } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import {
  clusterFile,
  diagnostics,
  eventually,
  nodeReadiness,
  runner,
  secretLines,
  type Runner,
} from "./support.js";
import { etcdctl } from "../../support/etcdctl.js";
import { bundledCli } from "../../support/cli.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";

// `kubeforge up` with three control planes and a worker over real SSH, behind the user's own
// load balancer (a real HAProxy on the runner's side of the testbed bridge, TCP mode with health
// checks, as a user's LB in front of the API servers would be). The three control planes form a
// real three-member etcd cluster; with one control plane stopped, the worker stays Ready and
// kubectl through the exported admin.conf still works. Before that, `kubeforge upgrade -f`
// takes the cluster from v1.35.0 to v1.36.3 in kubeadm's order (kubeadm-upgrade.md §2): `upgrade
// apply` on cp-1, `upgrade node` on cp-2 then cp-3 each after an etcd quorum check, then the
// worker; the addons move only with the last control plane (kubeadm v1.28+, postupgrade.go
// UnupgradedControlPlaneInstances).

const TARGET = "v1.36.3";

interface UpgradeReport {
  from: string;
  to: string;
  result: string;
  addons: { kubeProxy: { before?: string; after?: string } };
  api: {
    endpoints: {
      name: string;
      url: string;
      samples: number;
      failures: number;
      outages: { during: string[] }[];
    }[];
  };
  nodes: {
    name: string;
    result: string;
    steps: { name: string; startedAt: string; seconds: number; detail?: string }[];
  }[];
}

interface DaemonSet {
  spec: { template: { spec: { containers: { image: string }[] } } };
}

interface NodeObject {
  spec: { unschedulable?: boolean };
}

interface NodeList {
  items: { status: { nodeInfo: { kubeletVersion: string } } }[];
}

let bed: SshTestbed;
let r: Runner;
let haproxy: ChildProcess | undefined;
let kubeconfig: string;
let endpoint: string;
let server: ReleaseServer;
let clusterPath: string;

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "cp-2", "cp-3", "w-1"], { ssh: true });
  r = await runner();
  endpoint = `${bed.gateway}:6443`;
  const cfg = join(r.dir, "haproxy.cfg");
  await writeFile(
    cfg,
    [
      "defaults",
      "  mode tcp",
      "  timeout connect 2s",
      "  timeout client 5m",
      "  timeout server 5m",
      "  retries 3",
      "  option redispatch",
      "frontend api",
      `  bind ${endpoint}`,
      "  default_backend apiservers",
      "backend apiservers",
      ...bed.hosts
        .filter((h) => h.name.startsWith("cp-"))
        .map((h) => `  server ${h.name} ${h.address}:6443 check inter 500ms fall 2 rise 1`),
      "",
    ].join("\n"),
  );
  haproxy = spawn("haproxy", ["-db", "-f", cfg], { stdio: "ignore" });
  kubeconfig = join(r.dir, "admin.conf");
  server = await startReleaseServer();
}, 120_000);

afterAll(async () => {
  haproxy?.kill("SIGKILL");
  await bed?.stop();
  await server?.close();
}, 120_000);

interface UpgradeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Whether the trigger's line was seen (and its action taken). */
  triggered: boolean;
  report?: UpgradeReport;
}

let upgradeRuns = 0;
let resumed: UpgradeRun | undefined;

/**
 * `kubeforge upgrade -f --to TARGET` as a child process (its stderr watched): `act` is taken
 * once when a stderr line matches `trigger`. The report of each run is kept apart.
 */
async function upgradeUntil(
  trigger: RegExp | undefined,
  act: (child: ChildProcess) => void,
): Promise<UpgradeRun> {
  const cli = await bundledCli();
  const caFile = join(r.dir, "release-ca.pem");
  await writeFile(caFile, server.ca);
  const reportPath = join(r.dir, `upgrade-report-${++upgradeRuns}.json`);
  const child = spawn(
    process.execPath,
    [
      join(cli.dir, "cli.js"),
      "upgrade",
      "-f",
      clusterPath,
      "--to",
      TARGET,
      "--report",
      reportPath,
      "--node-timeout",
      "3m",
    ],
    {
      env: { ...process.env, HOME: r.dir, NODE_EXTRA_CA_CERTS: caFile },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  let triggered = false;
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => {
    stderr += b.toString();
    if (!triggered && trigger?.test(stderr)) {
      triggered = true;
      act(child);
    }
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 840_000);
  const code = await new Promise<number | null>((res) => child.on("close", res));
  clearTimeout(timer);
  const report = await readFile(reportPath, "utf8").then(
    (t) => JSON.parse(t) as UpgradeReport,
    () => undefined,
  );
  return { code, stdout, stderr, triggered, ...(report ? { report } : {}) };
}

/** The node's upgrade marker, if kubeforge left one. */
async function markerOf(name: string): Promise<unknown> {
  const text = await readFile(bed.host(name).path("var/lib/kubeforge/node.json"), "utf8");
  return (JSON.parse(text) as { upgrade?: unknown }).upgrade;
}

describe("kubeforge up: 3 control planes + 1 worker behind the user's load balancer", () => {
  it("forms the cluster with three voting etcd members", async () => {
    // The upgrade below takes its kubelet and kubectl from the local release server.
    const path = await r.writeClusterFile(
      clusterFile({
        name: "ha",
        controlPlanes: ["cp-1", "cp-2", "cp-3"].map((n) => bed.host(n)),
        workers: [bed.host("w-1")],
        controlPlaneEndpoint: endpoint,
        kubernetesDownloads: server.sources.kubernetes,
      }),
    );
    clusterPath = path;
    // Four nodes, three joins in a row: alone about 4 minutes, on a loaded CI machine over 7.
    const result = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig], 840_000);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    // The certificate key (64 hex digits) never shows; the only such strings are CA pins.
    const output = result.stdout + result.stderr;
    const hex = [...output.matchAll(/(.{7})\b[0-9a-f]{64}\b/g)].map((m) => m[1]);
    expect(hex.every((before) => before === "sha256:")).toBe(true);
    for (const line of await secretLines(bed)) expect(output).not.toContain(line);
    // Control planes joined one at a time, in the Cluster file's order.
    const order = ["cp-2", "cp-3"].map((n) =>
      result.stderr.indexOf(`${n}: [preflight] Reading configuration from the cluster`),
    );
    expect(order[0]).toBeGreaterThan(-1);
    expect(order[1]).toBeGreaterThan(order[0]!);
    expect(await nodeReadiness(r, kubeconfig)).toEqual({
      "cp-1": "True",
      "cp-2": "True",
      "cp-3": "True",
      "w-1": "True",
    });
    const list = JSON.parse(await etcdctl(bed.host("cp-1"), ["member", "list", "-w", "json"])) as {
      members: { name: string; isLearner?: boolean }[];
    };
    expect(list.members.map((m) => [m.name, m.isLearner ?? false]).sort()).toEqual([
      ["cp-1", false],
      ["cp-2", false],
      ["cp-3", false],
    ]);
  }, 900_000);

  it("an upgrade interrupted by SIGINT in cp-1's static Pod replacement: exit 130, cp-1 left to resume", async () => {
    const run = await upgradeUntil(
      /cp-1: .*\[upgrade\/staticpods\] Waiting for the kubelet/,
      (child) => child.kill("SIGINT"),
    );
    expect(run.triggered, run.stderr).toBe(true);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toContain(
      "kubeforge: SIGINT: cancelling the commands running on every host, then stopping",
    );
    expect(run.report).toMatchObject({ result: "failed" });
    expect(await markerOf("cp-1")).toMatchObject({ to: TARGET, step: "started" });
    for (const n of ["cp-2", "cp-3", "w-1"]) expect(await markerOf(n), n).toBeUndefined();
    // The run stopped while cp-1's kubelet restarted etcd from its new manifest (nothing waits
    // for it once the run is gone). The next run reads the cluster through the load balancer,
    // cp-1's API server among the three: wait for its etcd member, then for reads through every
    // API server in turn (round robin) to answer.
    await vi.waitFor(() => etcdctl(bed.host("cp-1"), ["endpoint", "health"]), {
      timeout: 120_000,
      interval: 500,
    });
    await vi.waitFor(
      async () => {
        for (let i = 0; i < 6; i++) {
          await r.kubectl(kubeconfig, ["-n", "kube-system", "get", "configmap", "kubeadm-config"]);
        }
      },
      { timeout: 120_000, interval: 500 },
    );
  }, 600_000);

  it("resumes at cp-1, upgrades the control planes one at a time, the last one moving the addons; w-1's dropped SSH connection fails the run naming it", async () => {
    const run = await upgradeUntil(/w-1: \[upgrade\/preflight\]/, () => {
      void bed.host("w-1").dropSshSessions();
    });
    resumed = run;
    expect(run.triggered, run.stderr).toBe(true);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/\[plan\] control-plane: apply — .*\(resumed: a run stopped here\)/);
    expect(run.stderr).toMatch(/w-1.*(connection (dropped|was closed|is closed)|ECONNRESET)/);
    const report = run.report!;
    const steps = (name: string) => report.nodes.find((n) => n.name === name)!.steps;
    expect(report.nodes.map((n) => [n.name, n.result])).toEqual([
      ["cp-1", "upgraded"],
      ["cp-2", "upgraded"],
      ["cp-3", "upgraded"],
      ["w-1", "failed"],
    ]);
    // The resumed cp-1 names the etcd snapshot the interrupted run took (no second one).
    expect(steps("cp-1").map((s) => s.name)).toEqual([
      "etcd-snapshot",
      "upgrade-apply",
      "kubelet",
      "gate",
    ]);
    expect(steps("cp-1")[0]!.detail).toContain("taken by an earlier run");
    for (const cp of ["cp-2", "cp-3"])
      expect(steps(cp).map((s) => s.name)).toEqual([
        "etcd-quorum",
        "upgrade-node",
        "kubelet",
        "gate",
      ]);
    // One node at a time: each starts after the one before it ended.
    const span = (name: string) => {
      const s = steps(name);
      const last = s[s.length - 1]!;
      return [Date.parse(s[0]!.startedAt), Date.parse(last.startedAt) + last.seconds * 1000];
    };
    for (const [a, b] of [
      ["cp-1", "cp-2"],
      ["cp-2", "cp-3"],
      ["cp-3", "w-1"],
    ])
      expect(span(b!)[0]!, `${b} after ${a}`).toBeGreaterThanOrEqual(span(a!)[1]! - 1);
    // cp-1's apply left the addons to the last control plane, whose `upgrade node` moved them.
    expect(run.stderr).toMatch(
      /cp-1: .*\[upgrade\/addon\] Skipping upgrade of addons because control plane instances \[cp-2 cp-3\] have not been upgraded/,
    );
    expect(run.stderr).toMatch(
      /cp-2: .*\[upgrade\/addon\] Skipping upgrade of addons because control plane instances \[cp-3\] have not been upgraded/,
    );
    expect(report.addons.kubeProxy.before).toBe("v1.35.0");
    const proxy = await r.kubectl<DaemonSet>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "ds",
      "kube-proxy",
    ]);
    expect(proxy.spec.template.spec.containers[0]!.image).toMatch(new RegExp(`:${TARGET}$`));
    // The API probes: each control plane at its own address, and the load balancer (admin.conf's
    // server); whatever went away did so while a control plane changed, never in the worker's steps.
    expect(report.api.endpoints.map((e) => [e.name, e.url])).toEqual([
      ...["cp-1", "cp-2", "cp-3"].map((n) => [n, `https://${bed.host(n).address}:6443`]),
      ["stable", `https://${endpoint}`],
    ]);
    for (const e of report.api.endpoints) {
      expect(e.samples, e.name).toBeGreaterThan(10);
      for (const o of e.outages) {
        expect(o.during.length, e.name).toBeGreaterThan(0);
        for (const step of o.during) expect(step, e.name).toMatch(/^cp-[123] /);
      }
    }
    // The failed worker is not left cordoned (kubeforge uncordons after a failure).
    const w1 = await r.kubectl<NodeObject>(kubeconfig, ["get", "node", "w-1"]);
    expect(w1.spec.unschedulable ?? false).toBe(false);
  }, 900_000);

  it("a third run finds the control planes at the target and finishes w-1", async () => {
    expect(resumed?.code).toBe(1);
    const run = await upgradeUntil(undefined, () => {});
    if (run.code !== 0) throw new Error(await diagnostics(bed, { ...run, code: run.code ?? -1 }));
    expect(run.report!.nodes.map((n) => [n.name, n.result])).toEqual([
      ["cp-1", "skipped"],
      ["cp-2", "skipped"],
      ["cp-3", "skipped"],
      ["w-1", "upgraded"],
    ]);
    expect(run.report!.addons.kubeProxy).toEqual({ before: TARGET, after: TARGET });
    const nodes = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
    expect(nodes.items.map((n) => n.status.nodeInfo.kubeletVersion)).toEqual(Array(4).fill(TARGET));
    for (const n of ["cp-1", "cp-2", "cp-3", "w-1"])
      expect(await markerOf(n), n).toMatchObject({ to: TARGET, step: "done" });
    const members = JSON.parse(
      await etcdctl(bed.host("cp-1"), ["endpoint", "health", "--cluster", "-w", "json"]),
    ) as { health: boolean }[];
    expect(members.map((m) => m.health)).toEqual([true, true, true]);
  }, 900_000);

  it("keeps the worker Ready and kubectl working with one control plane stopped", async () => {
    await bed.host("cp-1").node.stop({ keepFiles: true });
    // The stopped node is noticed (its kubelet no longer renews its Lease) while the worker,
    // whose kubelet reaches the API through the endpoint, stays Ready; kubectl goes through the
    // exported admin.conf and the load balancer to a surviving API server.
    const readiness = await eventually("cp-1 to be seen as not Ready", async () => {
      const nodes = await nodeReadiness(r, kubeconfig);
      if (nodes["cp-1"] === "True") throw new Error(JSON.stringify(nodes));
      return nodes;
    });
    expect(readiness).toMatchObject({ "cp-1": "Unknown", "w-1": "True" });
    const health = JSON.parse(
      await etcdctl(bed.host("cp-2"), ["endpoint", "health", "-w", "json"]),
    ) as { health: boolean }[];
    expect(health.every((h) => h.health)).toBe(true);
  }, 180_000);
});
