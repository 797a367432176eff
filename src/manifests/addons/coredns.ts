import { DEFAULT_IMAGE_REPOSITORY } from "../../config/defaults.js";
import { indexedIP, parseCIDR, splitCIDRs } from "../../config/network.js";
import type { Release } from "../../config/release.js";
import type { DNS, InitConfig } from "../../config/types.js";
import type { KubeObject } from "../../types/kube-object.js";
import { applyPatches, type PatchSet } from "../patches.js";
import { corefile, isDefaultCorefile } from "./corefile.js";

// The objects of kubeadm's CoreDNS addon, per release. kubeadm: phases/addons/dns/manifests.go
// (the templates) and dns.go (EnsureDNSAddon, createCoreDNSAddon, createDNSService), read at
// kubernetes/kubernetes@008b3652 (≥v1.34 templates) and dims/kubernetes@25498f97 (≈v1.37-dev);
// images/images.go GetDNSImage; constants.go GetDNSIP.

export const COREDNS_NAME = "coredns";
export const COREDNS_CLUSTER_ROLE = "system:coredns";
export const KUBE_DNS_SERVICE = "kube-dns";
export const COREDNS_IMAGE_NAME = "coredns";
/** kubeadm: dns.go coreDNSReplicas. */
export const COREDNS_DEFAULT_REPLICAS = 2;
/** The label of the Deployment, its Pods and the Service; kubeadm lists Deployments by it. */
export const KUBE_DNS_LABEL_SELECTOR = "k8s-app=kube-dns";

const NAMESPACE = "kube-system";
const KUBE_DNS_LABELS = { "k8s-app": "kube-dns" };
/** kubeadm: constants.LabelNodeRoleControlPlane, tolerated as ControlPlaneTaintKey. */
const CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane";

/**
 * kubeadm's GetDNSImage: dns.imageRepository over imageRepository; the default registry gets
 * the "/coredns" suffix (the image moved to registry.k8s.io/coredns/coredns) and a custom one
 * does not; dns.imageTag over the release's CoreDNS version.
 */
export function coreDNSImage(
  cluster: { imageRepository: string; dns?: DNS },
  release: Release,
): string {
  let repository = cluster.dns?.imageRepository || cluster.imageRepository;
  if (repository === DEFAULT_IMAGE_REPOSITORY) repository = `${repository}/coredns`;
  const tag = cluster.dns?.imageTag || release.coreDNSVersion;
  return `${repository}/${COREDNS_IMAGE_NAME}:${tag}`;
}

/**
 * kubeadm's GetDNSIP: the 10th address of the first service CIDR, whose family is the
 * cluster's default Service family (10.96.0.0/12 → 10.96.0.10, fd00::/108 → fd00::a).
 */
export function dnsServiceIP(serviceSubnet: string): string {
  const first = splitCIDRs(serviceSubnet)[0];
  if (first === undefined || !parseCIDR(first)) {
    throw new Error(
      `networking.serviceSubnet "${serviceSubnet}" does not start with a valid CIDR, so the DNS Service IP cannot be chosen`,
    );
  }
  try {
    return indexedIP(first, 10);
  } catch (e) {
    throw new Error(
      `networking.serviceSubnet "${serviceSubnet}": unable to get the DNS Service IP (the 10th address of ${first})`,
      { cause: e },
    );
  }
}

export function coreDNSServiceAccount(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: COREDNS_NAME, namespace: NAMESPACE },
  };
}

export function coreDNSClusterRole(): KubeObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: COREDNS_CLUSTER_ROLE },
    rules: [
      {
        apiGroups: [""],
        resources: ["endpoints", "services", "pods", "namespaces"],
        verbs: ["list", "watch"],
      },
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
    ],
  };
}

export function coreDNSClusterRoleBinding(): KubeObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: COREDNS_CLUSTER_ROLE },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: COREDNS_CLUSTER_ROLE,
    },
    subjects: [{ kind: "ServiceAccount", name: COREDNS_NAME, namespace: NAMESPACE }],
  };
}

/** ConfigMap kube-system/coredns with the Corefile for the cluster's DNS domain. */
export function coreDNSConfigMap(dnsDomain: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: COREDNS_NAME, namespace: NAMESPACE },
    data: { Corefile: corefile(dnsDomain) },
  };
}

