import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerExec } from "../../../src/remote/docker/exec.js";
import { dockerTestsUnavailable } from "../../support/docker.js";
import { TEST_TIME_SCALE } from "../../support/sim/kubelet/timing.js";
import { nodeReadiness } from "../up/support.js";
import { dockerRunner, type DockerRunner } from "./support.js";

// One cluster of three control planes and two workers, every node a container on a real Docker
// engine with real systemd, against the simulated control plane — one build for everything the
// Docker cluster tests assert, because each build costs minutes of a 2-core machine:
// - `kubeforge up`: the containers are created by up itself, node preparation runs for real in
//   them (binaries from the local release server, containerd configured and restarted by
//   systemd, sysctls in the container's network namespace, the kubelet unit and drop-in, the
//   simulated kubelet started by systemd), then init, the joins, the built-in bridge network and
//   the readiness wait. A real three-member etcd (Debian's etcd, run by the simulated kubelet
//   from the etcd.yaml init and the joins wrote), kubeforge's node-local API server proxy
//   (HAProxy under each container's systemd), and admin.conf on the runner through the
//   runner-side tunnel to the three API servers (several control planes: no one control plane's
//   published port is the cluster's endpoint).
// - `kubeforge upgrade --to v1.36.3`, node by node: the control planes one after the other, then
//   the workers one at a time; systemd restarts each kubelet, which reports the target; etcd
//   keeps its three voting members.
// - The etcd leader's container stopped: the API still answers through the tunnel and the
//   cluster settles with that node Unknown and the four others Ready.
// - `down` leaves no container (the stopped one too), volume or network of the cluster behind.

const unavailable = dockerTestsUnavailable();
if (unavailable && process.env.CI)
  throw new Error(`the Docker tests cannot run under CI: ${unavailable}`);

const NAME = `dk${process.pid}`;
const TARGET = "v1.36.3";
const CONTROL_PLANES = ["cp-1", "cp-2", "cp-3"];
const WORKERS = ["w-1", "w-2"];
const NODES = [...CONTROL_PLANES, ...WORKERS];
/**
 * kube-controller-manager's --node-monitor-grace-period for this cluster, in unscaled seconds:
 * 30 s at the simulation's time scale, where the default 50 s would be 12.5 s. Five containers
 * on two cores under a parallel test suite can keep a kubelet's heartbeats from landing for that
 * long, which turned two control planes Unknown in the middle of an upgrade's preflight.
 */
const NODE_MONITOR_GRACE_SECONDS = 120;

interface UpgradeReport {
  from: string;
  to: string;
  result: string;
  nodes: { name: string; result: string; kubeletAfter?: string; steps: { startedAt: string }[] }[];
}

interface NodeList {
  items: {
    metadata: { name: string };
    spec: { unschedulable?: boolean };
    status: { nodeInfo: { kubeletVersion: string } };
  }[];
}

interface KubeConfigView {
  clusters: { cluster: { server: string; "tls-server-name"?: string } }[];
}

let r: DockerRunner;
let clusterPath: string;
let kubeconfig: string;
let upResult: { code: number; stdout: string; stderr: string };

const container = (node: string) => `kubeforge-${NAME}-${node}`;
const same = (a: Record<string, string>, b: Record<string, string>) =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
const allReady = () => Object.fromEntries(NODES.map((n) => [n, "True"]));

/** etcdctl in a control plane's container, against its own member. */
const etcdctl = (node: string, args: string[]) =>
  containerExec(r.engine, container(node), node, [
    "etcdctl",
    "--endpoints=https://127.0.0.1:2379",
    "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
    "--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt",
    "--key=/etc/kubernetes/pki/etcd/healthcheck-client.key",
    ...args,
  ]);

