import type { ClusterSpec } from "../../config/cluster/types.js";
import { workerJoinCommandLine } from "../../manifests/join-command.js";
import type { Reporter } from "../../workflow/reporter.js";
import { PhaseError, Runner, type PhaseTiming } from "../../workflow/runner.js";
import type { ClusterPorts } from "../ports.js";
import { ClusterSession } from "../session.js";
import type { Settled, UpData, UpOutcome, UpPlan } from "./data.js";
import { DRY_RUN_PHASES, upPhases } from "./phases.js";
import { PLACEHOLDER_HASH, settle } from "./plan.js";
import type { RenderedInit } from "./render-init.js";
import { splitSkipPhases } from "./skip-phases.js";
import { HostWork } from "./work.js";

// `kubeforge up`: a Cluster file becomes a working cluster. Every host is connected and
// inspected first, the plan is settled (and what up cannot do refused), half-done hosts are
// reset, pending hosts prepared, every pending host passes preflight before any is initialised
// or joined, then init on the first control plane, the other control planes one at a time
// (kubespray's throttle: 1), workers in bounded parallel batches, labels, the pod network, a
// readiness gate, and admin.conf on the runner — each a phase (phases.ts) over one UpData.

export type { UpPlan, PlannedNode, NodeAction } from "./data.js";

export interface UpRequest {
  spec: ClusterSpec;
  ports: ClusterPorts;
  reporter: Reporter;
  dryRun: boolean;
  /** Where admin.conf is written on the runner. */
  kubeconfigPath: string;
  /** Dry run: the folder on the runner where the first control plane's init is rendered, absent or empty. */
  renderInitDir?: (node: string) => string;
  /**
   * The version an upgrade that follows in the same run goes to (the action's upgrade-to,
   * resolved): a finished cluster that runs it already (an earlier run upgraded it, or began
   * to) is kept, not refused, so that the upgrade resumes or finds it done.
   */
  upgradingTo?: string;
}

export interface UpNode {
  name: string;
  role: "control-plane" | "worker";
  address: string;
  /** What this run did on the node. */
  action: "init" | "join" | "none";
}

export interface UpResult {
  kubernetesVersion: string;
  apiServer: string;
  /** Where admin.conf was written on the runner; absent when the kubeconfig phase did not run. */
  kubeconfigPath: string | undefined;
  nodes: UpNode[];
  token: string;
  caCertHash: string;
  certificateKey: string | undefined;
  /** The worker join command (with the token): a secret. */
  joinCommand: string;
  /** Phase timings per node, for summaries. */
  timings: { node: string; phase: string; startedAt: number; ms: number }[];
  /** What up planned (in a dry run: what it would do). */
  plan: UpPlan;
  /** Dry run: the first control plane's rendered init, when there was one to render. */
  renderedInit?: RenderedInit;
  /**
   * The local registry: `host` where the runner pushes (and images are named), `servers` the
   * addresses the nodes' containerd pulls from (hosts.toml), when they were pointed at it.
   */
  registry?: { host: string; servers: string[] };
}

interface Run {
  data: UpData;
  timings: PhaseTiming[];
}

