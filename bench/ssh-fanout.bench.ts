// npm run bench (second figure): the SSH fan-out of `kubeforge up`. The host-side work of a
// worker join — connect with a pinned host key, inspect the host (facts, address, runtime,
// state), join's preflight checks (kubeadm's JoinNodeChecks, run for real over SSH), and the
// files a worker join writes (marker, CA, bootstrap kubeconfig, kubelet configuration, flags) —
// is timed on 8 testbed hosts at once and on 1 host, in the same run; the result is the ratio.
// The testbed's hosts share the runner's two cores, which real hosts do not: once each host's
// work is bound by the CPU, eight cannot take less than the machine's CPU time for them divided
// by its cores. So the figure is the 8 hosts' wall time divided by the longer of one host's wall
// time and that floor (all processes' CPU time from /proc/stat, in the same run). Goal: <= 1.5
// (eight hosts cost little more than one, or than the CPU they need: nothing serializes them).
// The plain 8-to-1 ratio and the runner's own CPU time are printed beside it.
// Needs root (network namespaces, sshd), like the integration tests. Run through vitest
// (bench/vitest.config.ts) for the TypeScript test support; the figure is printed, not asserted.
import { it } from "vitest";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { promisify } from "node:util";
import { inspectHost } from "../src/cluster/inventory.js";
import { initDocuments, joinDocuments } from "../src/cluster/up/kubeadm-documents.js";
import { writeMarker } from "../src/cluster/node-state.js";
import {
  preflightJoin,
  prepareNodeInit,
  prepareNodeJoin,
  type ClusterView,
} from "../src/cluster/up/node-workflows.js";
import { decodeConfigDocuments } from "../src/config/load.js";
import { defaultClusterSpec } from "../src/config/cluster/load.js";
import type { ClusterNodeSpec } from "../src/config/cluster/types.js";
import { fleet } from "../src/remote/fleet.js";
import { closeHosts, type Host } from "../src/remote/host.js";
import { SshHost } from "../src/remote/ssh/host.js";
import { TerminalReporter } from "../src/workflow/reporter.js";
import { createTestbed, type SshTestHost } from "../test/support/testbed.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HOSTS = 8;
const GOAL = 1.5;
const TOKEN = "abcdef.0123456789abcdef";
const HASH = `sha256:${"0".repeat(64)}`;

const quiet = new TerminalReporter({ write: () => {} });
const spec = defaultClusterSpec();
const user = decodeConfigDocuments(
  "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration: {ignorePreflightErrors: [all]}\n",
  "bench",
);

async function connect(h: SshTestHost): Promise<Host> {
  return SshHost.connect({
    name: h.name,
    endpoint: { host: h.ssh.host, port: h.ssh.port, user: "root" },
    credentials: { privateKey: await readFile(h.ssh.privateKeyFile) },
    hostKeys: { fingerprints: [h.ssh.hostKeyFingerprint] },
  });
}

