import type { KubeObject } from "../../types/kube-object.js";

// The default StorageClass `up` installs (Cluster `storage: local-path`), so that
// PersistentVolumeClaims bind as in kind, k3s and minikube: Rancher's local-path provisioner,
// which makes each volume a folder on the node its pod runs on. The objects are upstream's
// deploy/local-path-storage.yaml at rancher/local-path-provisioner v0.0.37 (tag commit 49b2be8e,
// 2026-08-05), with two changes: the StorageClass carries the default-class annotation (as kind's
// pkg/build/nodeimage/const_storage.go and k3s's manifests/local-storage.yaml do; upstream's is
// not the default), and the helper pod's busybox is pinned to a tag (upstream names it without
// one, i.e. whatever `latest` is on the day).

export const LOCAL_PATH_NAMESPACE = "local-path-storage";
export const LOCAL_PATH_STORAGE_CLASS = "local-path";
export const LOCAL_PATH_PROVISIONER_IMAGE = "docker.io/rancher/local-path-provisioner:v0.0.37";
/** Pinned, as .github/workflows/e2e.yml pins its probe pod's. */
export const LOCAL_PATH_HELPER_IMAGE = "docker.io/library/busybox:1.36";
/** Where the volumes live on each node (upstream's default nodePathMap). */
export const LOCAL_PATH_DIR = "/opt/local-path-provisioner";
/** k8s.io/api storage/v1 annotations: BetaIsDefaultStorageClassAnnotation's GA form. */
export const DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class";

const NAME = "local-path-provisioner";
const SERVICE_ACCOUNT = "local-path-provisioner-service-account";
const ROLE = "local-path-provisioner-role";
const BINDING = "local-path-provisioner-bind";
const CONFIG = "local-path-config";
const RBAC = "rbac.authorization.k8s.io/v1";

const rule = (apiGroups: string[], resources: string[], verbs: string[]) => ({
  apiGroups,
  resources,
  verbs,
});
const WRITE = ["get", "list", "watch", "create", "patch", "update", "delete"];
const READ = ["get", "list", "watch"];
const subjects = [
  { kind: "ServiceAccount", name: SERVICE_ACCOUNT, namespace: LOCAL_PATH_NAMESPACE },
];

function rbac(): KubeObject[] {
  return [
    {
      apiVersion: RBAC,
      kind: "Role",
      metadata: { name: ROLE, namespace: LOCAL_PATH_NAMESPACE },
      rules: [rule([""], ["pods"], WRITE)],
    },
    {
      apiVersion: RBAC,
      kind: "ClusterRole",
      metadata: { name: ROLE },
      rules: [
        rule([""], ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"], READ),
        rule([""], ["persistentvolumes"], WRITE),
        rule([""], ["events"], ["create", "patch"]),
        rule(["storage.k8s.io"], ["storageclasses"], READ),
      ],
    },
    {
      apiVersion: RBAC,
      kind: "RoleBinding",
      metadata: { name: BINDING, namespace: LOCAL_PATH_NAMESPACE },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: ROLE },
      subjects,
    },
    {
      apiVersion: RBAC,
      kind: "ClusterRoleBinding",
      metadata: { name: BINDING },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: ROLE },
      subjects,
    },
  ];
}

function deployment(): KubeObject {
  const probe = (path: string, initialDelaySeconds: number, periodSeconds: number) => ({
    httpGet: { path, port: "health" },
    initialDelaySeconds,
    periodSeconds,
  });
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: NAME, namespace: LOCAL_PATH_NAMESPACE },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: NAME } },
      template: {
        metadata: { labels: { app: NAME } },
        spec: {
          serviceAccountName: SERVICE_ACCOUNT,
          containers: [
            {
              name: NAME,
              image: LOCAL_PATH_PROVISIONER_IMAGE,
              imagePullPolicy: "IfNotPresent",
              command: [NAME, "--debug", "start", "--config", "/etc/config/config.json"],
              ports: [{ name: "health", containerPort: 8080, protocol: "TCP" }],
              startupProbe: { ...probe("/health", 5, 5), failureThreshold: 12 },
              livenessProbe: probe("/health", 10, 10),
              readinessProbe: probe("/ready", 5, 5),
              volumeMounts: [{ name: "config-volume", mountPath: "/etc/config/" }],
              env: [
                {
                  name: "POD_NAMESPACE",
                  valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
                },
                { name: "CONFIG_MOUNT_PATH", value: "/etc/config/" },
                { name: "HEALTH_PORT", value: "8080" },
              ],
            },
          ],
          volumes: [{ name: "config-volume", configMap: { name: CONFIG } }],
        },
      },
    },
  };
}

/** The provisioner's configuration: upstream's, with the pinned helper image. */
function config(): KubeObject {
  const configJson = JSON.stringify(
    { nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [LOCAL_PATH_DIR] }] },
    null,
    2,
  );
  const helperPod = [
    "apiVersion: v1",
    "kind: Pod",
    "metadata:",
    "  name: helper-pod",
    "spec:",
    "  priorityClassName: system-node-critical",
    "  tolerations:",
    "    - key: node.kubernetes.io/disk-pressure",
    "      operator: Exists",
    "      effect: NoSchedule",
    "  containers:",
    "  - name: helper-pod",
    `    image: ${LOCAL_PATH_HELPER_IMAGE}`,
    "    imagePullPolicy: IfNotPresent",
  ].join("\n");
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: CONFIG, namespace: LOCAL_PATH_NAMESPACE },
    data: {
      "config.json": configJson,
      setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"',
      teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"',
      "helperPod.yaml": helperPod,
    },
  };
}

/** Every object, in an order that applies cleanly (the namespace first). */
export function localPathStorageObjects(): KubeObject[] {
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: LOCAL_PATH_NAMESPACE } },
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: SERVICE_ACCOUNT, namespace: LOCAL_PATH_NAMESPACE },
    },
    ...rbac(),
    deployment(),
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: {
        name: LOCAL_PATH_STORAGE_CLASS,
        annotations: { [DEFAULT_CLASS_ANNOTATION]: "true" },
      },
      provisioner: "rancher.io/local-path",
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    },
    config(),
  ];
}
