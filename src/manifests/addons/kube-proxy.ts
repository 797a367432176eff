import type { Release } from "../../config/release.js";
import type { InitConfig } from "../../config/types.js";
import type { KubeObject } from "../../types/kube-object.js";
import { controlPlaneEndpointURL } from "../../kubeconfig/endpoints.js";
import { kubernetesImage, mergeEnvVars, proxyEnvVars } from "../static-pod.js";
import { signConfigMap } from "../upload-config.js";
import { marshalKubeProxyConfiguration } from "./kube-proxy-config.js";

// The objects of kubeadm's kube-proxy addon. kubeadm: phases/addons/proxy/proxy.go
// (EnsureProxyAddon, printOrCreateKubeProxyObjects) and manifests.go (KubeProxyConfigMap19,
// KubeProxyDaemonSet19), read at dims/kubernetes@25498f97 (≈v1.37-dev); the templates have not
// changed in the releases kubeforge supports. constants.go: KubeProxyClusterRoleName
// "system:node-proxier", KubeProxyClusterRoleBindingName "kubeadm:node-proxier",
// NodeBootstrapTokenAuthGroup.

export const KUBE_PROXY_NAME = "kube-proxy";
export const KUBE_PROXY_CLUSTER_ROLE_BINDING = "kubeadm:node-proxier";
export const KUBE_PROXY_CLUSTER_ROLE = "system:node-proxier";
/** kubeadm: constants.KubeProxyConfigMapKey. */
export const KUBE_PROXY_CONFIG_KEY = "config.conf";
export const KUBE_PROXY_KUBECONFIG_KEY = "kubeconfig.conf";
const NODE_BOOTSTRAP_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token";
const NAMESPACE = "kube-system";
const RBAC_GROUP = "rbac.authorization.k8s.io";

/** `<imageRepository>/kube-proxy:<kubernetesVersion>` (kubeadm: images.GetKubernetesImage). */
export function kubeProxyImage(cluster: {
  imageRepository: string;
  ciImageRepository?: string;
  kubernetesVersion: string;
}): string {
  return kubernetesImage(cluster, KUBE_PROXY_NAME);
}

/**
 * The kubeconfig kube-proxy reads: the service account's token and CA, and the cluster's
 * control-plane endpoint (kubeadm: util.GetControlPlaneEndpoint). Written without a final
 * newline: the template's block scalar is `|-`.
 */
export function kubeProxyKubeconfig(cfg: InitConfig): string {
  const server = controlPlaneEndpointURL(
    cfg.cluster.controlPlaneEndpoint,
    cfg.init.localAPIEndpoint,
  );
  return `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: ${server}
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token`;
}

/**
 * ConfigMap kube-system/kube-proxy. config.conf is the marshalled KubeProxyConfiguration without
 * its final newline (`|-` in the template). kubeadm signs it with the component-config hash
 * unless the user supplied the KubeProxyConfiguration (SignConfigMap).
 */
export function kubeProxyConfigMap(cfg: InitConfig, release: Release): KubeObject {
  const data = {
    [KUBE_PROXY_KUBECONFIG_KEY]: kubeProxyKubeconfig(cfg),
    [KUBE_PROXY_CONFIG_KEY]: marshalKubeProxyConfiguration(cfg.kubeProxy, release).replace(
      /\n+$/,
      "",
    ),
  };
  const configMap: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: KUBE_PROXY_NAME, namespace: NAMESPACE, labels: { app: KUBE_PROXY_NAME } },
    data,
  };
  return cfg.kubeProxyUserSupplied ? configMap : signConfigMap(configMap);
}

/**
 * DaemonSet kube-system/kube-proxy. kubeadm appends to NODE_NAME the proxy variables of its own
 * environment (util.GetProxyEnvVars, MergeKubeadmEnvVars); `env` is that environment: the one
 * kubeforge runs kubeadm's part in on the node.
 */
