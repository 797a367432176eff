import { createHash } from "node:crypto";
import { normalizeGoDuration } from "../config/duration.js";
import type {
  Arg,
  ClusterConfiguration,
  ComponentConfig,
  ControlPlaneComponent,
  EnvVar,
  HostPathMount,
} from "../config/types.js";
import type { Release } from "../config/release.js";
import { KUBEADM_V1BETA4 } from "../config/types.js";
import { toYAML } from "../config/yaml.js";
import type { KubeObject } from "../types/kube-object.js";
import { marshalKubeletConfiguration, renderKubeletConfig } from "./kubelet.js";

// upload-config (kubeadm: phases/uploadconfig/uploadconfig.go UploadConfiguration;
// phases/kubelet/config.go CreateConfigMap; componentconfigs/checksums.go). The RBAC objects of
// both sub-phases are in rbac.ts (kubeadmConfigRBAC, kubeletConfigRBAC).

export const KUBEADM_CONFIG_CONFIGMAP = "kubeadm-config";
export const CLUSTER_CONFIGURATION_KEY = "ClusterConfiguration";
export const KUBELET_CONFIG_CONFIGMAP = "kubelet-config";
export const KUBELET_CONFIG_KEY = "kubelet";
export const COMPONENT_CONFIG_HASH_ANNOTATION = "kubeadm.kubernetes.io/component-config.hash";

type Doc = Record<string, unknown>;

// The v1beta4 JSON tags decide what appears (apis/kubeadm/v1beta4/types.go): `omitempty` drops
// empty strings, false, empty lists and maps but never a struct, so apiServer, dns, proxy...
// always print (`{}` when empty); dataDir, caFile, certFile, keyFile, endpoints and Arg.value
// have no omitempty and always print.
// `put` is for omitempty fields only (values, lists and the featureGates map); structs are set
// directly.
function put(doc: Doc, key: string, value: unknown): void {
  if (value === undefined || value === null || value === "" || value === false) return;
  if (Array.isArray(value) ? value.length === 0 : typeof value === "object" && isEmpty(value)) {
    return;
  }
  doc[key] = value;
}

function isEmpty(value: object): boolean {
  return Object.keys(value).length === 0;
}

function args(list: Arg[] | undefined): Doc[] | undefined {
  return list?.map((a) => ({ name: a.name, value: a.value }));
}

function envs(list: EnvVar[] | undefined): Doc[] | undefined {
  return list?.map((e) => {
    const out: Doc = { name: e.name };
    put(out, "value", e.value);
    if (e.valueFrom !== undefined) out["valueFrom"] = e.valueFrom;
    return out;
  });
}

function volumes(list: HostPathMount[] | undefined): Doc[] | undefined {
  return list?.map((v) => {
    const out: Doc = { name: v.name, hostPath: v.hostPath, mountPath: v.mountPath };
    put(out, "readOnly", v.readOnly);
    put(out, "pathType", v.pathType);
    return out;
  });
}

function component(c: ControlPlaneComponent | undefined, certSANs?: string[]): Doc {
  const out: Doc = {};
  put(out, "extraArgs", args(c?.extraArgs));
  put(out, "extraVolumes", volumes(c?.extraVolumes));
  put(out, "extraEnvs", envs(c?.extraEnvs));
  put(out, "certSANs", certSANs);
  return out;
}

function etcd(e: ClusterConfiguration["etcd"]): Doc {
  const out: Doc = {};
  if (e?.local) {
    const l = e.local;
    const local: Doc = {};
    put(local, "imageRepository", l.imageRepository);
    put(local, "imageTag", l.imageTag);
    local["dataDir"] = l.dataDir ?? "";
    put(local, "extraArgs", args(l.extraArgs));
    put(local, "extraEnvs", envs(l.extraEnvs));
    put(local, "serverCertSANs", l.serverCertSANs);
    put(local, "peerCertSANs", l.peerCertSANs);
    out["local"] = local;
  }
  if (e?.external) {
    const x = e.external;
    out["external"] = {
      endpoints: x.endpoints ?? null,
      caFile: x.caFile ?? "",
      certFile: x.certFile ?? "",
      keyFile: x.keyFile ?? "",
    };
  }
  return out;
}

function duration(text: string | undefined, field: string): string | undefined {
  return text === undefined
    ? undefined
    : normalizeGoDuration(text, `ClusterConfiguration.${field}`);
}

/** A ClusterConfiguration and, for a CI build, the "ci/<version>" kubeadm records instead. */
export type UploadedClusterConfiguration = ClusterConfiguration & { ciKubernetesVersion?: string };

/**
 * The kubeadm.k8s.io/v1beta4 ClusterConfiguration document as kubeadm marshals it for upload
 * (configutil.MarshalKubeadmConfigObject): only v1beta4 fields, empty optional ones left out,
 * durations in Go's form ("24h" → "24h0m0s"). componentConfigs are not part of the type.
 */
