import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import type { KubeClient } from "../../kube/types.js";
import type { Reporter } from "../../workflow/reporter.js";
import type { HostInventory } from "../inventory.js";
import type { ClusterPorts } from "../ports.js";
import type { ClusterSession } from "../session.js";
import type {
  ApiTimeline,
  EndpointTimeline,
  Thresholds,
  WorkloadsTimeline,
} from "./probes/timeline.js";
import type { UserWorkloads } from "./probes/user-workloads.js";
import type { ReportRecorder } from "./report.js";
import type { ViaRequest } from "./route.js";

// What the phases of the cluster-level upgrade (`kubeforge upgrade -f cluster.yaml --to V`)
// read and write, as UpData for `up`: the cluster session (hosts connected and inspected once),
// what the cluster runs now, the plan settled from it once, and the work a phase asks of a node.
// Phases decide (which nodes, in what order, what is refused); `work` does it on the hosts.

/** What the run was asked (flags, or the action's inputs later). */
export interface UpgradeOptions {
  /** --to: exact, minor or label. */
  to: string;
  /**
   * --via: the versions to go through on the way to `to`, one hop each ("auto": the newest
   * patch of every minor in between); absent: one hop.
   */
  via?: ViaRequest;
  /** Workers upgraded at once (--worker-batch). */
  workerBatch: number;
  /** Per node, for a drain to empty it (--drain-timeout). */
  drainTimeoutMs: number;
  /** Per node, for the kubelet to come back Ready at the target (--node-timeout). */
  nodeTimeoutMs: number;
  allowExperimentalUpgrades: boolean;
  allowRCUpgrades: boolean;
  /** The API probes (--probe api, --probe-interval, --keep-probes); absent: --probe none. */
  apiProbes?: { intervalMs: number; keep: boolean };
  /**
   * The workload canary (--probe workload): probed every interval on its NodePort, else through
   * the API server's service proxy; the settle gate between worker batches waits for it at most
   * settleMs (--settle).
   */
  workloadProbes?: {
    intervalMs: number;
    keep: boolean;
    settleMs: number;
    /** The user's workloads (--probe-manifest, --probe-command) in place of the canary. */
    user?: UserWorkloads;
    /** --probe dns: `kubernetes.default` looked up from the canary's Pods every interval. */
    dns?: boolean;
  };
  /** Opt-in thresholds (--max-api-downtime, --max-workload-*): exceeded, the run ends thresholds-violated. */
  thresholds?: Thresholds;
  /**
   * --kubelet-binary: the user's kubelet build of the target (runner path or URL, optional
   * "#sha256=" pin) installed on every node instead of the released kubelet.
   */
  kubeletBinary?: string;
}

/** One node as the cluster shows it before the upgrade. */
export interface NodeReading {
  name: string;
  role: ClusterNodeSpec["role"];
  /** status.nodeInfo.kubeletVersion; undefined when no Node object exists. */
  kubeletVersion: string | undefined;
  ready: boolean;
  /** Control planes: the tag of the kube-apiserver image its static Pod manifest names. */
  apiServerVersion?: string;
  /** Control planes: the advertise address and port of its manifest's kubeadm annotation ("10.0.0.11:6443"). */
  apiServerEndpoint?: string;
  /** The upgrade this node's marker records, when a run touched it. */
  marker?: { to: string; from: string; step: "started" | "done" };
}

/** What the cluster runs now: read once, before anything changes. */
export interface ClusterReading {
  /** kube-system/kubeadm-config ClusterConfiguration.kubernetesVersion. */
  clusterVersion: string;
  nodes: NodeReading[];
  /** The endpoint is kubeforge's node-local API server proxies (node/apiserver-proxy.ts). */
  nodeLocalProxy?: boolean;
  /** etcd's health as its client saw it; a string says what is wrong. */
  etcdProblem: string | undefined;
  addons: { coredns?: string; kubeProxy?: string };
}

/** What one node gets in this run. */
export type NodeStepKind = "apply" | "node";

export interface PlannedUpgradeNode {
  name: string;
  role: ClusterNodeSpec["role"];
  /** "apply" on the first control plane, "node" elsewhere; "skip" when it is at the target. */
  action: NodeStepKind | "skip";
  /** Workers: the batch (1-based); control planes: 0. */
  batch: number;
  /** For people: why, or what. */
  note: string;
}

/** What the run will do, settled before any host changes: `--plan` prints it. */
export interface UpgradePlan {
  cluster: string;
  from: string;
  to: string;
  /** In execution order. */
  nodes: PlannedUpgradeNode[];
  /** --via: every hop's target, in order, the last one the run's target (this plan is the first). */
  hops?: string[];
  /** `to` is a CI build (--to ci/…): binaries from the CI bucket, images from the CI registry. */
  ciBuild?: boolean;
}

export interface UpgradeSettled {
  reading: ClusterReading;
  plan: UpgradePlan;
  inventory: HostInventory[];
}