export function kubeProxyDaemonSet(
  cfg: InitConfig,
  env: Readonly<Record<string, string | undefined>>,
): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      labels: { "k8s-app": KUBE_PROXY_NAME },
      name: KUBE_PROXY_NAME,
      namespace: NAMESPACE,
    },
    spec: {
      selector: { matchLabels: { "k8s-app": KUBE_PROXY_NAME } },
      updateStrategy: { type: "RollingUpdate" },
      template: {
        metadata: { labels: { "k8s-app": KUBE_PROXY_NAME } },
        spec: {
          priorityClassName: "system-node-critical",
          containers: [
            {
              name: KUBE_PROXY_NAME,
              image: kubeProxyImage(cfg.cluster),
              imagePullPolicy: "IfNotPresent",
              command: [
                "/usr/local/bin/kube-proxy",
                `--config=/var/lib/kube-proxy/${KUBE_PROXY_CONFIG_KEY}`,
                "--hostname-override=$(NODE_NAME)",
              ],
              securityContext: { privileged: true },
              volumeMounts: [
                { mountPath: "/var/lib/kube-proxy", name: KUBE_PROXY_NAME },
                { mountPath: "/run/xtables.lock", name: "xtables-lock", readOnly: false },
                { mountPath: "/lib/modules", name: "lib-modules", readOnly: true },
              ],
              env: [
                { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
                ...mergeEnvVars(proxyEnvVars(env)),
              ],
            },
          ],
          hostNetwork: true,
          serviceAccountName: KUBE_PROXY_NAME,
          volumes: [
            { name: KUBE_PROXY_NAME, configMap: { name: KUBE_PROXY_NAME } },
            {
              name: "xtables-lock",
              hostPath: { path: "/run/xtables.lock", type: "FileOrCreate" },
            },
            { name: "lib-modules", hostPath: { path: "/lib/modules" } },
          ],
          tolerations: [{ operator: "Exists" }],
          nodeSelector: { "kubernetes.io/os": "linux" },
        },
      },
    },
  };
}

export function kubeProxyServiceAccount(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: KUBE_PROXY_NAME, namespace: NAMESPACE },
  };
}

/** ClusterRoleBinding kubeadm:node-proxier: the built-in system:node-proxier role. */
export function kubeProxyClusterRoleBinding(): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRoleBinding",
    metadata: { name: KUBE_PROXY_CLUSTER_ROLE_BINDING },
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: KUBE_PROXY_CLUSTER_ROLE },
    subjects: [{ kind: "ServiceAccount", name: KUBE_PROXY_NAME, namespace: NAMESPACE }],
  };
}

/** Role kube-system/kube-proxy: read the kube-proxy ConfigMap (joining nodes need it). */
export function kubeProxyRole(): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "Role",
    metadata: { name: KUBE_PROXY_NAME, namespace: NAMESPACE },
    rules: [
      {
        verbs: ["get"],
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: [KUBE_PROXY_NAME],
      },
    ],
  };
}

export function kubeProxyRoleBinding(): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "RoleBinding",
    metadata: { name: KUBE_PROXY_NAME, namespace: NAMESPACE },
    roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: KUBE_PROXY_NAME },
    // kubeadm leaves the subject's apiGroup empty; the API server defaults it for Groups.
    subjects: [{ kind: "Group", name: NODE_BOOTSTRAP_TOKEN_GROUP }],
  };
}

export interface KubeProxyObjects {
  configMap: KubeObject;
  daemonSet: KubeObject;
  serviceAccount: KubeObject;
  clusterRoleBinding: KubeObject;
  role: KubeObject;
  roleBinding: KubeObject;
  /** The objects in the order kubeadm writes them (proxy.go EnsureProxyAddon). */
  inOrder: KubeObject[];
}

/** Every object of the kube-proxy addon for a configuration and release. */
export function kubeProxyObjects(
  cfg: InitConfig,
  release: Release,
  env: Readonly<Record<string, string | undefined>>,
): KubeProxyObjects {
  const configMap = kubeProxyConfigMap(cfg, release);
  const daemonSet = kubeProxyDaemonSet(cfg, env);
  const serviceAccount = kubeProxyServiceAccount();
  const clusterRoleBinding = kubeProxyClusterRoleBinding();
  const role = kubeProxyRole();
  const roleBinding = kubeProxyRoleBinding();
  return {
    configMap,
    daemonSet,
    serviceAccount,
    clusterRoleBinding,
    role,
    roleBinding,
    inOrder: [configMap, daemonSet, serviceAccount, clusterRoleBinding, role, roleBinding],
  };
}

/** Whether `init` installs kube-proxy (v1beta4 proxy.disabled; see skip.ts for --skip-phases). */
export function kubeProxyEnabled(cfg: InitConfig): boolean {
  return cfg.cluster.proxy.disabled !== true;
}
