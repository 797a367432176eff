import type { ClusterSpec } from "../../config/cluster/types.js";
import { DEFAULT_API_BIND_PORT } from "../../config/defaults.js";
import { ConfigError } from "../../config/load.js";
import { joinHostPort } from "../../config/network.js";
import type { ConfigDocuments } from "../../config/types.js";
import { removedAPIVersionProblems } from "../../config/validate.js";
import { releaseFor } from "../../config/versions.js";
import { resolveKubernetesVersion } from "../../node/release-version.js";
import { generateCertificateKey } from "../../pki/certificate-key.js";
import { generateBootstrapToken } from "../../pki/token.js";
import { serverOf } from "../admin-kubeconfig.js";
import type { HostInventory } from "../inventory.js";
import type { NodeMarker } from "../node-state.js";
import type { NodeAction, PlannedNode, Settled, UpData, UpPlan } from "./data.js";
import { endpointMismatch, networkingMismatches, versionMismatch } from "./finished-cluster.js";
import {
  documentsYAML,
  initDocuments,
  joinDocuments,
  type ClusterSettings,
  type DocumentNode,
  type JoinSecrets,
} from "./kubeadm-documents.js";
import { localEndpoint as localEndpointAddress } from "./local-endpoint.js";
import { runningNetworking } from "./running-networking.js";

// The plan: what `up` will do to every node, settled once before any host changes — from the
// Cluster file and what the hosts hold (inventory.ts). Everything `up` cannot do is refused
// here, with nothing changed anywhere: a host of another cluster's, a cluster half-built in the
// wrong order, a v1beta3 document for a version that no longer reads it, and a finished cluster
// asked for another version, API endpoint or networking (finished-cluster.ts).

/** How long `up` tries to read a finished cluster's kubeadm-config before leaving it unchecked. */
const FINISHED_CLUSTER_READ_MS = 20_000;

/** What the plan shows in place of secrets. */
export const PLAN_PLACEHOLDERS = {
  token: "<generated token>",
  certificateKey: "<generated certificate key>",
  caCertHash: "<CA hash after init>",
};

/** The pin a join's documents carry until init has created the CA. */
export const PLACEHOLDER_HASH = `sha256:${"0".repeat(64)}`;

export function actionFor(inv: HostInventory, first: boolean): NodeAction {
  const base = first ? "init" : "join";
  switch (inv.condition.kind) {
    case "done":
      return "none";
    case "partial":
      return `reset+${base}`;
    default:
      return base;
  }
}

/** Hosts up may not touch, and a cluster joined before its first control plane finished. */
function refuseHosts(
  inventory: HostInventory[],
  first: HostInventory,
  actions: Map<string, NodeAction>,
) {
  const foreign = inventory.filter((i) => i.condition.kind === "foreign");
  if (foreign.length > 0) {
    throw new Error(
      `cannot use ${foreign.length} of ${inventory.length} hosts:\n${foreign
        .map(
          (i) => ` - ${i.node.name}: ${i.condition.kind === "foreign" ? i.condition.reason : ""}`,
        )
        .join("\n")}`,
    );
  }
  if (actions.get(first.node.name) === "none") return;
  const finished = inventory.filter((i) => i !== first && actions.get(i.node.name) === "none");
  if (finished.length > 0) {
    throw new Error(
      `the first control plane ${first.node.name} has not finished init but ${finished.map((i) => i.node.name).join(", ")} already joined a cluster; run "kubeforge down" and "up" again`,
    );
  }
}

/** One version for the whole cluster; a finished first control plane keeps its own. */
async function settleVersion(
  d: Pick<UpData, "session" | "ports" | "reporter" | "upgradingTo">,
  marker: NodeMarker | undefined,
  first: string,
): Promise<string> {
  const spec = d.session.spec;
  const resolved = await resolveKubernetesVersion(spec.kubernetesVersion, {
    warn: (m) => d.reporter.warn(m),
    env: d.ports.env,
    fetch: d.ports.fetch,
  });
  const version = marker?.kubernetesVersion || resolved.version;
  // A label ("stable") names its minor only now: v1beta3 documents its kubeadm cannot read.
  const removed = removedAPIVersionProblems(spec.kubeadm.v1beta3Documents, releaseFor(version));
  if (removed.length > 0) throw new ConfigError(removed);
  if (marker?.kubernetesVersion && marker.kubernetesVersion === d.upgradingTo) {
    d.reporter.info(
      `[up] the cluster runs ${marker.kubernetesVersion} (recorded on ${first}), the version the upgrade after "up" goes to: "up" keeps it, the upgrade resumes or finds it done`,
    );
  } else if (marker?.kubernetesVersion) {
    const mismatch = versionMismatch(
      spec.name,
      spec.kubernetesVersion,
      marker.kubernetesVersion,
      first,
    );
    if (mismatch) throw new Error(mismatch);
    if (resolved.version !== marker.kubernetesVersion) {
      d.reporter.warn(
        `[up] the cluster runs ${marker.kubernetesVersion}; "up" keeps it (the Cluster file's ${spec.kubernetesVersion} is ${resolved.version} now; upgrades are not done by "up")`,
      );
    }
  }
  return version;
}

