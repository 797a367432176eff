import { posix } from "node:path";
import { DEFAULT_API_BIND_PORT, defaultInitConfig, nodeNameFrom } from "../../config/defaults.js";
import { decodeConfigDocuments } from "../../config/load.js";
import { KUBELET_KUBECONFIG } from "../../config/paths.js";
import type { ResolvedVersion } from "../../config/release.js";
import type { ConfigDocuments, InitConfig, Timeouts } from "../../config/types.js";
import { parseYAMLDocuments } from "../../config/yaml.js";
import { configMapText, decodeComponentConfigs } from "../../config/cluster-configmaps.js";
import { isForbidden, isNotFound } from "../../kube/errors.js";
import { CRI_SOCKET_ANNOTATION } from "../../kube/idempotency.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import { currentEntries, decodeData, parseKubeConfig } from "../../kubeconfig/parse.js";
import { APISERVER_ENDPOINT_ANNOTATION } from "../../manifests/control-plane.js";
import { KUBELET_DIR } from "../../manifests/kubelet.js";
import { parseCertificatesPEM } from "../../pki/certs.js";
import { kubeconfigFile } from "../../pki/paths.js";
import type { Host } from "../../remote/host.js";
import { readFileIfExists } from "../../remote/host.js";
import { FLAGS_ENV_PATH, INSTANCE_CONFIG_PATH } from "../kubelet.js";
import { parseKubeletFlagsEnv } from "./kubelet-env.js";
import { withShortRetry } from "../../kube/short-retry.js";

// kubeadm's FetchInitConfigurationFromCluster as `upgrade` calls it (util/config/cluster.go,
// v1.35): the ClusterConfiguration of kube-system/kubeadm-config and the component configs of
// kube-system/kubelet-config and kube-system/kube-proxy, seen as this node's InitConfiguration.
// On a control plane the node's own registration is read back (its name from kubelet.conf's
// client certificate, its CRI socket) and its API endpoint from its kube-apiserver mirror Pod's
// annotation; on a worker (`upgrade node` passes newControlPlane=!isControlPlaneNode) both keep
// the dynamic defaults (the host name, the detected address).

export const KUBEADM_CONFIG_MAP = "kubeadm-config";
/** constants.NodesUserPrefix. */
const NODES_USER_PREFIX = "system:node:";

/** The configuration the cluster stored, as the ConfigMaps hold it. */
export interface ClusterStoredConfig {
  docs: ConfigDocuments;
  /** ClusterConfiguration.kubernetesVersion as stored (the version `apply` last reached). */
  kubernetesVersion: string;
}

/**
 * A ConfigMap, or undefined when it does not exist. `forbiddenIsMissing`: a component config
 * (componentconfigs/configset.go fromConfigMap treats NotFound and Forbidden alike, "Either an
 * addon is not installed, ..."): a worker's kubelet.conf identity may read kube-proxy's only
 * once a kube-proxy Pod runs on it (the Node authorizer's graph).
 */
async function getConfigMap(
  client: KubeClient,
  name: string,
  forbiddenIsMissing = false,
): Promise<KubeObject | undefined> {
  try {
    return await withShortRetry(() =>
      client.get({ apiVersion: "v1", kind: "ConfigMap", name, namespace: "kube-system" }),
    );
  } catch (e) {
    if (isNotFound(e) || (forbiddenIsMissing && isForbidden(e))) return undefined;
    throw e;
  }
}

/** Thrown when kube-system/kubeadm-config does not exist (kubeadm's IsNotFound branch). */
export class KubeadmConfigNotFound extends Error {}

/**
 * Reads the three ConfigMaps, printing kubeadm's lines with `prefix` ("upgrade" for apply and
 * node, "upgrade/config" for plan and diff).
 */
export async function fetchClusterConfig(
  client: KubeClient,
  prefix: string,
  log: (line: string) => void,
): Promise<ClusterStoredConfig> {
  log(
    `[${prefix}] Reading configuration from the "${KUBEADM_CONFIG_MAP}" ConfigMap in namespace "kube-system"...`,
  );
  log(
    `[${prefix}] Use 'kubeadm init phase upload-config kubeadm --config your-config-file' to re-upload it.`,
  );
  const [kubeadmConfig, kubeletConfig, kubeProxy] = await Promise.all([
    getConfigMap(client, KUBEADM_CONFIG_MAP),
    getConfigMap(client, "kubelet-config", true),
    getConfigMap(client, "kube-proxy", true),
  ]);
  if (!kubeadmConfig) {
    throw new KubeadmConfigNotFound(
      `the ConfigMap "${KUBEADM_CONFIG_MAP}" in the "kube-system" namespace was not found`,
    );
  }
  const clusterText = configMapText(kubeadmConfig, "ClusterConfiguration");
  if (!clusterText) {
    throw new Error(
      `unexpected error when reading kubeadm-config ConfigMap: ClusterConfiguration key value pair missing`,
    );
  }
  const cluster = decodeConfigDocuments(clusterText, "kube-system/kubeadm-config").cluster!;
  return {
    docs: { ignoredKinds: [], cluster, ...decodeComponentConfigs(kubeletConfig, kubeProxy) },
    kubernetesVersion: cluster.kubernetesVersion ?? "",
  };
}

