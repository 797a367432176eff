import { PROBE_NAMESPACE } from "../../src/cluster/upgrade/probes/api-targets.js";
import type { KubeClient } from "../../src/kube/types.js";
import { CANARY_NAME, canaryObjects } from "../../src/manifests/probe-canary.js";

/**
 * The canary's Service, and its Endpoints as the endpoints controller writes them for one Ready
 * Pod: the test's own server on 127.0.0.1:`port`. The Service has no selector here, so that the
 * simulated endpoints controller leaves these Endpoints alone (as Kubernetes' does for a Service
 * without one): the test's Pod is a server of its own, not a Pod of the canary's Deployment.
 */
export async function canaryServiceTo(admin: KubeClient, port: number): Promise<void> {
  const [, , service] = canaryObjects(PROBE_NAMESPACE, 2);
  const { selector: _selector, ...spec } = service!.spec as Record<string, unknown>;
  await admin.create({ ...service!, spec });
  await admin.create({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: CANARY_NAME, namespace: PROBE_NAMESPACE },
    subsets: [{ addresses: [{ ip: "127.0.0.1" }], ports: [{ name: "http", port }] }],
  });
}
