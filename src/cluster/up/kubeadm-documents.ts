import type { ClusterNodeSpec, ClusterSpec } from "../../config/cluster/types.js";
import type {
  APIEndpoint,
  ConfigDocuments,
  InitConfiguration,
  JoinConfiguration,
  NodeRegistrationOptions,
  Patches,
} from "../../config/types.js";
import { KUBEADM_V1BETA4 } from "../../config/types.js";
import { toYAMLDocuments } from "../../config/yaml.js";

// The kubeadm configuration each node's init or join reads, built from the Cluster file the way
// k0sctl and kubespray template kubeadm's config: the user's own kubeadm documents (decoded once,
// when the Cluster file was loaded) are the base, and the fields `up` decides (node name,
// addresses, token, certificate key, discovery, version, networking, endpoint, SANs) are set on
// top. The result stays typed: init and join take it as it is, and only the plan prints it.

/** What `up` settled before init: the same for every node of the run. */
export interface ClusterSettings {
  /** The exact version (`v1.35.2`), resolved once so every node agrees. */
  kubernetesVersion: string;
  /** `host:port` every node and the cluster-info ConfigMap use; absent for a single control plane. */
  controlPlaneEndpoint?: string;
  /** Names and addresses the runner reaches control planes by, added to the API server SANs. */
  extraCertSANs: string[];
  /** The Cluster's skipPhases that name init phases / join phases. */
  initSkipPhases?: string[];
  joinSkipPhases?: string[];
  /** kubeadm patches folder on the runner (kubeforge reads patches where it runs). */
  patchesDir?: string;
}

/** Secrets shared by the nodes of one run. */
export interface JoinSecrets {
  token: string;
  /** `sha256:<hex>` pins of the cluster CAs (admin.conf's certificate-authority-data). */
  caCertHashes: readonly string[];
  /** For control-plane joins. */
  certificateKey?: string;
  /** `host:port` discovery reaches the cluster at. */
  apiServerEndpoint: string;
}

const unique = (values: readonly string[]) => [...new Set(values)];

/** skipPhases and patches for a workflow's document, on top of the user's own. */
function workflowSettings(
  base: { skipPhases?: string[]; patches?: Patches },
  skip: string[] | undefined,
  patchesDir: string | undefined,
): { skipPhases?: string[]; patches?: Patches } {
  const skipPhases = unique([...(base.skipPhases ?? []), ...(skip ?? [])]);
  return {
    ...(skipPhases.length > 0 ? { skipPhases } : {}),
    ...(patchesDir ? { patches: { ...base.patches, directory: patchesDir } } : {}),
  };
}

/** A node as its documents need it: `address` is the one it advertises. */
export type DocumentNode = ClusterNodeSpec & {
  /** Dual-stack: the kubelet's node-ip pair, primary family first (inventory.ts). */
  nodeIPs?: readonly [string, string];
};

function nodeRegistration(
  base: NodeRegistrationOptions | undefined,
  node: DocumentNode,
): NodeRegistrationOptions {
  // A node's taints replace kubeadm's defaults when given (kubeadm: an explicit list, even an
  // empty one, replaces the control-plane taint).
  // Dual-stack: the node-ip pair in kubeletExtraArgs, as the kubeadm docs' "Dual-stack support
  // with kubeadm" writes it for init and join alike; the Cluster refuses a node-ip of the user's.
  const nodeIP = node.nodeIPs ? [{ name: "node-ip", value: node.nodeIPs.join(",") }] : [];
  return {
    ...base,
    name: node.name,
    ...(node.taints !== undefined ? { taints: node.taints } : {}),
    ...(nodeIP.length > 0
      ? { kubeletExtraArgs: [...(base?.kubeletExtraArgs ?? []), ...nodeIP] }
      : {}),
  };
}

function withAddress(base: APIEndpoint | undefined, address: string | undefined): APIEndpoint {
  return address ? { ...base, advertiseAddress: address } : { ...base };
}

