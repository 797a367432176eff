import { load } from "js-yaml";
import {
  ciImageRepositoryFor,
  DEFAULT_CERTIFICATES_DIR,
  DEFAULT_IMAGE_REPOSITORY,
} from "../../config/defaults.js";
import type { InitConfig } from "../../config/types.js";
import { CI_VERSION_PREFIX, isCIVersion } from "../../config/versions.js";
import { APISERVER_ENDPOINT_ANNOTATION } from "../../manifests/control-plane.js";
import { versionOfImageTag } from "../../manifests/static-pod.js";
import { isProxyEndpoint } from "../../node/apiserver-proxy.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import { realUpgradeEtcd } from "../../phases/upgrade/etcd-access.js";
import { routeThrough } from "../../remote/route.js";
import type { HostInventory } from "../inventory.js";
import type { ClusterSession } from "../session.js";
import type { ClusterReading, NodeReading } from "./data.js";
import { isNotFound } from "../../kube/errors.js";
import { withShortRetry } from "../../kube/short-retry.js";

// What the cluster runs, read before any host changes (kubeadm-upgrade.md §5.3 step 2): the
// version kubeadm-config records, every Node's kubelet version and readiness, the kube-apiserver
// image each control plane's own static Pod manifest names, etcd's health through its client
// (kubeadm's CheckClusterHealth over the etcd Pods' endpoints) and the addons' images.

const KUBE_APISERVER_MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml";
const ETCD_API_CALL_MS = 30_000;

interface NodeObject extends KubeObject {
  status?: {
    conditions?: { type: string; status: string }[];
    nodeInfo?: { kubeletVersion?: string };
  };
}

interface PodTemplateOwner extends KubeObject {
  spec?: { template?: { spec?: { containers?: { image?: string }[] } } };
}

/**
 * The version an image's tag stands for ("registry.k8s.io/kube-apiserver:v1.35.0" → "v1.35.0";
 * a CI build's "_" read back as "+").
 */
function imageVersion(image: string | undefined): string | undefined {
  const m = image ? /:([^:/@]+)(@.*)?$/.exec(image) : null;
  return m ? versionOfImageTag(m[1]!) : undefined;
}

/** Every host must be a finished node of this cluster: the marker names it. */
export function refuseUnfinishedHosts(inventory: readonly HostInventory[], cluster: string): void {
  const wrong = inventory.flatMap((i) => {
    const c = i.condition;
    if (c.kind === "done") return [];
    const why =
      c.kind === "foreign"
        ? c.reason
        : c.kind === "fresh"
          ? `it holds no node of a cluster; run "kubeforge up" first`
          : `"kubeforge up" did not finish there; run "kubeforge up" first`;
    return [` - ${i.node.name}: ${why}`];
  });
  if (wrong.length > 0) {
    throw new Error(
      `cannot upgrade the cluster "${cluster}": ${wrong.length} of ${inventory.length} hosts are not finished nodes of it:\n${wrong.join("\n")}`,
    );
  }
}

/** The control plane's kube-apiserver as its static Pod manifest names it: version and address. */
async function apiServerOf(
  session: ClusterSession,
  name: string,
): Promise<Pick<NodeReading, "apiServerVersion" | "apiServerEndpoint">> {
  const text = (await session.hostOf(name).readFile(KUBE_APISERVER_MANIFEST)).toString("utf8");
  const pod = load(text) as
    | {
        metadata?: { annotations?: Record<string, string> };
        spec?: { containers?: { image?: string }[] };
      }
    | undefined;
  const endpoint = pod?.metadata?.annotations?.[APISERVER_ENDPOINT_ANNOTATION];
  const version = imageVersion(pod?.spec?.containers?.[0]?.image);
  return {
    ...(version !== undefined ? { apiServerVersion: version } : {}),
    ...(endpoint ? { apiServerEndpoint: endpoint } : {}),
  };
}