/** Where kubelet.conf points once the kubelet rotates its client certificate (kubelet-finalize). */
const ROTATED_KUBELET_CLIENT_CERT = posix.join(KUBELET_DIR, "pki", "kubelet-client-current.pem");

/** GetNodeNameFromKubeletConfig: the CN of kubelet.conf's client certificate, without "system:node:". */
export async function nodeNameFromKubeletConfig(host: Host): Promise<string> {
  const path = kubeconfigFile(KUBELET_KUBECONFIG);
  // The certificate kubelet.conf usually points to is read with it (one command on the host),
  // and used only when it does point there.
  const [text, rotated] = await Promise.all([
    host.readFile(path).catch((e: unknown) => {
      throw new Error(`failed to get node name from kubelet config: ${(e as Error).message}`, {
        cause: e,
      });
    }),
    readFileIfExists(host, ROTATED_KUBELET_CLIENT_CERT).catch(() => undefined),
  ]);
  const config = parseKubeConfig(text, path);
  const { user } = currentEntries(config, path);
  let pem = decodeData(user?.["client-certificate-data"]);
  const certPath = user?.["client-certificate"];
  if (!pem && certPath) {
    pem =
      certPath === ROTATED_KUBELET_CLIENT_CERT && rotated ? rotated : await host.readFile(certPath);
  }
  if (!pem) {
    throw new Error(
      `failed to get node name from kubelet config: ${path} has no client certificate`,
    );
  }
  const [cert] = parseCertificatesPEM(pem, user?.["client-certificate"] ?? path);
  return cert!.commonName.replace(new RegExp(`^${NODES_USER_PREFIX}`), "");
}

/** The value of a kubelet flag or config field, from the files `join`/`init` wrote. */
async function localCRISocket(host: Host): Promise<string | undefined> {
  // Both asked at once (one command on the host); the instance configuration wins.
  const [instance, flags] = await Promise.all([
    readFileIfExists(host, INSTANCE_CONFIG_PATH),
    readFileIfExists(host, FLAGS_ENV_PATH),
  ]);
  if (instance !== undefined) {
    const doc = parseYAMLDocuments(instance.toString("utf8"), INSTANCE_CONFIG_PATH)[0] as
      { containerRuntimeEndpoint?: string } | undefined;
    if (doc?.containerRuntimeEndpoint) return doc.containerRuntimeEndpoint;
  }
  if (flags !== undefined) {
    const arg = parseKubeletFlagsEnv(flags.toString("utf8"), FLAGS_ENV_PATH).find(
      (a) => a.name === "container-runtime-endpoint",
    );
    if (arg?.value) return arg.value;
  }
  return undefined;
}

/**
 * getNodeRegistration's CRI socket: the Node's kubeadm.alpha.kubernetes.io/cri-socket
 * annotation while it exists, else (NodeLocalCRISocket) the node's own kubelet files [M: the
 * file order]. undefined: kubeadm's default.
 */
export async function nodeCRISocket(
  client: KubeClient,
  host: Host,
  nodeName: string,
  local: Promise<string | undefined> = localCRISocket(host),
): Promise<string | undefined> {
  // The node's files are read while the Node is asked; they count only without the annotation.
  local.catch(() => {});
  try {
    const node = await client.get({ apiVersion: "v1", kind: "Node", name: nodeName });
    const annotated = node.metadata.annotations?.[CRI_SOCKET_ANNOTATION];
    if (annotated) return annotated;
  } catch (e) {
    if (!isNotFound(e))
      throw new Error(`failed to get corresponding node: ${(e as Error).message}`, { cause: e });
  }
  return local;
}