/**
 * A finished cluster is not rebuilt with another API endpoint, nor another networking. A
 * cluster whose API does not answer now is not checked for networking: the readiness wait names
 * what is wrong with it.
 */
export async function checkFinishedCluster(
  d: Pick<UpData, "session" | "reporter">,
  wanted: { endpoint: string; bindPort: number; why: string },
): Promise<void> {
  const { spec } = d.session;
  const node = d.session.firstControlPlane.name;
  const mismatch = endpointMismatch({
    cluster: spec.name,
    server: serverOf(await d.session.adminConf()).href,
    wanted: wanted.endpoint,
    bindPort: wanted.bindPort,
    node,
    why: wanted.why,
  });
  if (mismatch) throw new Error(mismatch);
  const running = await d.session
    .adminClient()
    .then((admin) => runningNetworking(admin, FINISHED_CLUSTER_READ_MS))
    .catch((e: unknown) => {
      d.reporter.warn(
        `[up] the networking of the finished cluster was not checked: cannot read kube-system/kubeadm-config: ${(e as Error).message.split("\n")[0]}`,
      );
      return undefined;
    });
  const problems = running
    ? networkingMismatches({ cluster: spec.name, asked: spec.networking, running, node })
    : [];
  if (problems.length > 0) throw new Error(problems.join("\n"));
}

/** A node's documents as the plan shows them: the secrets replaced by what they stand for. */
function shown(docs: ConfigDocuments): ConfigDocuments {
  const out = structuredClone(docs);
  out.init?.bootstrapTokens?.forEach((t, i) => {
    if (i === 0) t.token = PLAN_PLACEHOLDERS.token;
  });
  if (out.init?.certificateKey) out.init.certificateKey = PLAN_PLACEHOLDERS.certificateKey;
  const discovery = out.join?.discovery?.bootstrapToken;
  if (discovery) {
    discovery.token = PLAN_PLACEHOLDERS.token;
    discovery.caCertHashes = [PLAN_PLACEHOLDERS.caCertHash];
  }
  if (out.join?.controlPlane?.certificateKey) {
    out.join.controlPlane.certificateKey = PLAN_PLACEHOLDERS.certificateKey;
  }
  return out;
}

/** The node as its kubeadm documents see it: the address it advertises, its node-ip pair. */
function nodeOf(inv: HostInventory): DocumentNode {
  return { ...inv.node, address: inv.address, ...(inv.nodeIPs ? { nodeIPs: inv.nodeIPs } : {}) };
}

/** The documents of a node still to join, its CA pin a placeholder until init has run. */
export function joinDocumentsOf(
  s: Settled,
  spec: ClusterSpec,
  inv: HostInventory,
): ConfigDocuments {
  const secrets: JoinSecrets = {
    token: s.token,
    caCertHashes: [PLACEHOLDER_HASH],
    apiServerEndpoint: s.plan.apiServerEndpoint,
    ...(s.certificateKey ? { certificateKey: s.certificateKey } : {}),
  };
  return joinDocuments(spec.kubeadm.config, nodeOf(inv), secrets, s.settings);
}

