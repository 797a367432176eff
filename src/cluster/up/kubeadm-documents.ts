import type { ClusterNodeSpec, ClusterSpec } from "../../config/cluster/types.js";
import { parseYAMLDocuments, toYAMLDocuments } from "../../config/yaml.js";

// The kubeadm configuration each node's init or join reads, generated from the Cluster file the
// way k0sctl and kubespray template kubeadm's config: the user's own kubeadm documents are the
// base, and the fields `up` decides (node name, addresses, token, certificate key, discovery,
// version, networking, endpoint, SANs) are set on top. Fields that exist in both v1beta3 and
// v1beta4 with the same shape are the only ones touched, so either version of a user's
// documents stays valid.

export const KUBEADM_API_VERSION = "kubeadm.k8s.io/v1beta4";

type Doc = Record<string, unknown>;

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

function listOf(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

/** skipPhases and patches for a workflow's document, on top of the user's own. */
function workflowSettings(base: Doc, skip: string[] | undefined, patchesDir?: string): Doc {
  const skipPhases = unique([...listOf(base.skipPhases), ...(skip ?? [])]);
  return {
    ...(skipPhases.length > 0 ? { skipPhases } : {}),
    ...(patchesDir ? { patches: { ...record(base.patches), directory: patchesDir } } : {}),
  };
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

export interface UserDocuments {
  init?: Doc;
  cluster?: Doc;
  join?: Doc;
  /** KubeletConfiguration, KubeProxyConfiguration: passed to init unchanged. */
  components: Doc[];
}

/** The user's kubeadm documents (already validated by the Cluster loader), by kind. */
export function userDocuments(text: string | undefined): UserDocuments {
  const docs: UserDocuments = { components: [] };
  if (!text?.trim()) return docs;
  for (const raw of parseYAMLDocuments(text, "the Cluster's kubeadm documents")) {
    const doc = raw as Doc;
    switch (doc.kind) {
      case "InitConfiguration":
        docs.init = doc;
        break;
      case "ClusterConfiguration":
        docs.cluster = doc;
        break;
      case "JoinConfiguration":
        docs.join = doc;
        break;
      default:
        docs.components.push(doc);
    }
  }
  return docs;
}

const record = (value: unknown): Doc =>
  value && typeof value === "object" && !Array.isArray(value) ? { ...(value as Doc) } : {};

const unique = (values: string[]) => [...new Set(values)];

function nodeRegistration(base: unknown, node: ClusterNodeSpec): Doc {
  // A node's taints replace kubeadm's defaults when given (kubeadm: an explicit list, even an
  // empty one, replaces the control-plane taint).
  return {
    ...record(base),
    name: node.name,
    ...(node.taints !== undefined ? { taints: node.taints } : {}),
  };
}

function withAddress(base: unknown, address: string | undefined): Doc {
  const endpoint = record(base);
  return address ? { ...endpoint, advertiseAddress: address } : endpoint;
}

/** Init's documents for the first control plane, as one multi-document YAML text. */
export function initDocuments(
  spec: ClusterSpec,
  user: UserDocuments,
  node: ClusterNodeSpec,
  settings: ClusterSettings,
  secrets: { token: string; certificateKey?: string },
): string {
  const init = record(user.init);
  const tokens = Array.isArray(init.bootstrapTokens) ? (init.bootstrapTokens as unknown[]) : [];
  const initDoc: Doc = {
    ...init,
    apiVersion: init.apiVersion ?? KUBEADM_API_VERSION,
    kind: "InitConfiguration",
    bootstrapTokens: [{ ...record(tokens[0]), token: secrets.token }, ...tokens.slice(1)],
    nodeRegistration: nodeRegistration(init.nodeRegistration, node),
    localAPIEndpoint: withAddress(init.localAPIEndpoint, node.address),
    ...(secrets.certificateKey ? { certificateKey: secrets.certificateKey } : {}),
    ...workflowSettings(init, settings.initSkipPhases, settings.patchesDir),
  };
  const cluster = record(user.cluster);
  const apiServer = record(cluster.apiServer);
  const sans = Array.isArray(apiServer.certSANs) ? (apiServer.certSANs as string[]) : [];
  const clusterDoc: Doc = {
    ...cluster,
    apiVersion: cluster.apiVersion ?? KUBEADM_API_VERSION,
    kind: "ClusterConfiguration",
    kubernetesVersion: settings.kubernetesVersion,
    networking: {
      ...record(cluster.networking),
      // "" is "no pod range" (a CNI that brings its own): kubeadm's unset.
      ...(spec.networking.podSubnet ? { podSubnet: spec.networking.podSubnet } : {}),
      serviceSubnet: spec.networking.serviceSubnet,
      dnsDomain: spec.networking.dnsDomain,
    },
    apiServer: { ...apiServer, certSANs: unique([...sans, ...settings.extraCertSANs]) },
    ...(settings.controlPlaneEndpoint
      ? { controlPlaneEndpoint: settings.controlPlaneEndpoint }
      : {}),
  };
  return toYAMLDocuments([initDoc, clusterDoc, ...user.components], { sortKeys: false });
}

/** Join's document for any other node (a control plane when `node.role` says so). */
export function joinDocuments(
  user: UserDocuments,
  node: ClusterNodeSpec,
  secrets: JoinSecrets,
  settings: Pick<ClusterSettings, "joinSkipPhases" | "patchesDir"> = {},
): string {
  const join = record(user.join);
  const discovery = record(join.discovery);
  // Discovery is `up`'s business: token discovery with the CA pin, nothing else.
  delete discovery.file;
  delete discovery.tlsBootstrapToken;
  const joinDoc: Doc = {
    ...join,
    apiVersion: join.apiVersion ?? KUBEADM_API_VERSION,
    kind: "JoinConfiguration",
    nodeRegistration: nodeRegistration(join.nodeRegistration, node),
    discovery: {
      ...discovery,
      bootstrapToken: {
        ...record(discovery.bootstrapToken),
        apiServerEndpoint: secrets.apiServerEndpoint,
        token: secrets.token,
        caCertHashes: [...secrets.caCertHashes],
      },
    },
    ...workflowSettings(join, settings.joinSkipPhases, settings.patchesDir),
  };
  if (node.role === "control-plane") {
    const controlPlane = record(join.controlPlane);
    joinDoc.controlPlane = {
      ...controlPlane,
      localAPIEndpoint: withAddress(controlPlane.localAPIEndpoint, node.address),
      ...(secrets.certificateKey ? { certificateKey: secrets.certificateKey } : {}),
    };
  } else {
    delete joinDoc.controlPlane;
  }
  return toYAMLDocuments([joinDoc], { sortKeys: false });
}