export interface CoreDNSDeploymentOptions {
  /** Replica count: the existing Deployment's on re-apply (existingCoreDNSReplicas), else 2. */
  replicas?: number;
  /** The user's patches; the "corednsdeployment" target applies to the Deployment. */
  patches?: PatchSet;
  log?: (line: string) => void;
}

/** Deployment kube-system/coredns, the user's corednsdeployment patches applied. */
export function coreDNSDeployment(
  cfg: InitConfig,
  release: Release,
  opts: CoreDNSDeploymentOptions = {},
): KubeObject {
  const named = release.behaviour.coreDNSNamedProbePorts;
  const ports: Record<string, unknown>[] = [
    { containerPort: 53, name: "dns", protocol: "UDP" },
    { containerPort: 53, name: "dns-tcp", protocol: "TCP" },
    { containerPort: 9153, name: "metrics", protocol: "TCP" },
  ];
  if (named) {
    ports.push(
      { containerPort: 8080, name: "liveness-probe", protocol: "TCP" },
      { containerPort: 8181, name: "readiness-probe", protocol: "TCP" },
    );
  }
  const deployment: KubeObject = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: COREDNS_NAME, namespace: NAMESPACE, labels: { ...KUBE_DNS_LABELS } },
    spec: {
      replicas: opts.replicas ?? COREDNS_DEFAULT_REPLICAS,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
      selector: { matchLabels: { ...KUBE_DNS_LABELS } },
      template: {
        metadata: { labels: { ...KUBE_DNS_LABELS } },
        spec: {
          priorityClassName: "system-cluster-critical",
          serviceAccountName: COREDNS_NAME,
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    labelSelector: {
                      matchExpressions: [{ key: "k8s-app", operator: "In", values: ["kube-dns"] }],
                    },
                    topologyKey: "kubernetes.io/hostname",
                  },
                },
              ],
            },
          },
          tolerations: [
            { key: "CriticalAddonsOnly", operator: "Exists" },
            { key: CONTROL_PLANE_TAINT_KEY, effect: "NoSchedule" },
          ],
          nodeSelector: { "kubernetes.io/os": "linux" },
          containers: [
            {
              name: "coredns",
              image: coreDNSImage(cfg.cluster, release),
              imagePullPolicy: "IfNotPresent",
              resources: {
                limits: { memory: "170Mi" },
                requests: { cpu: "100m", memory: "70Mi" },
              },
              args: ["-conf", "/etc/coredns/Corefile"],
              volumeMounts: [{ name: "config-volume", mountPath: "/etc/coredns", readOnly: true }],
              ports,
              livenessProbe: {
                httpGet: { path: "/health", port: named ? "liveness-probe" : 8080, scheme: "HTTP" },
                initialDelaySeconds: 60,
                timeoutSeconds: 5,
                successThreshold: 1,
                failureThreshold: 5,
              },
              readinessProbe: {
                httpGet: { path: "/ready", port: named ? "readiness-probe" : 8181, scheme: "HTTP" },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
                readOnlyRootFilesystem: true,
              },
            },
          ],
          dnsPolicy: "Default",
          volumes: [
            {
              name: "config-volume",
              configMap: { name: COREDNS_NAME, items: [{ key: "Corefile", path: "Corefile" }] },
            },
          ],
        },
      },
    },
  };
  return applyPatches("corednsdeployment", deployment, opts.patches, opts.log);
}

/**
 * Service kube-system/kube-dns. kubeadm sets no ipFamilies/ipFamilyPolicy: the API server makes
 * it SingleStack in the family of clusterIP, the first service CIDR's, also in dual-stack.
 * `resourceVersion: "0"` is kubeadm's: "0" counts as unset on create, and makes the update that
 * follows a create conflict unconditional.
 */
