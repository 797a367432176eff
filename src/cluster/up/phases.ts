import { fleet } from "../../remote/fleet.js";
import { hasDockerNodes } from "../docker-nodes.js";
import { connectPhase, factsPhase } from "../session-phases.js";
import type { Phase } from "../../workflow/phase.js";
import type { UpData } from "./data.js";

// `kubeforge up` as a phase list on the workflow Runner (DESIGN.md "Every workflow runs on the
// Runner"): one log group and one timing per phase, `--skip-phases`, `up phase <name>`. The
// phases decide — which nodes, in what order, what is refused — and ask `data.work` to do it on
// the hosts. The plan and the hosts are settled on first use, so a phase run alone
// (`up phase wait`) connects and plans first.

async function pendingOf(d: UpData) {
  return (await d.settled()).pending;
}

/** A join that fails is reset and tried once more. */
export async function joinWithRetry(d: UpData, name: string): Promise<void> {
  try {
    await d.work.join(name);
  } catch (e) {
    const message = (e as Error).message;
    d.session
      .nodeReporter(name)
      .warn(`[up] join failed: ${message.split("\n")[0]}; resetting the host and retrying once`);
    try {
      await d.work.reset(name);
    } catch (resetError) {
      throw new Error(
        `${message}\n(the reset before a retry failed too: ${(resetError as Error).message})`,
        { cause: resetError },
      );
    }
    await d.work.join(name);
  }
}

const registry: Phase<UpData> = {
  name: "registry",
  short: "Start the local registry on this machine (registry: true), before any node changes",
  runIf: (d) => d.session.spec.registry !== undefined,
  run: async (d) => {
    const started = await d.work.startRegistry();
    d.outcome.registry = { host: started.host, started };
  },
};

const containers: Phase<UpData> = {
  name: "containers",
  short: "Create or start the containers of the docker nodes on this machine's Docker engine",
  runIf: (d) => hasDockerNodes(d.session.spec) && d.ports.createContainer !== undefined,
  run: (d) => d.session.createContainers(),
};

const connect = connectPhase<UpData>();

const facts = factsPhase<UpData>(
  "Inspect every host: system, resources, address, runtime, what it holds of a cluster",
);

const plan: Phase<UpData> = {
  name: "plan",
  short: "Settle the version, the endpoint and what each node needs; refuse what up cannot do",
  group: false,
  run: async (d) => void (await d.settled()),
};

const resetStale: Phase<UpData> = {
  name: "reset-stale",
  short: "Reset the hosts a previous run left half-done",
  group: () => "reset",
  runIf: async (d) => (await d.settled()).plan.nodes.some((n) => n.action.startsWith("reset+")),
  run: async (d) => {
    const stale = (await d.settled()).plan.nodes.filter((n) => n.action.startsWith("reset+"));
    await fleet(
      stale,
      (n) => n.name,
      async (n) => {
        d.session
          .nodeReporter(n.name)
          .info("[reset] a previous run did not finish here: resetting");
        await d.work.reset(n.name);
      },
      { concurrency: d.session.spec.concurrency },
    );
  },
};

/** kubeadm's preflight checks on every host still to init or join, before any of them changes. */
async function preflightPending(d: UpData, beforePreparation: boolean): Promise<void> {
  await fleet(
    await pendingOf(d),
    (i) => i.node.name,
    (i) => d.work.preflight(i.node.name, { beforePreparation }),
    { concurrency: d.session.spec.concurrency },
  );
}

const preparing = async (d: UpData) =>
  d.session.spec.prepare.enabled && (await pendingOf(d)).length > 0;

const earlyPreflight: Phase<UpData> = {
  name: "early-preflight",
  short: "The preflight checks node preparation has no part in (ports, files in the way), first",
  group: () => "preflight (before preparation)",
  runIf: preparing,
  run: (d) => preflightPending(d, true),
};

const prepare: Phase<UpData> = {
  name: "prepare",
  short: "Prepare the hosts: binaries, container runtime, host settings, kubelet unit, images",
  runIf: preparing,
  run: async (d) => d.work.prepare(await pendingOf(d)),
};

const preflight: Phase<UpData> = {
  name: "preflight",
  short: "kubeadm's init and join preflight checks on every host to init or join",
  runIf: async (d) => (await pendingOf(d)).length > 0,
  run: (d) => preflightPending(d, false),
};

const apiServerProxy: Phase<UpData> = {
  name: "api-proxy",
  short: "kubeforge's node-local API server proxy (several control planes, no endpoint)",
  group: () => "apiserver-proxy",
  runIf: async (d) => {
    const s = await d.settled();
    return s.localEndpoint && s.pending.length > 0;
  },
  run: (d) => d.work.installApiServerProxies(),
};