/** Settles the plan (once per run: UpData.settled). */
export async function settle(
  d: Pick<
    UpData,
    "session" | "ports" | "reporter" | "dryRun" | "work" | "nodeSkipPhases" | "upgradingTo"
  >,
): Promise<Settled> {
  const { spec } = d.session;
  const inventory = await d.session.inventory();
  const controlPlanes = inventory.filter((i) => i.node.role === "control-plane");
  const first = controlPlanes[0]!;
  const actions = new Map(inventory.map((i) => [i.node.name, actionFor(i, i === first)]));
  refuseHosts(inventory, first, actions);
  const marker = first.condition.kind === "done" ? first.condition.marker : undefined;
  const kubernetesVersion = await settleVersion(d, marker, first.node.name);

  const multiControlPlane = controlPlanes.length > 1;
  // Several control planes without the user's endpoint: kubeforge's node-local proxies.
  const localEndpoint = multiControlPlane && !spec.controlPlaneEndpoint;
  const bindPort = spec.kubeadm.config?.init?.localAPIEndpoint?.bindPort || DEFAULT_API_BIND_PORT;
  const controlPlaneEndpoint =
    spec.controlPlaneEndpoint ??
    (localEndpoint
      ? localEndpointAddress(
          controlPlanes.map((i) => ({ name: i.node.name, address: i.address, port: bindPort })),
        )
      : undefined);
  const settings: ClusterSettings = {
    kubernetesVersion,
    ...(controlPlaneEndpoint ? { controlPlaneEndpoint } : {}),
    extraCertSANs: controlPlanes.flatMap((i) => [...d.ports.runnerAddresses(i.node), i.address]),
    initSkipPhases: d.nodeSkipPhases.init,
    joinSkipPhases: d.nodeSkipPhases.join,
    ...(spec.kubeadm.patchesDir ? { patchesDir: spec.kubeadm.patchesDir } : {}),
  };
  const token = generateBootstrapToken();
  const certificateKey = multiControlPlane ? generateCertificateKey() : undefined;
  d.reporter.mask(token);
  if (certificateKey) d.reporter.mask(certificateKey);

  const firstDocuments = initDocuments(spec, spec.kubeadm.config, nodeOf(first), settings, {
    token,
    ...(certificateKey ? { certificateKey } : {}),
  });
  const cluster = await d.work.prepareInit(first, firstDocuments);
  const apiServerEndpoint = controlPlaneEndpoint ?? joinHostPort(first.address, bindPort);
  if (marker) {
    await checkFinishedCluster(d, {
      endpoint: apiServerEndpoint,
      bindPort,
      why: spec.controlPlaneEndpoint
        ? "its controlPlaneEndpoint"
        : localEndpoint
          ? `kubeforge's node-local proxy: ${controlPlanes.length} control planes and no controlPlaneEndpoint`
          : `${first.node.name}'s own address: one control plane and no controlPlaneEndpoint`,
    });
  }

  const pending = inventory.filter((i) => actions.get(i.node.name) !== "none");
  const plan: UpPlan = {
    cluster: spec.name,
    kubernetesVersion,
    apiServerEndpoint,
    endpointSource: spec.controlPlaneEndpoint
      ? "controlPlaneEndpoint"
      : localEndpoint
        ? "node-local-proxy"
        : "first-control-plane",
    prepare: spec.prepare.enabled,
    nodes: [],
  };
  const settled: Settled = {
    plan,
    inventory,
    first,
    pending,
    firstStep:
      actions.get(first.node.name) !== "none"
        ? "init"
        : pending.length > 0 && !d.dryRun
          ? "token"
          : "none",
    localEndpoint,
    bindPort,
    settings,
    token,
    certificateKey,
    cluster,
  };
  plan.nodes = inventory.map((inv): PlannedNode => {
    const action = actions.get(inv.node.name)!;
    const documents =
      action === "none"
        ? undefined
        : inv === first
          ? firstDocuments
          : joinDocumentsOf(settled, spec, inv);
    return {
      name: inv.node.name,
      role: inv.node.role,
      host: inv.node.host,
      address: inv.address,
      action,
      ...(documents ? { documents: shown(documents) } : {}),
    };
  });
  return settled;
}

/** One node of the plan for people: its header line, then its documents. */
export function renderPlannedNode(n: PlannedNode): string {
  const header = `# ${n.name} (${n.role}, ${n.host}, ${n.address}): ${n.action === "none" ? "finished earlier, nothing to do" : n.action}`;
  return n.documents ? `${header}\n${documentsYAML(n.documents).trimEnd()}\n` : `${header}\n`;
}

/** The plan for people (`up --dry-run` prints it on stdout, the action saves it). */
export function renderPlan(plan: UpPlan): string {
  const endpoint =
    plan.endpointSource === "node-local-proxy"
      ? `${plan.apiServerEndpoint} (kubeforge's node-local API server proxy on every node)`
      : plan.apiServerEndpoint;
  const lines = [
    `# kubeforge up --dry-run: cluster "${plan.cluster}"; nothing was changed`,
    `# API endpoint: ${endpoint}`,
    `# node preparation (binaries, container runtime, host settings, images): ${plan.prepare ? "on every host to init or join" : "off"}`,
  ];
  for (const n of plan.nodes) {
    lines.push(renderPlannedNode(n).trimEnd());
    if (n.documents) lines.push("---");
  }
  return `${lines.join("\n")}\n`;
}