export function coreDNSService(serviceSubnet: string): KubeObject {
  const port = (name: string, number: number, protocol: string) => ({
    name,
    port: number,
    protocol,
    targetPort: number,
  });
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      labels: {
        ...KUBE_DNS_LABELS,
        "kubernetes.io/cluster-service": "true",
        "kubernetes.io/name": "CoreDNS",
      },
      name: KUBE_DNS_SERVICE,
      namespace: NAMESPACE,
      annotations: { "prometheus.io/port": "9153", "prometheus.io/scrape": "true" },
      resourceVersion: "0",
    },
    spec: {
      clusterIP: dnsServiceIP(serviceSubnet),
      ports: [port("dns", 53, "UDP"), port("dns-tcp", 53, "TCP"), port("metrics", 9153, "TCP")],
      selector: { ...KUBE_DNS_LABELS },
    },
  };
}

export interface CoreDNSObjects {
  configMap: KubeObject;
  clusterRole: KubeObject;
  clusterRoleBinding: KubeObject;
  serviceAccount: KubeObject;
  deployment: KubeObject;
  service: KubeObject;
  /** The objects in the order kubeadm writes them (dns.go createCoreDNSAddon). */
  inOrder: KubeObject[];
}

/** Every object of the CoreDNS addon for a configuration and release. */
export function coreDNSObjects(
  cfg: InitConfig,
  release: Release,
  opts: CoreDNSDeploymentOptions = {},
): CoreDNSObjects {
  const configMap = coreDNSConfigMap(cfg.cluster.networking.dnsDomain);
  const clusterRole = coreDNSClusterRole();
  const clusterRoleBinding = coreDNSClusterRoleBinding();
  const serviceAccount = coreDNSServiceAccount();
  const deployment = coreDNSDeployment(cfg, release, opts);
  const service = coreDNSService(cfg.cluster.networking.serviceSubnet);
  return {
    configMap,
    clusterRole,
    clusterRoleBinding,
    serviceAccount,
    deployment,
    service,
    inOrder: [configMap, clusterRole, clusterRoleBinding, serviceAccount, deployment, service],
  };
}

/** Whether `init` installs CoreDNS (v1beta4 dns.disabled; see skip.ts for --skip-phases). */
export function coreDNSEnabled(cfg: InitConfig): boolean {
  return cfg.cluster.dns.disabled !== true;
}

/**
 * kubeadm's deployedDNSReplicas: given the Deployments labelled k8s-app=kube-dns in kube-system,
 * the replica count to keep: none → 2, one → its own, more → an error, as in kubeadm.
 */
export function existingCoreDNSReplicas(deployments: readonly KubeObject[]): number {
  if (deployments.length === 0) return COREDNS_DEFAULT_REPLICAS;
  if (deployments.length > 1) {
    const names = deployments.map((d) => d.metadata.name).join(", ");
    throw new Error(
      `multiple DNS addon deployments found in kube-system with label ${KUBE_DNS_LABEL_SELECTOR}: ${names}`,
    );
  }
  const replicas = (deployments[0]!.spec as { replicas?: number } | undefined)?.replicas;
  // The API server defaults spec.replicas to 1; a Deployment read back always has it.
  return replicas ?? 1;
}

/**
 * What re-applying does to an existing coredns ConfigMap (kubeadm: createCoreDNSAddon):
 * "create" when there is none; "update" (replace with the new Corefile) when it holds a Corefile
 * kubeadm generated; "retain" when the user changed it. kubeadm migrates a user's Corefile with
 * coredns/corefile-migration when the installed CoreDNS version differs and a plugin was removed
 * or changed default; kubeforge does not migrate and retains it (the Deployment is still
 * updated, as kubeadm does when no migration is needed).
 */
export function coreDNSConfigMapAction(
  existing: KubeObject | undefined,
): "create" | "update" | "retain" {
  if (!existing) return "create";
  const text = (existing.data as Record<string, string> | undefined)?.Corefile;
  if (text === undefined) {
    throw new Error(
      `the ConfigMap ${NAMESPACE}/${COREDNS_NAME} has no Corefile key: unable to find the CoreDNS Corefile data`,
    );
  }
  return text === "" || isDefaultCorefile(text) ? "update" : "retain";
}

/**
 * kubeadm's createDNSService creates the Service and, when the create fails as AlreadyExists
 * (409) or Invalid (422, "provided IP is already allocated"), updates it instead.
 */
export function dnsServiceCreateFallsBackToUpdate(status: number): boolean {
  return status === 409 || status === 422;
}
