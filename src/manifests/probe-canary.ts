import type { KubeObject } from "../types/kube-object.js";

// The workload canary of the upgrade rehearsal's probes (kubeadm-upgrade.md §5.5): a Deployment
// of a small HTTP server spread across the workers, a PodDisruptionBudget that lets a drain take
// one replica at a time, and a NodePort Service: the runner reaches it on a node's address where
// it can, else through the API server's service proxy. Pure: names and counts in, objects out.
//
// The image is Kubernetes' own e2e test server, at the tag test/utils/image/manifest.go pins
// (configs[Agnhost] = agnhost 2.52); `netexec` serves HTTP on --http-port and answers
// `/hostname` with the Pod's name (test/images/agnhost/netexec/netexec.go).

export const CANARY_NAME = "kubeforge-canary";
export const CANARY_IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.52";
export const CANARY_PORT = 8080;
/** The path one probe asks: netexec answers it with the name of the Pod that served it. */
export const CANARY_PATH = "/hostname";

const LABELS = {
  "app.kubernetes.io/name": CANARY_NAME,
  "app.kubernetes.io/managed-by": "kubeforge",
};
const SELECTOR = { "app.kubernetes.io/name": CANARY_NAME };

/** One replica per worker, at least two: a drain of one node never takes the last one. */
export function canaryReplicas(workers: number): number {
  return Math.max(2, workers);
}

/**
 * The canary's Deployment, PodDisruptionBudget and Service in `namespace`.
 * Spread: a topology spread over hostnames (maxSkew 1, ScheduleAnyway so a single worker still
 * takes every replica) and a preferred anti-affinity; the budget allows one replica down.
 */
export function canaryObjects(namespace: string, replicas: number): KubeObject[] {
  const meta = { name: CANARY_NAME, namespace, labels: LABELS };
  const deployment: KubeObject = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta,
    spec: {
      replicas,
      selector: { matchLabels: SELECTOR },
      // The rollout itself never takes availability below replicas - 1.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
      template: {
        metadata: { labels: LABELS },
        spec: {
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 5,
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: "kubernetes.io/hostname",
              whenUnsatisfiable: "ScheduleAnyway",
              labelSelector: { matchLabels: SELECTOR },
            },
          ],
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: "kubernetes.io/hostname",
                    labelSelector: { matchLabels: SELECTOR },
                  },
                },
              ],
            },
          },
          containers: [
            {
              name: "netexec",
              image: CANARY_IMAGE,
              args: ["netexec", `--http-port=${CANARY_PORT}`],
              ports: [{ name: "http", containerPort: CANARY_PORT }],
              readinessProbe: {
                httpGet: { path: CANARY_PATH, port: CANARY_PORT },
                periodSeconds: 1,
              },
              resources: { requests: { cpu: "10m", memory: "16Mi" } },
            },
          ],
        },
      },
    },
  };
  const budget: KubeObject = {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: meta,
    spec: { maxUnavailable: 1, selector: { matchLabels: SELECTOR } },
  };
  const service: KubeObject = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta,
    spec: {
      // The API server allocates the node port (--service-node-port-range): a pinned one could
      // be taken. Cluster (the default) lets every node forward to a ready Pod on any node, so
      // the node a request enters by needs no canary Pod of its own.
      type: "NodePort",
      externalTrafficPolicy: "Cluster",
      selector: SELECTOR,
      ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }],
    },
  };
  return [deployment, budget, service];
}

/**
 * The API server's proxy to a Service's port: the path the runner reaches the canary through
 * wherever it reaches the API (k8s: docs "Manually constructing apiserver proxy URLs",
 * /api/v1/namespaces/<ns>/services/<name>:<port name>/proxy/<path>).
 */
export function serviceProxyPath(
  namespace: string,
  service: string,
  port: string,
  path: string,
): string {
  const p = path.startsWith("/") ? path : `/${path}`;
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(service)}:${encodeURIComponent(port)}/proxy${p}`;
}