/** The etcd snapshot taken before the first change (snapshot.ts). */
export interface EtcdSnapshot {
  /** The control plane whose member was snapshotted and which keeps the file. */
  node: string;
  path: string;
  bytes: number;
  /** "an earlier run" when a resumed upgrade found the snapshot its first run took. */
  takenBy: "this run" | "an earlier run";
}

/** What the phases ask of the hosts (work.ts). */
/** Runs etcd's snapshot taking (`take`) as the caller times it: the report's step. */
export type SnapshotTiming = (
  take: () => Promise<EtcdSnapshot | undefined>,
) => Promise<EtcdSnapshot | undefined>;

export interface UpgradeWork {
  /** Target kubelet/kubectl on every node to change (staged beside, not in use) and images pulled. */
  stage(nodes: readonly HostInventory[]): Promise<void>;
  /**
   * A snapshot of etcd kept on the first control plane, or the one an earlier run of this
   * upgrade took; undefined when there is none to take (external etcd, an upgrade resumed after
   * a first run that took none). Taken once: later calls get the first call's outcome.
   * `timed` runs the taking (the report's step).
   */
  etcdSnapshot(timed?: SnapshotTiming): Promise<EtcdSnapshot | undefined>;
  /** kubeforge upgrade apply|node on the node, through the node-level workflows. */
  upgradeNode(node: string, kind: NodeStepKind): Promise<void>;
  /**
   * Starts the preflight phase of `upgrade node` (default) or `upgrade apply` on these nodes
   * ahead of their turns (it only reads); their `upgradeNode` then skips it and prints its
   * lines (preflight-ahead.ts).
   */
  preflightAhead(nodes: readonly string[], kind?: NodeStepKind): Promise<void>;
  /**
   * Waits for what was started ahead and not taken (a run that stopped before): preflights,
   * etcd's snapshot.
   */
  aheadSettled(): Promise<void>;
  /**
   * Starts what the kubelet's restart needs first and which changes nothing the node runs: its
   * init system found and its unit files reloaded (the daemon-reload of kubeadm's documented
   * kubelet upgrade). swapKubelet takes it; its failure is that step's.
   */
  kubeletRestartAhead(node: string): void;
  /** The staged kubelet and kubectl put in place (the previous ones kept), the kubelet restarted. */
  swapKubelet(node: string): Promise<void>;
  /** Waits until the Node is Ready with kubeletVersion at the target. */
  gate(node: string): Promise<void>;
  /**
   * Before a control plane changes: its API server out of every node's API server proxy (and
   * every other one back in), so clients move off it before it restarts. Nothing when the
   * cluster's endpoint is not kubeforge's proxies.
   */
  proxyOut(node: string): Promise<void>;
  /** Every control plane back into the proxies' rotation (their health checks decide again). */
  proxyIn(): Promise<void>;
  /** Every etcd member healthy (before a control plane changes). */
  etcdQuorum(): Promise<void>;
  cordon(node: string): Promise<void>;
  /** Evicts the node's Pods (PodDisruptionBudgets honoured); returns how many. */
  drain(node: string): Promise<number>;
  uncordon(node: string): Promise<void>;
  /** Nodes this run cordoned and has not uncordoned: uncordoned on every way out. */
  uncordonAll(): Promise<void>;
  /** The node's upgrade marker (resume). */
  mark(node: string, step: "started" | "done"): Promise<void>;
  /** Every Node Ready at the target, kubeadm-config at the target. */
  verify(admin: KubeClient): Promise<void>;
  /** CoreDNS and kube-proxy run the images kubeadm's target installs (after the last control plane). */
  addonsAtTarget(): Promise<void>;
}

export interface ProbeResults {
  api?: ApiTimeline;
  workloads?: WorkloadsTimeline;
  dns?: EndpointTimeline;
}

/** The probes that measure the upgrade from the runner while the nodes change (probes/). */
export interface UpgradeProbes {
  /** Creates the probe objects and starts sampling. */
  start(): Promise<void>;
  /** Ends sampling and removes the probe objects; nothing for what was not started. */
  stop(): Promise<ProbeResults>;
  /**
   * The settle gate after a worker batch: the DaemonSets' Pods Ready and every probed workload
   * back at its desired availability, within --settle; a timeout fails naming what is not.
   */
  settle(batch: readonly string[]): Promise<void>;
  /** The drain was refused an eviction (429) of `pod` ("ns/name") on `node`: disruption accounting. */
  evictionRefused?(pod: string, node: string, reason: string): void;
}

export interface ClusterUpgradeData {
  readonly session: ClusterSession;
  readonly ports: ClusterPorts;
  readonly reporter: Reporter;
  readonly options: UpgradeOptions;
  /** Render the first control plane's apply instead of changing anything. */
  readonly dryRun: boolean;
  /** Dry run: where the first control plane's apply is rendered. */
  readonly dryRunDir: string | undefined;
  /** The reading and the plan, settled on first use. */
  settled(): Promise<UpgradeSettled>;
  /** Whether this run selected the phase (--phase, --skip-phases); its runIf still decides. */
  selects(phase: string): boolean;
  readonly work: UpgradeWork;
  readonly report: ReportRecorder;
  readonly probes: UpgradeProbes;
}
