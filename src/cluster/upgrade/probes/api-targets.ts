import { isAlreadyExists, isNotFound } from "../../../kube/errors.js";
import type { KubeClient, KubeObject } from "../../../kube/types.js";
import type { ProbeTarget } from "./prober.js";

// What one API probe does (kubeadm-upgrade.md §5.5), over an authenticated KubeClient: a control
// plane's own address is asked `/readyz`; the stable endpoint (admin.conf's server, what users
// of the cluster reach) gets a read and a write — kubeadm-config read, then a Lease renewed in a
// namespace kubeforge owns, created before the first sample and removed after the last.

/** A sample is one request: a reset is what it saw, not something to try again. */
export const ONE_ATTEMPT = { singleAttempt: true } as const;

/** The namespace of the probes' objects: kubeforge's own, nothing else lives there. */
export const PROBE_NAMESPACE = "kubeforge-probes";
export const PROBE_LEASE = "kubeforge-upgrade-probe";

const MANAGED_BY = { "app.kubernetes.io/managed-by": "kubeforge" };

const leaseRef = {
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  name: PROBE_LEASE,
  namespace: PROBE_NAMESPACE,
};

const namespaceRef = { apiVersion: "v1", kind: "Namespace", name: PROBE_NAMESPACE };

/** A MicroTime as the API writes it (RFC 3339, six fractional digits). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, "000Z");
}

/** A control plane's own kube-apiserver: `GET /readyz` must answer 200. */
export function readyzTarget(name: string, url: string, client: KubeClient): ProbeTarget {
  return {
    name,
    kind: "control-plane",
    url,
    checks: "GET /readyz",
    check: async () => {
      const res = await client.getRaw("/readyz", ONE_ATTEMPT);
      if (res.status !== 200) {
        throw new Error(`/readyz answered ${res.status}: ${res.body.trim().split("\n").pop()}`);
      }
    },
  };
}

/** admin.conf's server: kubeadm-config read, the probe Lease renewed. */
export function stableTarget(url: string, client: KubeClient, now = Date.now): ProbeTarget {
  return {
    name: "stable",
    kind: "stable",
    url,
    checks: `GET kube-system/kubeadm-config, renew Lease ${PROBE_NAMESPACE}/${PROBE_LEASE}`,
    check: async () => {
      await client.get(
        { apiVersion: "v1", kind: "ConfigMap", name: "kubeadm-config", namespace: "kube-system" },
        ONE_ATTEMPT,
      );
      await client.patch(leaseRef, { spec: { renewTime: microTime(now()) } }, "merge");
    },
  };
}

/** The namespace and the Lease the write renews (both kept when they exist). */
export async function createProbeObjects(client: KubeClient, now = Date.now): Promise<void> {
  const objects: KubeObject[] = [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: PROBE_NAMESPACE, labels: MANAGED_BY },
    },
    {
      apiVersion: leaseRef.apiVersion,
      kind: leaseRef.kind,
      metadata: { name: PROBE_LEASE, namespace: PROBE_NAMESPACE, labels: MANAGED_BY },
      spec: {
        holderIdentity: "kubeforge-upgrade",
        leaseDurationSeconds: 15,
        renewTime: microTime(now()),
      },
    },
  ];
  for (const obj of objects) {
    await client.create(obj).catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  }
}

/** The probe namespace deleted, with the Lease in it; one already gone is fine. */
export async function removeProbeObjects(client: KubeClient): Promise<void> {
  await client.delete(namespaceRef).catch((e: unknown) => {
    if (!isNotFound(e)) throw e;
  });
}