/** getAPIEndpointFromPodAnnotation: this node's kube-apiserver mirror Pod's endpoint annotation. */
async function apiEndpointOfNode(
  client: KubeClient,
  nodeName: string,
): Promise<{ advertiseAddress: string; bindPort: number }> {
  const name = `kube-apiserver-${nodeName}`;
  let pod: KubeObject;
  try {
    pod = await client.get({ apiVersion: "v1", kind: "Pod", name, namespace: "kube-system" });
  } catch (e) {
    throw new Error(
      `could not retrieve API endpoints for node "${nodeName}" using pod annotations: ${(e as Error).message}`,
      { cause: e },
    );
  }
  const value = pod.metadata.annotations?.[APISERVER_ENDPOINT_ANNOTATION];
  const m = value ? /^\[?([^\]]+?)\]?:(\d+)$/.exec(value) : null;
  if (!m) {
    throw new Error(
      `could not retrieve API endpoints for node "${nodeName}" using pod annotations: pod ${name} has no valid ${APISERVER_ENDPOINT_ANNOTATION} annotation`,
    );
  }
  return { advertiseAddress: m[1]!, bindPort: Number(m[2]) || DEFAULT_API_BIND_PORT };
}

/**
 * What the InitConfig reads from the node's own files. They only read, so they are asked before
 * the cluster answers; a failure counts where it is awaited, after the cluster's own.
 */
export interface NodeFileReads {
  hostname: Promise<string>;
  /** A control plane's registered name (kubelet.conf); undefined on a worker. */
  nodeName: Promise<string> | undefined;
  /** The CRI socket the node's kubelet files name. */
  criSocket: Promise<string | undefined>;
}

/** Starts the reads; `readNodeState`: a control plane's registration is read back too. */
export function readNodeFiles(host: Host, readNodeState: boolean): NodeFileReads {
  const reads: NodeFileReads = {
    hostname: host.hostname(),
    nodeName: readNodeState ? nodeNameFromKubeletConfig(host) : undefined,
    criSocket: localCRISocket(host),
  };
  for (const p of [reads.hostname, reads.nodeName, reads.criSocket]) p?.catch(() => {});
  return reads;
}

export interface UpgradeInitConfigInput {
  client: KubeClient;
  host: Host;
  /** The node's files, read since readNodeFiles started them (nodeName set: a control plane). */
  files: NodeFileReads;
  stored: ClusterStoredConfig;
  /** The Kubernetes version the InitConfig describes (apply: the target; node: the stored one). */
  resolved: ResolvedVersion;
  /** A worker's detected address (only picks kube-proxy's bind family). */
  detectedAddress: () => Promise<string>;
  timeouts: Required<Timeouts>;
  imagePullPolicy: InitConfig["init"]["nodeRegistration"]["imagePullPolicy"];
  imagePullSerial: boolean;
  ignorePreflightErrors: string[];
  warn: (line: string) => void;
}

/**
 * The InitConfig every upgrade phase reads. On a worker (`upgrade node` passes
 * newControlPlane=!isControlPlaneNode) no registration or endpoint is read back.
 */
export async function upgradeInitConfig(input: UpgradeInitConfigInput): Promise<InitConfig> {
  const { client, host, files } = input;
  let nodeName = nodeNameFrom(undefined, await files.hostname);
  let endpoint: { advertiseAddress: string; bindPort: number };
  let criSocket: string | undefined;
  if (files.nodeName) {
    nodeName = await files.nodeName;
    [endpoint, criSocket] = await Promise.all([
      apiEndpointOfNode(client, nodeName),
      nodeCRISocket(client, host, nodeName, files.criSocket),
    ]);
  } else {
    endpoint = { advertiseAddress: await input.detectedAddress(), bindPort: DEFAULT_API_BIND_PORT };
    criSocket = await files.criSocket;
  }
  const docs: ConfigDocuments = {
    ...input.stored.docs,
    init: {
      nodeRegistration: {
        name: nodeName,
        ...(criSocket ? { criSocket } : {}),
        ignorePreflightErrors: input.ignorePreflightErrors,
        imagePullPolicy: input.imagePullPolicy,
        imagePullSerial: input.imagePullSerial,
      },
      localAPIEndpoint: endpoint,
    },
    cluster: { ...input.stored.docs.cluster, kubernetesVersion: input.resolved.version },
  };
  const cfg = defaultInitConfig(docs, {
    resolved: input.resolved,
    nodeName,
    advertiseAddress: endpoint.advertiseAddress,
    generateToken: () => "",
    ...(criSocket ? { criSocket } : {}),
    warn: input.warn,
  });
  // Upgrade creates no bootstrap tokens; its active timeouts are the UpgradeConfiguration's.
  cfg.init.bootstrapTokens = [];
  cfg.init.timeouts = { ...input.timeouts };
  return cfg;
}