export function clusterConfigurationDocument(cluster: UploadedClusterConfiguration): Doc {
  const doc: Doc = { apiVersion: KUBEADM_V1BETA4, kind: "ClusterConfiguration" };
  doc["etcd"] = etcd(cluster.etcd);
  const net: Doc = {};
  put(net, "serviceSubnet", cluster.networking?.serviceSubnet);
  put(net, "podSubnet", cluster.networking?.podSubnet);
  put(net, "dnsDomain", cluster.networking?.dnsDomain);
  doc["networking"] = net;
  // A CI build is recorded as "ci/<version>" (UploadConfiguration restores CIKubernetesVersion),
  // so that every later command reads it as one and takes its images from the CI registry.
  put(doc, "kubernetesVersion", cluster.ciKubernetesVersion ?? cluster.kubernetesVersion);
  put(doc, "controlPlaneEndpoint", cluster.controlPlaneEndpoint);
  doc["apiServer"] = component(cluster.apiServer, cluster.apiServer?.certSANs);
  doc["controllerManager"] = component(cluster.controllerManager);
  doc["scheduler"] = component(cluster.scheduler);
  const dns: Doc = {};
  put(dns, "imageRepository", cluster.dns?.imageRepository);
  put(dns, "imageTag", cluster.dns?.imageTag);
  put(dns, "disabled", cluster.dns?.disabled);
  doc["dns"] = dns;
  const proxy: Doc = {};
  put(proxy, "disabled", cluster.proxy?.disabled);
  doc["proxy"] = proxy;
  put(doc, "certificatesDir", cluster.certificatesDir);
  put(doc, "imageRepository", cluster.imageRepository);
  put(doc, "featureGates", cluster.featureGates);
  put(doc, "clusterName", cluster.clusterName);
  put(doc, "encryptionAlgorithm", cluster.encryptionAlgorithm);
  put(
    doc,
    "certificateValidityPeriod",
    duration(cluster.certificateValidityPeriod, "certificateValidityPeriod"),
  );
  put(
    doc,
    "caCertificateValidityPeriod",
    duration(cluster.caCertificateValidityPeriod, "caCertificateValidityPeriod"),
  );
  return doc;
}

/** The `ClusterConfiguration` value of kubeadm-config. */
export function clusterConfigurationYAML(cluster: UploadedClusterConfiguration): string {
  return toYAML(clusterConfigurationDocument(cluster));
}

/** ConfigMap kube-system/kubeadm-config as created (CreateOrMutateConfigMap's create path). */
export function kubeadmConfigConfigMap(cluster: UploadedClusterConfiguration): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: KUBEADM_CONFIG_CONFIGMAP, namespace: "kube-system" },
    data: { [CLUSTER_CONFIGURATION_KEY]: clusterConfigurationYAML(cluster) },
  };
}

/**
 * CreateOrMutateConfigMap's mutate path, when kubeadm-config exists (upgrade, re-run): only the
 * ClusterConfiguration key is replaced; every other key and the metadata stay.
 */
export function mutateKubeadmConfigConfigMap(
  existing: KubeObject,
  cluster: UploadedClusterConfiguration,
): KubeObject {
  const data = { ...((existing["data"] as Record<string, string> | undefined) ?? {}) };
  data[CLUSTER_CONFIGURATION_KEY] = clusterConfigurationYAML(cluster);
  return { ...structuredClone(existing), data };
}

function sortedKeys(map: Record<string, unknown> | undefined): string[] {
  // Go's sort.Strings orders by bytes, not UTF-16 units.
  return Object.keys(map ?? {}).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/**
 * kubeadm's ChecksumForConfigMap: SHA-256 over the values of `data` in key order, then the
 * (decoded) values of `binaryData` in key order; keys and metadata are not hashed.
 * Returns "sha256:<hex>".
 */
export function checksumForConfigMap(cm: KubeObject): string {
  const hash = createHash("sha256");
  const data = cm["data"] as Record<string, string> | undefined;
  for (const key of sortedKeys(data)) hash.update(data![key]!, "utf8");
  const binary = cm["binaryData"] as Record<string, string> | undefined;
  for (const key of sortedKeys(binary)) hash.update(Buffer.from(binary![key]!, "base64"));
  return `sha256:${hash.digest("hex")}`;
}

/** SignConfigMap: a copy with the component-config hash annotation set. */
export function signConfigMap(cm: KubeObject): KubeObject {
  const out = structuredClone(cm);
  out.metadata.annotations = {
    ...out.metadata.annotations,
    [COMPONENT_CONFIG_HASH_ANNOTATION]: checksumForConfigMap(cm),
  };
  return out;
}

/** VerifyConfigMapSignature: the annotation is present and matches the content. */
export function verifyConfigMapSignature(cm: KubeObject): boolean {
  const signature = cm.metadata.annotations?.[COMPONENT_CONFIG_HASH_ANNOTATION];
  return signature !== undefined && signature === checksumForConfigMap(cm);
}

/**
 * ConfigMap kube-system/kubelet-config: the cluster-wide KubeletConfiguration under `kubelet`,
 * signed with the component-config hash unless the user supplied the config (kubeadm then
 * never overwrites it on upgrade). Created or updated as a whole (CreateOrUpdate).
 */
export function kubeletConfigConfigMap(
  kubelet: ComponentConfig,
  userSupplied: boolean,
  release: Pick<Release, "minor">,
): KubeObject {
  const cm: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: KUBELET_CONFIG_CONFIGMAP, namespace: "kube-system" },
    data: {
      [KUBELET_CONFIG_KEY]: renderKubeletConfig(marshalKubeletConfiguration(kubelet, release)),
    },
  };
  return userSupplied ? cm : signConfigMap(cm);
}
