import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import type { ConfigDocuments } from "../../config/types.js";
import type { KubeClient } from "../../kube/types.js";
import type { KubeConfig } from "../../kubeconfig/types.js";
import type { Reporter } from "../../workflow/reporter.js";
import type { HostInventory } from "../inventory.js";
import type { StartedRegistry } from "../local-registry.js";
import type { ClusterPorts } from "../ports.js";
import type { ClusterSession } from "../session.js";
import type { ClusterSettings } from "./kubeadm-documents.js";
import type { ClusterView, PreflightPass } from "./node-workflows.js";

export type { ClusterView } from "./node-workflows.js";
import type { RenderedInit } from "./render-init.js";

// What the `up` phases read and write (DESIGN.md "A phase reads a narrow data interface"): the
// cluster session (the hosts, connected and inspected once), the plan, settled once from the
// Cluster file and what the hosts hold, and the work a phase asks of a node. Phases decide
// (which nodes, in what order, what is refused); `work` does it on the hosts, so the phases run
// over a fake in unit tests.

/** What `up` does to a node: from its state (node-state.ts) and its place in the cluster. */
export type NodeAction = "init" | "join" | "reset+init" | "reset+join" | "none";

/** One node of the plan. */
export interface PlannedNode {
  name: string;
  role: ClusterNodeSpec["role"];
  /** As the Cluster file writes it: "local" or "ssh://user@host:port". */
  host: string;
  address: string;
  action: NodeAction;
  /**
   * The kubeadm documents the node gets, secrets replaced by placeholders (the token, the
   * certificate key, the CA pin known only after init); absent when there is nothing to do.
   */
  documents?: ConfigDocuments;
}

/** What `up` will do, settled before any host changes: a dry run's output, as data. */
export interface UpPlan {
  cluster: string;
  kubernetesVersion: string;
  /** `host:port` of the cluster's API: what controlPlaneEndpoint is or will be. */
  apiServerEndpoint: string;
  /** Where that endpoint comes from. */
  endpointSource: "controlPlaneEndpoint" | "node-local-proxy" | "first-control-plane";
  /** Whether node preparation runs on the hosts to init or join. */
  prepare: boolean;
  nodes: PlannedNode[];
}

/** The plan with what the run needs beside it: settled once (plan.ts). */
export interface Settled {
  plan: UpPlan;
  inventory: HostInventory[];
  /** The first control plane: the node init runs on. */
  first: HostInventory;
  /** Nodes to init or join, in the Cluster file's order. */
  pending: HostInventory[];
  /** What the first control plane's init step is: init, a fresh token for joins, or nothing. */
  firstStep: "init" | "token" | "none";
  /** kubeforge provides the endpoint: HAProxy on every node (several CPs, no endpoint). */
  localEndpoint: boolean;
  /** The API servers' bind port (InitConfiguration.localAPIEndpoint). */
  bindPort: number;
  settings: ClusterSettings;
  token: string;
  /** For several control planes: the key upload-certs seals the shared certificates with. */
  certificateKey: string | undefined;
  /** The cluster init creates (the first control plane's defaulted configuration). */
  cluster: ClusterView;
}

/** What the up phases ask of the hosts (work.ts; a fake in tests). */
export interface UpWork {
  /** Prepares the first control plane's init from its documents; returns the cluster it creates. */
  prepareInit(first: HostInventory, documents: ConfigDocuments): Promise<ClusterView>;
  /** Resets a host a previous run left half-done (kubeforge reset --force). */
  reset(node: string): Promise<void>;
  /** kubeadm's checks on a node still to init or join. */
  preflight(node: string, pass: PreflightPass): Promise<void>;
  /** Node preparation on the hosts still to init or join; their image pulls go on after. */
  prepare(nodes: readonly HostInventory[]): Promise<void>;
  /** kubeforge's node-local API server proxy on every node. */
  installApiServerProxies(): Promise<void>;
  /** The first control plane's step: init (or its rendering in a dry run), or a fresh token. */
  init(step: "init" | "token"): Promise<void>;
  /** The pins of the cluster's CAs (admin.conf on the first control plane), read once. */
  caCertHashes(): Promise<string[]>;
  /** Joins a node, its discovery pinned to the cluster's CAs. */
  join(node: string): Promise<void>;
  /** Node labels from the Cluster file, through the API. */
  labelNodes(admin: KubeClient): Promise<void>;
  /** The pod network (`cni`). */
  installPodNetwork(admin: KubeClient): Promise<void>;
  /** The default StorageClass (`storage`). */
  installStorage(admin: KubeClient): Promise<void>;
  /** The local registry on the runner (`registry`): started, or the running one reused. */
  startRegistry(): Promise<StartedRegistry>;
  /** Every node's containerd pointed at the registry, and KEP-1755's ConfigMap; its addresses. */
  configureRegistry(registry: StartedRegistry, admin: KubeClient): Promise<string[]>;
  /** Waits until the cluster is usable (readiness.ts). */
  waitForCluster(admin: KubeClient, dnsDisabled: boolean): Promise<void>;
  /** admin.conf on the runner, pointing at an address it reaches; returns that server. */
  writeRunnerKubeconfig(adminConf: KubeConfig): Promise<string>;
  /** Ends what is still running on the hosts (image pulls) when up stops. */
  stop(): Promise<void>;
}

/** What the phases found out and did, for the result. */
export interface UpOutcome {
  /** Nodes whose init or join finished in this run. */
  done: Set<string>;
  /** The first control plane created a bootstrap token in this run (init or token step). */
  tokenCreated: boolean;
  /** Phase timings per node (the node workflows' top-level phases). */
  timings: { node: string; phase: string; startedAt: number; ms: number }[];
  /** The CA pins joins were pinned to (admin.conf's certificate-authority-data). */
  caCertHashes?: string[];
  /** The API server admin.conf on the runner names. */
  runnerServer?: string;
  /** The local registry: where the runner pushes, and the addresses the nodes pull from. */
  registry?: { host: string; servers?: string[]; started: StartedRegistry };
  /** Dry run: the first control plane's rendered init. */
  renderedInit?: RenderedInit;
}

export interface UpData {
  readonly session: ClusterSession;
  readonly ports: ClusterPorts;
  readonly reporter: Reporter;
  /** Connect, inspect and plan, then render the first control plane's init instead of changing hosts. */
  readonly dryRun: boolean;
  /** Where admin.conf is written on the runner. */
  readonly kubeconfigPath: string;
  /** The Cluster's skipPhases that name init's and join's phases, for every node's workflow. */
  readonly nodeSkipPhases: { init: string[]; join: string[] };
  /** UpRequest.upgradingTo: a finished cluster at this version is kept for the upgrade after. */
  readonly upgradingTo?: string;
  /** The plan and what the run needs beside it, settled on first use. */
  settled(): Promise<Settled>;
  readonly work: UpWork;
  readonly outcome: UpOutcome;
}