async function containerImage(
  admin: KubeClient,
  apiVersion: string,
  kind: string,
  name: string,
): Promise<string | undefined> {
  try {
    const obj = await withShortRetry(() =>
      admin.get<PodTemplateOwner>({ apiVersion, kind, name, namespace: "kube-system" }),
    );
    return imageVersion(obj.spec?.template?.spec?.containers?.[0]?.image);
  } catch (e) {
    // Not installed is an answer; an API server that did not answer is not.
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The ClusterConfiguration kube-system/kubeadm-config holds. */
export async function storedClusterConfiguration(admin: KubeClient): Promise<{
  /** The version, without the "ci/" of a CI build. */
  kubernetesVersion: string;
  /** kubeadm-config records a CI build ("ci/<version>"). */
  ciBuild: boolean;
  certificatesDir: string;
  externalEtcd: boolean;
  controlPlaneEndpoint?: string;
  /** What decides the images (kubeadm stores a defaulted ClusterConfiguration: all present). */
  imageCluster: InitConfig["cluster"];
}> {
  const cm = await withShortRetry(() =>
    admin.get<KubeObject & { data?: Record<string, string> }>({
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "kubeadm-config",
      namespace: "kube-system",
    }),
  );
  const cfg = (load(cm.data?.ClusterConfiguration ?? "") ?? {}) as {
    kubernetesVersion?: string;
    certificatesDir?: string;
    controlPlaneEndpoint?: string;
    imageRepository?: string;
    etcd?: { external?: unknown };
    dns?: unknown;
    proxy?: unknown;
  };
  const recorded = cfg.kubernetesVersion ?? "";
  const ciBuild = isCIVersion(recorded);
  const kubernetesVersion = ciBuild ? recorded.slice(CI_VERSION_PREFIX.length) : recorded;
  const imageRepository = cfg.imageRepository || DEFAULT_IMAGE_REPOSITORY;
  // As kubeadm's NormalizeKubernetesVersion reads a CI build back.
  const ciImageRepository = ciImageRepositoryFor(imageRepository, ciBuild);
  const imageCluster = {
    imageRepository,
    ...(ciImageRepository ? { ciImageRepository } : {}),
    kubernetesVersion,
    dns: cfg.dns ?? {},
    proxy: cfg.proxy ?? {},
    etcd: cfg.etcd ?? { local: {} },
  } as unknown as InitConfig["cluster"];
  return {
    imageCluster,
    kubernetesVersion,
    ciBuild,
    certificatesDir: cfg.certificatesDir ?? DEFAULT_CERTIFICATES_DIR,
    externalEtcd: cfg.etcd?.external !== undefined,
    ...(cfg.controlPlaneEndpoint ? { controlPlaneEndpoint: cfg.controlPlaneEndpoint } : {}),
  };
}

/** etcd's health, or what is wrong with it (a stacked etcd; an external one is the user's). */
export async function etcdProblem(
  session: ClusterSession,
  admin: KubeClient,
  certificatesDir: string,
): Promise<string | undefined> {
  const host = await session.host(session.firstControlPlane.name);
  try {
    const etcd = await realUpgradeEtcd({
      host,
      certificatesDir,
      route: routeThrough(host),
      etcdAPICallMs: ETCD_API_CALL_MS,
      kubernetesAPICallMs: ETCD_API_CALL_MS,
    }).connect(admin);
    await etcd.checkClusterHealth();
    return undefined;
  } catch (e) {
    return (e as Error).message.split("\n")[0];
  }
}

/** The cluster's reading; only the nodes' markers wait for the hosts' inventory. */
export async function readCluster(
  session: ClusterSession,
  inventory: Promise<readonly HostInventory[]>,
): Promise<ClusterReading> {
  const admin = await session.adminClient();
  // Independent reads, asked at once; kubeadm-config's failure is the one told first.
  const rest = Promise.all([
    withShortRetry(() => admin.list<NodeObject>("v1", "Node")),
    addonImages(admin),
  ]);
  rest.catch(() => {});
  const stored = await storedClusterConfiguration(admin);
  const [objects, addons] = await rest;
  const [nodes, problem] = await Promise.all([
    inventory.then((all) => Promise.all(all.map((inv) => nodeReading(session, inv, objects)))),
    stored.externalEtcd ? undefined : etcdProblem(session, admin, stored.certificatesDir),
  ]);
  return {
    clusterVersion: stored.kubernetesVersion,
    nodes,
    nodeLocalProxy: isProxyEndpoint(stored.controlPlaneEndpoint),
    etcdProblem: problem,
    addons,
  };
}

async function nodeReading(
  session: ClusterSession,
  inv: HostInventory,
  objects: readonly NodeObject[],
): Promise<NodeReading> {
  const obj = objects.find((o) => o.metadata.name === inv.node.name);
  const marker = inv.condition.kind === "done" ? inv.condition.marker.upgrade : undefined;
  return {
    name: inv.node.name,
    role: inv.node.role,
    kubeletVersion: obj?.status?.nodeInfo?.kubeletVersion,
    ready: obj?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true,
    ...(inv.node.role === "control-plane" ? await apiServerOf(session, inv.node.name) : {}),
    ...(marker ? { marker } : {}),
  };
}

/** The image tags of CoreDNS and kube-proxy, where they run. */
export async function addonImages(admin: KubeClient): Promise<ClusterReading["addons"]> {
  const [coredns, kubeProxy] = await Promise.all([
    containerImage(admin, "apps/v1", "Deployment", "coredns"),
    containerImage(admin, "apps/v1", "DaemonSet", "kube-proxy"),
  ]);
  return { ...(coredns ? { coredns } : {}), ...(kubeProxy ? { kubeProxy } : {}) };
}