const init: Phase<UpData> = {
  name: "init",
  short: "Init the first control plane (a dry run renders it), or a fresh token for nodes to join",
  dependencies: ["reset-stale"],
  group: async (d) => {
    const s = await d.settled();
    const verb = s.firstStep === "token" ? "token" : d.dryRun ? "render init" : "init";
    return `${verb} ${s.first.node.name}`;
  },
  runIf: async (d) => (await d.settled()).firstStep !== "none",
  run: async (d) => {
    const s = await d.settled();
    await d.session.onNode(s.first.node.name, () => d.work.init(s.firstStep as "init" | "token"));
  },
};

/**
 * Joins need a bootstrap token in the cluster: the init phase made one in this run, else (`up
 * phase join`) a finished first control plane makes a fresh one now.
 */
async function ensureJoinToken(d: UpData): Promise<void> {
  if (d.outcome.tokenCreated) return;
  const s = await d.settled();
  if (s.firstStep === "init") {
    throw new Error(
      `the first control plane ${s.first.node.name} has not finished init: run "kubeforge up" (or "up phase init") first`,
    );
  }
  await d.session.onNode(s.first.node.name, () => d.work.init("token"));
}

const otherControlPlanes = async (d: UpData) => {
  const s = await d.settled();
  return s.pending.filter((i) => i.node.role === "control-plane" && i !== s.first);
};

const joinControlPlanes: Phase<UpData> = {
  name: "control-planes",
  short: "Join the other control planes, one at a time",
  dependencies: ["init"],
  group: false,
  runIf: async (d) => (await otherControlPlanes(d)).length > 0,
  run: async (d) => {
    await ensureJoinToken(d);
    for (const cp of await otherControlPlanes(d)) {
      await d.session.nodeGroup("join", cp.node.name, () => joinWithRetry(d, cp.node.name));
    }
  },
};

const joinWorkers: Phase<UpData> = {
  name: "workers",
  short: "Join the workers, `concurrency` at a time",
  dependencies: ["init"],
  group: () => "join workers",
  runIf: async (d) => (await pendingOf(d)).some((i) => i.node.role === "worker"),
  run: async (d) => {
    await ensureJoinToken(d);
    const workers = (await pendingOf(d)).filter((i) => i.node.role === "worker");
    await fleet(
      workers,
      (w) => w.node.name,
      (w) => joinWithRetry(d, w.node.name),
      {
        concurrency: d.session.spec.concurrency,
      },
    );
  },
};

const join: Phase<UpData> = {
  name: "join",
  short: "Join the other nodes",
  group: false,
  phases: [joinControlPlanes, joinWorkers],
};

const nodes: Phase<UpData> = {
  name: "nodes",
  short: "Set the Cluster file's node labels through the API",
  run: async (d) => d.work.labelNodes(await d.session.adminClient()),
};

const cni: Phase<UpData> = {
  name: "cni",
  short: "Install the pod network: the built-in bridge, a manifest, or none",
  group: () => "nodes",
  run: async (d) => d.work.installPodNetwork(await d.session.adminClient()),
};

const storage: Phase<UpData> = {
  name: "storage",
  short: "Install the default StorageClass: the local-path provisioner, or none",
  runIf: (d) => d.session.spec.storage !== "none",
  run: async (d) => d.work.installStorage(await d.session.adminClient()),
};

const registryHosts: Phase<UpData> = {
  name: "registry-hosts",
  short:
    "Point every node's containerd at the local registry; publish it in kube-public (KEP-1755)",
  group: () => "registry",
  runIf: (d) => d.session.spec.registry !== undefined,
  run: async (d) => {
    await d.settled(); // every host connected, also when the phase runs alone
    const started = d.outcome.registry?.started ?? (await d.work.startRegistry());
    const servers = await d.work.configureRegistry(started, await d.session.adminClient());
    d.outcome.registry = { host: started.host, servers, started };
  },
};

const wait: Phase<UpData> = {
  name: "wait",
  short: "Wait until every node is Ready and CoreDNS Available (registered, with cni: none)",
  run: async (d) => {
    const s = await d.settled();
    await d.work.waitForCluster(
      await d.session.adminClient(),
      s.cluster.cfg.cluster.dns.disabled === true,
    );
  },
};

const kubeconfig: Phase<UpData> = {
  name: "kubeconfig",
  short: "Write admin.conf on this machine, pointing at an API server address it reaches",
  group: false,
  run: async (d) => {
    const adminConf = await d.session.adminConf();
    await d.work.caCertHashes();
    d.outcome.runnerServer = await d.work.writeRunnerKubeconfig(adminConf);
  },
};

export function upPhases(): Phase<UpData>[] {
  return [
    containers,
    connect,
    facts,
    plan,
    registry,
    resetStale,
    earlyPreflight,
    prepare,
    preflight,
    apiServerProxy,
    init,
    join,
    nodes,
    cni,
    storage,
    registryHosts,
    wait,
    kubeconfig,
  ];
}

/** What a dry run runs: it connects, inspects and plans, and renders the first init. */
export const DRY_RUN_PHASES = ["connect", "facts", "plan", "init"];