/** etcd's members seen from cp-1, [name, isLearner], sorted. */
async function etcdMembers(): Promise<[string, boolean][]> {
  const list = await etcdctl("cp-1", ["member", "list", "-w", "json"]);
  expect(list.code, list.stderr.toString()).toBe(0);
  const members = (
    JSON.parse(list.stdout.toString()) as { members: { name: string; isLearner?: boolean }[] }
  ).members;
  return members.map((m): [string, boolean] => [m.name, m.isLearner ?? false]).sort();
}

/**
 * The control plane whose etcd member is the leader. Member IDs are 64-bit: read as text from
 * etcdctl's JSON, where JSON.parse would round them.
 */
async function etcdLeader(): Promise<string> {
  const end = Date.now() + 60_000;
  for (;;) {
    for (const node of CONTROL_PLANES) {
      const status = await etcdctl(node, ["endpoint", "status", "-w", "json"]);
      const text = status.stdout.toString();
      const id = /"member_id":(\d+)/.exec(text)?.[1];
      const leader = /"leader":(\d+)/.exec(text)?.[1];
      if (status.code === 0 && id !== undefined && id === leader) return node;
    }
    if (Date.now() > end) throw new Error("no etcd member reports itself the leader");
    await new Promise((res) => setTimeout(res, 2_000));
  }
}

async function kubeletPid(node: string): Promise<string> {
  const out = await containerExec(r.engine, container(node), node, [
    "systemctl",
    "show",
    "kubelet",
    "-p",
    "MainPID",
    "--value",
  ]);
  return out.stdout.toString().trim();
}

/** Each Node's Ready condition as kubectl sees it, one line each, for a failure's message. */
async function readyConditions(): Promise<string> {
  const nodes = await r
    .kubectl<{
      items: {
        metadata: { name: string };
        status?: {
          conditions?: {
            type: string;
            status: string;
            reason?: string;
            lastHeartbeatTime?: string;
          }[];
        };
      }[];
    }>(kubeconfig, ["get", "nodes"])
    .catch((e: Error) => e);
  if (nodes instanceof Error) return `Nodes not readable: ${nodes.message}`;
  return nodes.items
    .map((n) => {
      const c = n.status?.conditions?.find((x) => x.type === "Ready");
      return `${n.metadata.name}: Ready=${c?.status} ${c?.reason ?? ""} heartbeat ${c?.lastHeartbeatTime ?? "-"}`;
    })
    .join("\n");
}

beforeAll(async () => {
  if (unavailable) return;
  r = await dockerRunner();
  clusterPath = await r.writeClusterFile(
    r.clusterFile({ name: NAME, controlPlanes: 3, workers: 2, wait: "8m" }) +
      [
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        "controllerManager:",
        `  extraArgs: [{name: node-monitor-grace-period, value: ${NODE_MONITOR_GRACE_SECONDS}s}]`,
        "",
      ].join("\n"),
  );
  kubeconfig = join(r.dir, "admin.conf");
  upResult = await r.cli(["up", "-f", clusterPath, "--kubeconfig", kubeconfig], 3_000_000);
}, 60 * 60_000);

afterAll(async () => {
  if (!r) return;
  if ((await r.owned(NAME)).length > 0)
    await r.cli(["down", "-f", clusterPath, "--kubeconfig", kubeconfig]);
  await r.close();
}, 600_000);

