import { describe, expect, it } from "vitest";
import type { HostInventory } from "../../../../src/cluster/inventory.js";
import type { NodeCondition } from "../../../../src/cluster/node-state.js";
import type { ClusterPorts } from "../../../../src/cluster/ports.js";
import type { StartedRegistry } from "../../../../src/cluster/local-registry.js";
import { ClusterSession } from "../../../../src/cluster/session.js";
import type { ClusterView, UpData, UpOutcome, UpWork } from "../../../../src/cluster/up/data.js";
import { DRY_RUN_PHASES, upPhases } from "../../../../src/cluster/up/phases.js";
import { settle } from "../../../../src/cluster/up/plan.js";
import { loadClusterSpec } from "../../../../src/config/cluster/load.js";
import type { ClusterSpec } from "../../../../src/config/cluster/types.js";
import type { KubeClient } from "../../../../src/kube/types.js";
import type { KubeConfig } from "../../../../src/kubeconfig/types.js";
import type { Host, HostFacts } from "../../../../src/remote/host.js";
import { TerminalReporter } from "../../../../src/workflow/reporter.js";
import { Runner, type RunnerOptions } from "../../../../src/workflow/runner.js";

// The decisions of `up`'s phases over a fake UpData: the plan is settled by the real settle()
// from hosts as the inventory describes them, and the work on the hosts is recorded, not done.
// Which nodes are reset, which are joined and in what order, what a finished cluster refuses,
// what the wait is asked for, and what --skip-phases and `up phase` leave out.

const PIN = `SHA256:${"A".repeat(43)}`;
const VERSION = "v1.35.0";

function clusterSpec(nodes: string[], extra: string[] = []): ClusterSpec {
  return loadClusterSpec(
    [
      "apiVersion: kubeforge.dev/v1alpha1",
      "kind: Cluster",
      "name: c",
      `kubernetesVersion: ${VERSION}`,
      `ssh: {user: root, privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\\nAAAA\\n-----END OPENSSH PRIVATE KEY-----", hostKeyFingerprints: ["${PIN}"]}`,
      ...extra,
      "nodes:",
      ...nodes,
      "",
    ].join("\n"),
    "cluster.yaml",
  );
}

const FACTS = {
  hostname: "h",
  arch: "x64",
  kernelRelease: "6.1.0",
  cpuCount: 2,
  memoryBytes: 4 * 2 ** 30,
  uid: 0,
} as HostFacts;

const done = (node: string, role: "control-plane" | "worker"): NodeCondition => ({
  kind: "done",
  marker: { cluster: "c", node, role, status: "done", kubernetesVersion: VERSION },
});
const partial = (node: string, role: "control-plane" | "worker"): NodeCondition => ({
  kind: "partial",
  marker: { cluster: "c", node, role, status: "started", kubernetesVersion: VERSION },
});

/** admin.conf as the first control plane holds it, naming `server`. */
function adminConf(server: string): KubeConfig {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server, "certificate-authority-data": "" } }],
    contexts: [],
    "current-context": "",
    users: [],
  } as unknown as KubeConfig;
}

/** The networking kube-system/kubeadm-config holds: the Cluster file's defaults. */
const RUNNING_NETWORKING =
  "{podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12, dnsDomain: cluster.local}";

/** An API that holds kube-system/kubeadm-config only; the phases' own API work is faked. */
function apiWith(networking: string): KubeClient {
  const clusterConfiguration = `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking: ${networking}\n`;
  return {
    description: "fake admin.conf",
    get: () =>
      Promise.resolve({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "kubeadm-config", namespace: "kube-system" },
        data: { ClusterConfiguration: clusterConfiguration },
      }),
  } as unknown as KubeClient;
}

/** The hosts as inspect() would find them, admin.conf naming `server`, and the API. */
class FakeSession extends ClusterSession {
  constructor(
    spec: ClusterSpec,
    ports: ClusterPorts,
    reporter: TerminalReporter,
    private readonly conditions: Record<string, NodeCondition>,
    private readonly server = "https://10.0.0.1:6443",
    private readonly networking = RUNNING_NETWORKING,
  ) {
    super(spec, ports, reporter);
  }