/** Init's documents for the first control plane. */
export function initDocuments(
  spec: Pick<ClusterSpec, "networking">,
  user: ConfigDocuments | undefined,
  node: DocumentNode,
  settings: ClusterSettings,
  secrets: { token: string; certificateKey?: string },
): ConfigDocuments {
  const init: InitConfiguration = structuredClone(user?.init ?? {});
  const tokens = init.bootstrapTokens ?? [];
  const cluster = structuredClone(user?.cluster ?? {});
  const sans = cluster.apiServer?.certSANs ?? [];
  return {
    init: {
      ...init,
      bootstrapTokens: [{ ...tokens[0], token: secrets.token }, ...tokens.slice(1)],
      nodeRegistration: nodeRegistration(init.nodeRegistration, node),
      localAPIEndpoint: withAddress(init.localAPIEndpoint, node.address),
      ...(secrets.certificateKey ? { certificateKey: secrets.certificateKey } : {}),
      ...workflowSettings(init, settings.initSkipPhases, settings.patchesDir),
    },
    cluster: {
      ...cluster,
      kubernetesVersion: settings.kubernetesVersion,
      networking: {
        ...cluster.networking,
        // "" is "no pod range" (a CNI that brings its own): kubeadm's unset.
        ...(spec.networking.podSubnet ? { podSubnet: spec.networking.podSubnet } : {}),
        serviceSubnet: spec.networking.serviceSubnet,
        dnsDomain: spec.networking.dnsDomain,
      },
      apiServer: { ...cluster.apiServer, certSANs: unique([...sans, ...settings.extraCertSANs]) },
      ...(settings.controlPlaneEndpoint
        ? { controlPlaneEndpoint: settings.controlPlaneEndpoint }
        : {}),
    },
    ...(user?.kubelet ? { kubelet: structuredClone(user.kubelet) } : {}),
    ...(user?.kubeProxy ? { kubeProxy: structuredClone(user.kubeProxy) } : {}),
    ignoredKinds: [],
    ...(user?.v1beta3Documents ? { v1beta3Documents: [...user.v1beta3Documents] } : {}),
  };
}

/** Join's document for any other node (a control plane when `node.role` says so). */
export function joinDocuments(
  user: ConfigDocuments | undefined,
  node: DocumentNode,
  secrets: JoinSecrets,
  settings: Pick<ClusterSettings, "joinSkipPhases" | "patchesDir"> = {},
): ConfigDocuments {
  const { controlPlane, discovery, ...join }: JoinConfiguration = structuredClone(user?.join ?? {});
  // Discovery is `up`'s business: token discovery with the CA pin, nothing else.
  const { file: _file, tlsBootstrapToken: _tls, ...kept } = discovery ?? {};
  const out: JoinConfiguration = {
    ...join,
    nodeRegistration: nodeRegistration(join.nodeRegistration, node),
    discovery: {
      ...kept,
      bootstrapToken: {
        ...kept.bootstrapToken,
        apiServerEndpoint: secrets.apiServerEndpoint,
        token: secrets.token,
        caCertHashes: [...secrets.caCertHashes],
      },
    },
    ...workflowSettings(join, settings.joinSkipPhases, settings.patchesDir),
  };
  if (node.role === "control-plane") {
    out.controlPlane = {
      ...controlPlane,
      localAPIEndpoint: withAddress(controlPlane?.localAPIEndpoint, node.address),
      ...(secrets.certificateKey ? { certificateKey: secrets.certificateKey } : {}),
    };
  }
  return {
    join: out,
    ignoredKinds: [],
    ...(user?.v1beta3Documents ? { v1beta3Documents: [...user.v1beta3Documents] } : {}),
  };
}

/** The documents as a kubeadm configuration file (v1beta4), for people and the plan files. */
export function documentsYAML(docs: ConfigDocuments): string {
  const kubeadm = (kind: string, body: object | undefined) =>
    body ? [{ apiVersion: KUBEADM_V1BETA4, kind, ...body }] : [];
  return toYAMLDocuments(
    [
      ...kubeadm("InitConfiguration", docs.init),
      ...kubeadm("ClusterConfiguration", docs.cluster),
      ...kubeadm("JoinConfiguration", docs.join),
      ...(docs.kubelet ? [docs.kubelet] : []),
      ...(docs.kubeProxy ? [docs.kubeProxy] : []),
    ],
    { sortKeys: false },
  );
}