describe.skipIf(unavailable)("kubeforge on docker nodes: 3 control planes, 2 workers", () => {
  it("builds the cluster in containers and exports admin.conf through the runner-side tunnel", async () => {
    expect(upResult.code, `${upResult.stderr.slice(-6000)}\n${upResult.stdout}`).toBe(0);
    expect(upResult.stdout.trim()).toBe(kubeconfig);
    for (const node of NODES)
      expect(upResult.stderr).toContain(`[docker] ${node}: container ${container(node)}`);
    // With several control planes and no endpoint of the user's, the cluster's endpoint is the
    // node-local proxies: admin.conf names the tunnel on the runner's loopback, which goes
    // straight to each control plane's API server at its address on the cluster's network
    // (the runner reaches the containers' bridge), in the order of the Cluster file.
    const addresses = await Promise.all(
      CONTROL_PLANES.map(async (node) => {
        const info = await r.engine.inspectContainer(container(node));
        const ips = Object.values(info?.NetworkSettings.Networks ?? {})
          .map((n) => n.IPAddress)
          .filter((ip) => ip);
        expect(ips, node).toHaveLength(1);
        return `${ips[0]}:6443`;
      }),
    );
    const written =
      /admin\.conf written to (.*) \(server (https:\/\/127\.0\.0\.1:\d+), (.*)\)$/m.exec(
        upResult.stderr,
      );
    expect(written, upResult.stderr.slice(-6000)).not.toBeNull();
    const [, path, server, via] = written!;
    expect(path).toBe(kubeconfig);
    expect(via).toBe(`tunnel to ${addresses.join(", ")}`);
    const view = await r.kubectl<KubeConfigView>(kubeconfig, ["config", "view", "--raw"]);
    expect(view.clusters.map((c) => c.cluster)).toMatchObject([
      { server, "tls-server-name": "kubernetes" },
    ]);
  });

  it("has five Ready nodes, seen by kubectl through the tunnel", async () => {
    expect(await nodeReadiness(r, kubeconfig)).toEqual(allReady());
  });

  it("runs a three-member etcd across the control-plane containers, no learner left", async () => {
    expect(await etcdMembers()).toEqual([
      ["cp-1", false],
      ["cp-2", false],
      ["cp-3", false],
    ]);
  });

  it("runs the node-local API server proxy under every container's systemd", async () => {
    for (const node of NODES) {
      const active = await containerExec(r.engine, container(node), node, [
        "systemctl",
        "is-active",
        "kubeforge-apiserver-proxy",
      ]);
      expect(active.stdout.toString().trim(), node).toBe("active");
    }
  });

  it("ran the kubelet under each container's systemd, from the unit node preparation wrote", async () => {
    for (const node of NODES) {
      const show = await containerExec(r.engine, container(node), node, [
        "systemctl",
        "show",
        "kubelet",
        "-p",
        "ActiveState",
        "-p",
        "FragmentPath",
        "-p",
        "DropInPaths",
      ]);
      const text = show.stdout.toString();
      expect(text, node).toContain("ActiveState=active");
      expect(text, node).toContain("FragmentPath=/etc/systemd/system/kubelet.service");
      expect(text, node).toContain(
        "DropInPaths=/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
      );
    }
  });

  it("upgrades node by node to v1.36.3: systemd restarts each kubelet, which reports the target", async () => {
    const before = await Promise.all(NODES.map(kubeletPid));
    const reportPath = join(r.dir, "report", "upgrade-report.json");
    const upgrade = await r.cli(
      [
        "upgrade",
        "-f",
        clusterPath,
        "--to",
        TARGET,
        "--report",
        reportPath,
        "--drain-timeout",
        "2m",
        "--node-timeout",
        "5m",
      ],
      1_700_000,
    );
    const why = upgrade.code === 0 ? "" : await readyConditions();
    expect(upgrade.code, `${upgrade.stderr.slice(-6000)}\n${upgrade.stdout}\n${why}`).toBe(0);
    // Each control plane left every container's API server proxy (HAProxy under systemd, its
    // runtime API through socat) before it changed.
    for (const cp of ["cp-1", "cp-2", "cp-3"]) {
      expect(upgrade.stderr).toContain(
        `[apiserver-proxy] ${cp} taken out of the node-local API server proxies of 5 of 5 node(s)`,
      );
    }
    expect(upgrade.stderr).not.toMatch(/\[apiserver-proxy\] .*runtime API/);
    const report = JSON.parse(await readFile(reportPath, "utf8")) as UpgradeReport;
    expect(report).toMatchObject({ from: "v1.35.0", to: TARGET, result: "succeeded" });
    // kubeadm's documented order: the control planes first, one after the other, then the
    // workers one at a time.
    expect(report.nodes.map((n) => [n.name, n.result, n.kubeletAfter])).toEqual(
      NODES.map((n) => [n, "upgraded", TARGET]),
    );
    const started = (n: string) =>
      Date.parse(report.nodes.find((x) => x.name === n)!.steps[0]!.startedAt);
    for (let i = 1; i < NODES.length; i++)
      expect(started(NODES[i - 1]!), `${NODES[i - 1]} before ${NODES[i]}`).toBeLessThan(
        started(NODES[i]!),
      );
    // A new kubelet process under each container's systemd, not the one `up` started.
    const after = await Promise.all(NODES.map(kubeletPid));
    for (const [i, pid] of after.entries()) {
      expect(pid, NODES[i]).toMatch(/^[1-9]\d*$/);
      expect(pid, NODES[i]).not.toBe(before[i]);
    }
    const list = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
    expect(
      list.items.map((n) => [
        n.metadata.name,
        n.status.nodeInfo.kubeletVersion,
        n.spec.unschedulable ?? false,
      ]),
    ).toEqual(NODES.map((n) => [n, TARGET, false]));
    expect(await nodeReadiness(r, kubeconfig)).toEqual(allReady());
    // Every control plane's etcd restarted from its new manifest and rejoined as a voter.
    expect(await etcdMembers()).toEqual([
      ["cp-1", false],
      ["cp-2", false],
      ["cp-3", false],
    ]);
  }, 1_800_000);

  it("answers and keeps the other nodes Ready with the etcd leader's container stopped", async () => {
    // Right after `up` the etcd leader was cp-1, the first member; the upgrade restarted every
    // member, so the leader is now any of them. Stopping the leader keeps what the check is
    // about: a leader election among the two members left, beside HAProxy's failover on every
    // node and the tunnel's on the runner.
    const stopped = await etcdLeader();
    console.info(`stopping ${stopped}, the etcd leader`);
    const info = await r.engine.inspectContainer(container(stopped));
    await r.engine.stopContainer(info!.Id, 10);
    // The simulated kubelets and node-lifecycle controller run 4 times faster than real ones
    // (heartbeats every 2.5 s, the grace period NODE_MONITOR_GRACE_SECONDS scaled), while
    // HAProxy's failover (a check every second, down after two failures, a 3 s connect timeout)
    // and etcd's leader election take real time: a node may miss its shortened grace period
    // while its proxy moves off the stopped control plane, which a real kubelet would not. What
    // must hold is the state after the failover: the stopped node Unknown and every other node
    // Ready, through the API of the surviving control planes.
    const settled = { ...allReady(), [stopped]: "Unknown" };
    // Settled means the same for samples a second apart over twice the grace period, so the
    // other nodes' heartbeats are getting through.
    const samples = Math.ceil(2 * NODE_MONITOR_GRACE_SECONDS * TEST_TIME_SCALE) + 1;
    const end = Date.now() + 240_000;
    let seen: Record<string, string> = {};
    let inARow = 0;
    while (inARow < samples) {
      if (Date.now() > end)
        throw new Error(
          `the cluster did not settle with ${stopped} stopped; last seen ${JSON.stringify(seen)}`,
        );
      seen = await nodeReadiness(r, kubeconfig).catch((e: Error) => ({ error: e.message }));
      inARow = same(seen, settled) ? inARow + 1 : 0;
      await new Promise((res) => setTimeout(res, 1_000));
    }
    expect(seen).toEqual(settled);
  }, 400_000);

  it("down removes every container, volume and network of the cluster, the stopped one too", async () => {
    const before = await r.owned(NAME);
    expect(before.filter((o) => o.startsWith("container")).sort()).toEqual(
      NODES.map((n) => `container /${container(n)}`).sort(),
    );
    const down = await r.cli(["down", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    expect(down.code, down.stderr).toBe(0);
    expect(await r.owned(NAME)).toEqual([]);
  }, 600_000);
});