  override inventory(): Promise<HostInventory[]> {
    return Promise.resolve(
      this.spec.nodes.map((node, i) => ({
        node,
        facts: FACTS,
        address: node.address ?? `10.0.0.${i + 1}`,
        os: "Debian GNU/Linux 12 (bookworm)",
        cgroupVersion: 2,
        criSocket: "unix:///run/containerd/containerd.sock",
        condition: this.conditions[node.name] ?? { kind: "fresh" },
      })),
    );
  }

  override adminConf(): Promise<KubeConfig> {
    return Promise.resolve(adminConf(this.server));
  }

  override adminClient(): Promise<KubeClient> {
    return Promise.resolve(apiWith(this.networking));
  }
}

/** Records what the phases ask of the hosts, in order. */
class RecordingWork implements UpWork {
  readonly calls: string[] = [];
  failJoinOnce = new Set<string>();
  dnsDisabled: boolean | undefined;
  outcome: UpOutcome | undefined;

  constructor(private readonly view: ClusterView) {}

  prepareInit(first: HostInventory): Promise<ClusterView> {
    this.calls.push(`prepareInit ${first.node.name}`);
    return Promise.resolve(this.view);
  }
  reset(node: string): Promise<void> {
    this.calls.push(`reset ${node}`);
    return Promise.resolve();
  }
  preflight(node: string, pass: { beforePreparation?: boolean }): Promise<void> {
    this.calls.push(`preflight${pass.beforePreparation ? " (early)" : ""} ${node}`);
    return Promise.resolve();
  }
  prepare(nodes: readonly HostInventory[]): Promise<void> {
    this.calls.push(`prepare ${nodes.map((n) => n.node.name).join(",")}`);
    return Promise.resolve();
  }
  installApiServerProxies(): Promise<void> {
    this.calls.push("api-proxy");
    return Promise.resolve();
  }
  init(step: "init" | "token"): Promise<void> {
    this.calls.push(step);
    // As the real work: init and a fresh token both leave a token in the cluster to join with.
    if (!this.outcome) throw new Error("no outcome");
    this.outcome.tokenCreated = true;
    return Promise.resolve();
  }
  caCertHashes(): Promise<string[]> {
    return Promise.resolve([`sha256:${"b".repeat(64)}`]);
  }
  join(node: string): Promise<void> {
    this.calls.push(`join ${node}`);
    if (this.failJoinOnce.delete(node)) return Promise.reject(new Error("discovery timed out"));
    return Promise.resolve();
  }
  labelNodes(): Promise<void> {
    this.calls.push("labels");
    return Promise.resolve();
  }
  installPodNetwork(): Promise<void> {
    this.calls.push("cni");
    return Promise.resolve();
  }
  installStorage(): Promise<void> {
    this.calls.push("storage");
    return Promise.resolve();
  }
  startRegistry(): Promise<StartedRegistry> {
    this.calls.push("registry");
    return Promise.resolve({ host: "localhost:5001", port: 5001, via: "a fake" });
  }
  configureRegistry(registry: StartedRegistry): Promise<string[]> {
    this.calls.push(`registry-hosts ${registry.host}`);
    return Promise.resolve(["http://10.0.0.100:5001"]);
  }
  waitForCluster(_admin: KubeClient, dnsDisabled: boolean): Promise<void> {
    this.calls.push("wait");
    this.dnsDisabled = dnsDisabled;
    return Promise.resolve();
  }
  writeRunnerKubeconfig(): Promise<string> {
    this.calls.push("kubeconfig");
    return Promise.resolve("https://127.0.0.1:6443");
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}

const fakeHost = () => Promise.resolve({ close: () => Promise.resolve() } as unknown as Host);

/** Every host opened records how: connected, or its container created. */
function portsRecording(opened: string[]): ClusterPorts {
  return {
    connect: (node) => (opened.push(`connect ${node.name}`), fakeHost()),
    createContainer: (node) => (opened.push(`create ${node.name}`), fakeHost()),
    reset: () => Promise.resolve(),
    runnerAddresses: () => [],
    fetch: () => Promise.reject(new Error("must not fetch")),
    env: {},
  };
}

interface Run {
  work: RecordingWork;
  opened: string[];
  lines: string[];
  data: UpData;
}

async function runUp(
  spec: ClusterSpec,
  conditions: Record<string, NodeCondition> = {},
  opts: RunnerOptions & {
    dryRun?: boolean;
    server?: string;
    networking?: string;
    dnsDisabled?: boolean;
  } = {},
  arrange: (work: RecordingWork) => void = () => {},
): Promise<Run> {
  const lines: string[] = [];
  const reporter = new TerminalReporter({ write: (t) => void lines.push(t) });
  const opened: string[] = [];
  const ports = portsRecording(opened);
  const session = new FakeSession(spec, ports, reporter, conditions, opts.server, opts.networking);
  const view = {
    cfg: { cluster: { dns: { disabled: opts.dnsDisabled === true } } },
  } as unknown as ClusterView;
  const work = new RecordingWork(view);
  arrange(work);
  const outcome: UpOutcome = { done: new Set(), tokenCreated: false, timings: [] };
  work.outcome = outcome;
  let settled: ReturnType<UpData["settled"]> | undefined;
  const data: UpData = {
    session,
    ports,
    reporter,
    dryRun: opts.dryRun === true,
    kubeconfigPath: "/nonexistent/admin.conf",
    nodeSkipPhases: { init: [], join: [] },
    settled: () => (settled ??= settle(data)),
    work,
    outcome,
  };
  const { dryRun: _d, server: _s, networking: _w, dnsDisabled: _n, ...runnerOpts } = opts;
  await new Runner(upPhases(), reporter).run(
    data,
    opts.dryRun ? { filterPhases: DRY_RUN_PHASES } : runnerOpts,
  );
  return { work, opened, lines, data };
}

const NODES = [
  "- {name: cp-1, role: control-plane, host: ssh://10.0.0.1}",
  "- {name: cp-2, role: control-plane, host: ssh://10.0.0.2}",
  "- {name: cp-3, role: control-plane, host: ssh://10.0.0.3}",
  "- {name: w-1, role: worker, host: ssh://10.0.0.4}",
  "- {name: w-2, role: worker, host: ssh://10.0.0.5}",
];

describe("up's phases", () => {
  it("a fresh cluster: every host checked before any changes, init, control planes one by one, then workers", async () => {
    const { work, data } = await runUp(clusterSpec(NODES, ["prepare: {enabled: false}"]));
    expect(work.calls.slice(0, 6)).toEqual([
      "prepareInit cp-1",
      ...["cp-1", "cp-2", "cp-3", "w-1", "w-2"].map((n) => `preflight ${n}`),
    ]);
    // No endpoint and three control planes: kubeforge's proxies, before init.
    expect(work.calls.slice(6)).toEqual([
      "api-proxy",
      "init",
      "join cp-2",
      "join cp-3",
      ...work.calls.slice(10, 12),
      "labels",
      "cni",
      "storage",
      "wait",
      "kubeconfig",
    ]);
    expect(work.calls.slice(10, 12).sort()).toEqual(["join w-1", "join w-2"]);
    const s = await data.settled();
    expect(s.plan.endpointSource).toBe("node-local-proxy");
    expect(s.plan.nodes.map((n) => n.action)).toEqual(["init", "join", "join", "join", "join"]);
    expect(work.dnsDisabled).toBe(false);
  });

  it("docker nodes' containers are created first; other hosts are connected", async () => {
    const spec = clusterSpec([
      "- {name: cp-1, role: control-plane, host: docker}",
      "- {name: w-1, role: worker, host: docker}",
      NODES[4]!,
    ]);
    const { opened } = await runUp(spec, {}, { skipPhases: ["prepare"] });
    expect(opened.slice(0, 2).sort()).toEqual(["create cp-1", "create w-1"]);
    expect(opened.slice(2)).toEqual(["connect w-2"]);
    // A dry run (and `up phase`) uses the containers that run already, creating none.
    const dry = await runUp(spec, {}, { dryRun: true });
    expect(dry.opened.sort()).toEqual(["connect cp-1", "connect w-1", "connect w-2"]);
  });

  it("node preparation runs between the early preflight checks and the full ones", async () => {
    const { work } = await runUp(clusterSpec(NODES.slice(0, 1).concat(NODES[3]!)));
    expect(work.calls.slice(0, 6)).toEqual([
      "prepareInit cp-1",
      "preflight (early) cp-1",
      "preflight (early) w-1",
      "prepare cp-1,w-1",
      "preflight cp-1",
      "preflight w-1",
    ]);
  });

  it("resets only the hosts a previous run left half-done, before any preflight check", async () => {
    const { work, data } = await runUp(clusterSpec(NODES, ["prepare: {enabled: false}"]), {
      "cp-2": partial("cp-2", "control-plane"),
      "w-2": partial("w-2", "worker"),
    });
    expect(work.calls.slice(1, 3).sort()).toEqual(["reset cp-2", "reset w-2"]);
    expect(work.calls.filter((c) => c.startsWith("reset"))).toHaveLength(2);
    expect(work.calls[3]).toBe("preflight cp-1");
    const actions = (await data.settled()).plan.nodes.map((n) => n.action);
    expect(actions).toEqual(["init", "reset+join", "join", "join", "reset+join"]);
  });

  it("a finished cluster with a new worker: a fresh token, only that worker joins", async () => {
    const nodes = [NODES[0]!, NODES[3]!, NODES[4]!];
    const { work, data } = await runUp(
      clusterSpec(nodes, ["prepare: {enabled: false}"]),
      { "cp-1": done("cp-1", "control-plane"), "w-1": done("w-1", "worker") },
      { server: "https://10.0.0.1:6443" },
    );
    expect(work.calls).toEqual([
      "prepareInit cp-1",
      "preflight w-2",
      "token",
      "join w-2",
      "labels",
      "cni",
      "storage",
      "wait",
      "kubeconfig",
    ]);
    expect((await data.settled()).firstStep).toBe("token");
  });

  it("a finished cluster, nothing to add: no token, no join, the labels, network and wait again", async () => {
    const { work } = await runUp(
      clusterSpec([NODES[0]!], ["prepare: {enabled: false}"]),
      { "cp-1": done("cp-1", "control-plane") },
      { server: "https://10.0.0.1:6443" },
    );
    expect(work.calls).toEqual([
      "prepareInit cp-1",
      "labels",
      "cni",
      "storage",
      "wait",
      "kubeconfig",
    ]);
  });

  it("storage: none installs no StorageClass; the default installs it after the pod network", async () => {
    const none = await runUp(
      clusterSpec([NODES[0]!], ["prepare: {enabled: false}", "storage: none"]),
      { "cp-1": done("cp-1", "control-plane") },
      { server: "https://10.0.0.1:6443" },
    );
    expect(none.work.calls).toEqual(["prepareInit cp-1", "labels", "cni", "wait", "kubeconfig"]);
  });

  it("registry: started after the plan and before any host changes; nodes pointed at it after storage", async () => {
    const { work, data } = await runUp(
      clusterSpec([NODES[0]!], ["prepare: {enabled: false}", "registry: 5001"]),
      { "cp-1": done("cp-1", "control-plane") },
      { server: "https://10.0.0.1:6443" },
    );
    expect(work.calls).toEqual([
      "prepareInit cp-1",
      "registry",
      "labels",
      "cni",
      "storage",
      "registry-hosts localhost:5001",
      "wait",
      "kubeconfig",
    ]);
    expect(data.outcome.registry).toMatchObject({
      host: "localhost:5001",
      servers: ["http://10.0.0.100:5001"],
    });
  });

  it("refuses a finished cluster asked for another API endpoint, before any host changes", async () => {
    let work: RecordingWork | undefined;
    const run = runUp(
      clusterSpec([NODES[0]!, NODES[3]!], ["controlPlaneEndpoint: lb.example.com:6443"]),
      { "cp-1": done("cp-1", "control-plane") },
      { server: "https://10.0.0.1:6443" },
      (w) => (work = w),
    );
    await expect(run).rejects.toThrow(/lb\.example\.com:6443/);
    // The first control plane's configuration was built (on the runner); no host changed.
    expect(work!.calls).toEqual(["prepareInit cp-1"]);
  });

  it("refuses a finished cluster asked for another pod network, before any host changes", async () => {
    let work: RecordingWork | undefined;
    const run = runUp(
      clusterSpec([NODES[0]!, NODES[3]!]),
      { "cp-1": done("cp-1", "control-plane") },
      {
        server: "https://10.0.0.1:6443",
        networking:
          "{podSubnet: 10.32.0.0/16, serviceSubnet: 10.96.0.0/12, dnsDomain: cluster.local}",
      },
      (w) => (work = w),
    );
    await expect(run).rejects.toThrow(/10\.32\.0\.0\/16/);
    expect(work!.calls).toEqual(["prepareInit cp-1"]);
  });

  it("refuses a host of another cluster, naming it", async () => {
    let work: RecordingWork | undefined;
    const run = runUp(
      clusterSpec([NODES[0]!, NODES[3]!]),
      { "w-1": { kind: "foreign", reason: "/etc/kubernetes/kubelet.conf exists" } },
      {},
      (w) => (work = w),
    );
    await expect(run).rejects.toThrow(
      /cannot use 1 of 2 hosts:\n - w-1: \/etc\/kubernetes\/kubelet\.conf exists/,
    );
    expect(work!.calls).toEqual([]);
  });

  it("refuses nodes that joined before the first control plane finished", async () => {
    await expect(
      runUp(clusterSpec([NODES[0]!, NODES[3]!]), { "w-1": done("w-1", "worker") }),
    ).rejects.toThrow(/the first control plane cp-1 has not finished init but w-1 already joined/);
  });

  it("a join that fails is reset and tried once more", async () => {
    const { work, lines } = await runUp(
      clusterSpec([NODES[0]!, NODES[3]!], ["prepare: {enabled: false}"]),
      {},
      {},
      (w) => w.failJoinOnce.add("w-1"),
    );
    expect(work.calls.filter((c) => c.endsWith("w-1"))).toEqual([
      "preflight w-1",
      "join w-1",
      "reset w-1",
      "join w-1",
    ]);
    expect(lines.join("")).toContain(
      "[up] join failed: discovery timed out; resetting the host and retrying once",
    );
  });

  it("the wait is told when the cluster has no DNS addon", async () => {
    const { work } = await runUp(
      clusterSpec([NODES[0]!], ["prepare: {enabled: false}"]),
      {},
      { dnsDisabled: true },
    );
    expect(work.dnsDisabled).toBe(true);
  });

  it("--skip-phases leaves out the phases named, and everything under a parent", async () => {
    const { work } = await runUp(
      clusterSpec([NODES[0]!, NODES[1]!, NODES[3]!], ["prepare: {enabled: false}"]),
      {},
      { skipPhases: ["cni", "storage", "wait", "join/workers"] },
    );
    expect(work.calls.slice(4)).toEqual(["api-proxy", "init", "join cp-2", "labels", "kubeconfig"]);
  });

  it("a phase run alone does only its own work", async () => {
    const { work } = await runUp(
      clusterSpec([NODES[0]!], ["prepare: {enabled: false}"]),
      { "cp-1": done("cp-1", "control-plane") },
      { server: "https://10.0.0.1:6443", filterPhases: ["kubeconfig"] },
    );
    expect(work.calls).toEqual(["kubeconfig"]);
  });

  it("`up phase join` on a finished cluster makes a fresh token first; on an unfinished one it refuses", async () => {
    const nodes = [NODES[0]!, NODES[1]!, NODES[3]!];
    const { work } = await runUp(
      clusterSpec(nodes, ["prepare: {enabled: false}"]),
      { "cp-1": done("cp-1", "control-plane") },
      { server: "https://127.0.0.1:7443", filterPhases: ["join"] },
    );
    expect(work.calls).toEqual(["prepareInit cp-1", "token", "join cp-2", "join w-1"]);
    await expect(runUp(clusterSpec(nodes), {}, { filterPhases: ["join/workers"] })).rejects.toThrow(
      'the first control plane cp-1 has not finished init: run "kubeforge up" (or "up phase init") first',
    );
  });

  it("a dry run settles the plan and renders the first control plane's init, nothing more", async () => {
    const { work } = await runUp(clusterSpec([NODES[0]!, NODES[3]!]), {}, { dryRun: true });
    expect(work.calls).toEqual(["prepareInit cp-1", "init"]);
  });

  it("refuses to skip a phase a running phase depends on, and unknown names list the valid ones", async () => {
    const spec = clusterSpec([NODES[0]!]);
    await expect(runUp(spec, {}, { skipPhases: ["init"] })).rejects.toThrow(
      'phase "join/control-planes" depends on "init", which --skip-phases skips',
    );
    await expect(runUp(spec, {}, { skipPhases: ["cnii"] })).rejects.toThrow(
      /invalid phase name "cnii" in --skip-phases: valid names are containers, connect, facts, plan, registry, reset-stale, .*, cni, storage, registry-hosts, wait, kubeconfig/,
    );
  });
});