/** One worker join's host-side work on `h`, against the cluster configuration `view`. */
async function joinHostWork(
  h: SshTestHost,
  view: ClusterView,
  files: Record<string, string>,
): Promise<void> {
  const host = await connect(h);
  try {
    const node: ClusterNodeSpec = {
      name: h.name,
      role: "worker",
      host: `ssh://root@${h.ssh.host}`,
    };
    const inv = await inspectHost(host, node, { cluster: "bench" });
    const target = { host, reporter: quiet, env: {} };
    const work = await prepareNodeJoin(
      target,
      joinDocuments(
        user,
        { ...node, address: inv.address },
        { token: TOKEN, caCertHashes: [HASH], apiServerEndpoint: "10.0.0.10:6443" },
      ),
    );
    await preflightJoin(target, work, view);
    const marker = {
      cluster: "bench",
      node: h.name,
      role: "worker" as const,
      kubernetesVersion: "v1.35.0",
    };
    await writeMarker(host, { ...marker, status: "started" });
    for (const [path, text] of Object.entries(files)) await host.writeFile(path, text, 0o600);
    await writeMarker(host, { ...marker, status: "done" });
    for (const path of Object.keys(files)) await host.remove(path);
    await host.remove("/var/lib/kubeforge/node.json");
  } finally {
    await closeHosts([host]);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** CPU time every process on the machine has used (proc(5): /proc/stat's cpu line), in ms. */
async function machineCpuMs(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8")).split("\n")[0]!;
  // user nice system idle iowait irq softirq steal (guest time is inside user already).
  const [user, nice, system, , , irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  const ticks = user! + nice! + system! + irq! + softirq! + steal!;
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/** The runner's own CPU time (user + system), in ms. */
const runnerCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface Timed {
  wall: number;
  /** The whole machine's CPU time meanwhile. */
  cpu: number;
  /** The runner's. */
  runner: number;
}

it("SSH fan-out: worker-join host work on 8 hosts vs 1", async () => {
  const bed = await createTestbed(
    Array.from({ length: HOSTS }, (_, i) => `b-${i + 1}`),
    { ssh: true },
  );
  try {
    const first = bed.hosts[0]!;
    const firstHost = await connect(first);
    const { prepared } = await prepareNodeInit(
      { host: firstHost, reporter: quiet, env: {} },
      initDocuments(
        spec,
        undefined,
        { name: "bench-cp", role: "control-plane", host: "local", address: "10.0.0.10" },
        { kubernetesVersion: "v1.35.0", extraCertSANs: [] },
        { token: TOKEN },
      ),
      { uploadCerts: false },
    );
    prepared.data.keys.discard();
    const view: ClusterView = {
      cfg: prepared.data.cfg,
      release: prepared.data.release,
      proxyEnv: {},
    };
    await closeHosts([firstHost]);
    // A worker join's files, with realistic sizes (kubeconfig with an embedded CA, kubelet config).
    const blob = (n: number) => "x".repeat(n);
    const files = {
      "/etc/kubernetes/pki/ca.crt": blob(1100),
      "/etc/kubernetes/bootstrap-kubelet.conf": blob(2000),
      "/var/lib/kubelet/config.yaml": blob(1200),
      "/var/lib/kubelet/kubeadm-flags.env": blob(120),
      "/var/lib/kubelet/instance-config.yaml": blob(200),
    };
    const time = async (hosts: SshTestHost[]): Promise<Timed> => {
      const [cpu, runner] = [await machineCpuMs(), runnerCpuMs()];
      const started = performance.now();
      await fleet(
        hosts,
        (h) => h.name,
        (h) => joinHostWork(h, view, files),
        { concurrency: 8 },
      );
      const wall = performance.now() - started;
      return { wall, cpu: (await machineCpuMs()) - cpu, runner: runnerCpuMs() - runner };
    };
    const cores = availableParallelism();
    await time(bed.hosts); // warm-up: sshd's first sessions, module loading
    console.log(
      `SSH fan-out: worker-join host work on ${HOSTS} testbed hosts vs 1 (${ROUNDS} rounds)`,
    );
    const ratios: number[] = [];
    const plain: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      let one: Timed, many: Timed;
      if (round % 2) {
        one = await time([first]);
        many = await time(bed.hosts);
      } else {
        many = await time(bed.hosts);
        one = await time([first]);
      }
      const floor = many.cpu / cores;
      ratios.push(many.wall / Math.max(one.wall, floor));
      plain.push(many.wall / one.wall);
      console.log(
        [
          `round ${round}: 1 host ${one.wall.toFixed(0)} ms, ${HOSTS} hosts ${many.wall.toFixed(0)} ms (${(many.wall / one.wall).toFixed(2)}x);`,
          `the machine's CPU for ${HOSTS} hosts ${many.cpu.toFixed(0)} ms on ${cores} cores, ${floor.toFixed(0)} ms at least;`,
          `the runner's CPU ${one.runner.toFixed(0)} ms for 1 host, ${many.runner.toFixed(0)} ms for ${HOSTS};`,
          `ratio ${ratios.at(-1)!.toFixed(2)}`,
        ].join(" "),
      );
    }
    const result = median(ratios);
    console.log(
      `median ratio ${result.toFixed(2)} to the longer of 1 host and the CPU floor (goal <= ${GOAL}): ${result <= GOAL ? "within goal" : "ABOVE GOAL"}; ${HOSTS} hosts to 1: ${median(plain).toFixed(2)}`,
    );
  } finally {
    await bed.stop();
  }
}, 900_000);

/** Median of `n` runs of `op`, in ms. */
async function medianOf(n: number, op: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await op();
    times.push(performance.now() - started);
  }
  return median(times);
}

// Commands one after another over one SSH connection, against the same command started locally
// in the same run: what an SSH round trip adds to a process start. Nagle's algorithm left on the
// connection made each command wait for the server's delayed ACK (~90 ms a command, a ratio in
// the tens); kubeforge turns it off (TCP_NODELAY). Goal: <= 5.
it("SSH round trip: sequential commands over one connection vs started locally", async () => {
  const bed = await createTestbed(["rt-1"], { ssh: true });
  const host = await connect(bed.hosts[0]!);
  try {
    const run = promisify(execFile);
    await medianOf(5, () => host.exec(["true"])); // warm-up
    const ssh = await medianOf(40, () => host.exec(["true"]));
    const local = await medianOf(40, () => run("true"));
    const ratio = ssh / local;
    console.log(
      `SSH round trip: median ${ssh.toFixed(1)} ms a command over SSH, ${local.toFixed(1)} ms locally, ratio ${ratio.toFixed(2)} (goal <= 5): ${ratio <= 5 ? "within goal" : "ABOVE GOAL"}`,
    );
  } finally {
    await closeHosts([host]);
    await bed.stop();
  }
}, 300_000);