/** Builds the data and runs the phases (all, or `filterPhases`); the hosts are closed after. */
async function runUp<T>(
  req: UpRequest,
  opts: { filterPhases?: string[] },
  finish: (run: Run) => Promise<T>,
): Promise<T> {
  // What the Cluster file alone decides is refused before any host is contacted.
  const skip = splitSkipPhases(req.spec.skipPhases ?? []);
  if (req.dryRun && !req.renderInitDir) {
    throw new Error("a dry run of up needs a folder to render the first control plane's init into");
  }
  const runner = new Runner(upPhases(), req.reporter);
  const filterPhases = req.dryRun ? DRY_RUN_PHASES : opts.filterPhases;
  // Checked before the hosts are contacted too: names, and dependencies skipped.
  runner.selected({ skipPhases: skip.up, ...(filterPhases ? { filterPhases } : {}) });
  const session = new ClusterSession(req.spec, req.ports, req.reporter);
  let settled: Promise<Settled> | undefined;
  const outcome: UpOutcome = { done: new Set(), tokenCreated: false, timings: [] };
  // The work reads the data it belongs to; the data is complete once the work exists (the
  // plan is settled on first use, after that).
  const base = {
    session,
    ports: req.ports,
    reporter: req.reporter,
    dryRun: req.dryRun,
    kubeconfigPath: req.kubeconfigPath,
    nodeSkipPhases: { init: skip.init, join: skip.join },
    ...(req.upgradingTo !== undefined ? { upgradingTo: req.upgradingTo } : {}),
    settled: () => (settled ??= settle(data)),
    outcome,
  };
  const work = new HostWork(base, req.renderInitDir);
  const data: UpData = { ...base, work };
  try {
    const timings = await runner.run(data, {
      skipPhases: skip.up,
      ...(filterPhases ? { filterPhases } : {}),
    });
    return await finish({ data, timings });
  } catch (e) {
    // The phase's log group names it already; the error stays what the work said (host-named).
    throw e instanceof PhaseError ? e.cause : e;
  } finally {
    await work.stop();
    await session.close();
  }
}

/** What a whole run did, for the edges' outputs. */
async function resultOf({ data }: Run): Promise<UpResult> {
  const s = await data.settled();
  const { plan } = s;
  const { outcome } = data;
  const joinCommandFor = (pins: readonly string[]) =>
    workerJoinCommandLine({
      program: "kubeforge",
      server: plan.apiServerEndpoint,
      token: s.token,
      caCertHashes: pins,
    });
  if (data.dryRun) {
    const pins = outcome.renderedInit?.caCertHashes ?? [PLACEHOLDER_HASH];
    return {
      kubernetesVersion: plan.kubernetesVersion,
      apiServer: `https://${plan.apiServerEndpoint}`,
      kubeconfigPath: undefined,
      nodes: s.inventory.map((i) => ({
        name: i.node.name,
        role: i.node.role,
        address: i.address,
        action: "none",
      })),
      token: s.token,
      caCertHash: pins[0]!,
      certificateKey: s.certificateKey,
      // With a rendered CA, the command a real run would hand out; without, none.
      joinCommand: outcome.renderedInit ? joinCommandFor(pins) : "",
      timings: [],
      plan,
      ...(outcome.renderedInit ? { renderedInit: outcome.renderedInit } : {}),
    };
  }
  const pins = await data.work.caCertHashes();
  // A run that created no token in the cluster has none to hand out.
  const joined = outcome.tokenCreated;
  return {
    kubernetesVersion: plan.kubernetesVersion,
    apiServer: outcome.runnerServer ?? `https://${plan.apiServerEndpoint}`,
    kubeconfigPath: outcome.runnerServer !== undefined ? data.kubeconfigPath : undefined,
    nodes: s.inventory.map((i) => ({
      name: i.node.name,
      role: i.node.role,
      address: i.address,
      action: !outcome.done.has(i.node.name) ? "none" : i === s.first ? "init" : "join",
    })),
    token: joined ? s.token : "",
    caCertHash: pins[0]!,
    certificateKey: joined ? s.certificateKey : undefined,
    joinCommand: joined ? joinCommandFor(pins) : "",
    timings: outcome.timings,
    plan,
    ...(outcome.registry
      ? { registry: { host: outcome.registry.host, servers: outcome.registry.servers ?? [] } }
      : {}),
  };
}

/** The whole workflow (less the Cluster's skipPhases); a dry run plans and renders only. */
export function up(req: UpRequest): Promise<UpResult> {
  return runUp(req, {}, resultOf);
}

/** `up phase <name>`: only the named phases; returns where admin.conf went when it was written. */
export function upPhase(
  req: UpRequest,
  phases: string[],
): Promise<{ kubeconfigPath: string | undefined }> {
  return runUp(req, { filterPhases: phases }, ({ data }) =>
    Promise.resolve({
      kubeconfigPath: data.outcome.runnerServer !== undefined ? data.kubeconfigPath : undefined,
    }),
  );
}
