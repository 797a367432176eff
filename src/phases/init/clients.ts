import { posix } from "node:path";
import { parseGoDuration } from "../../config/duration.js";
import { ADMIN_KUBECONFIG, KUBERNETES_DIR, SUPER_ADMIN_KUBECONFIG } from "../../config/paths.js";
import { localAPIEndpointURL } from "../../kubeconfig/endpoints.js";
import { clusterAdminsBinding } from "../../manifests/rbac.js";
import { isAlreadyExists, isForbidden } from "../../kube/errors.js";
import type { ApiCallOptions } from "../../kube/idempotency.js";
import { poll } from "../../kube/poll.js";
import type { KubeClient } from "../../kube/types.js";
import type { InitData } from "./data.js";

// The clients init phases use, as kubeadm's initData.Client() and WaitControlPlaneClient()
// (cmd/init.go) build them: one admin client per run, made usable by the kubeadm:cluster-admins
// ClusterRoleBinding (phases/kubeconfig EnsureAdminClusterRoleBinding). A joining control plane
// runs the same phases with kubeadm join's data.Client() (cmd/join.go): admin.conf as it is —
// the binding exists since init, and the node has no super-admin.conf.

export const ADMIN_KUBECONFIG_PATH = posix.join(KUBERNETES_DIR, ADMIN_KUBECONFIG);
const SUPER_ADMIN_KUBECONFIG_PATH = posix.join(KUBERNETES_DIR, SUPER_ADMIN_KUBECONFIG);

/** Every API call of a phase is retried within timeouts.kubernetesAPICall. */
export function apiCallOptions(data: InitData): ApiCallOptions {
  return {
    timeoutMs: parseGoDuration(data.cfg.init.timeouts.kubernetesAPICall),
    ...(data.objectsExist ? { updateFirst: true } : {}),
  };
}

/**
 * kubeadm's EnsureAdminClusterRoleBindingImpl: admin.conf's user is in the kubeadm:cluster-admins
 * group, which has no rights until the binding exists. admin.conf tries to create it (it exists
 * on a re-run, or the user is a super-user); a 403 means the binding is missing, and
 * super-admin.conf (system:masters) creates it. Then admin.conf is the client.
 */
async function ensureAdminClusterRoleBinding(data: InitData): Promise<KubeClient> {
  const admin = await data.api.clientFor(ADMIN_KUBECONFIG_PATH);
  const binding = clusterAdminsBinding();
  const opts = apiCallOptions(data);
  const viaAdmin = await poll(
    async () => {
      try {
        await admin.create(binding);
        return "created" as const;
      } catch (e) {
        if (isAlreadyExists(e)) return "exists" as const;
        if (isForbidden(e)) return "forbidden" as const;
        throw e; // retried until the timeout: the API server may still be starting
      }
    },
    {
      ...opts,
      what: `the ClusterRoleBinding ${binding.metadata.name} through ${ADMIN_KUBECONFIG_PATH}`,
    },
  );
  if (viaAdmin !== "forbidden") return admin;

  if (!(await data.host.exists(SUPER_ADMIN_KUBECONFIG_PATH))) {
    throw new Error(
      `the ClusterRoleBinding for the ${binding.metadata.name} Group is missing but there is no ${SUPER_ADMIN_KUBECONFIG} to create it`,
    );
  }
  const superAdmin = await data.api.clientFor(SUPER_ADMIN_KUBECONFIG_PATH);
  await poll(
    async () => {
      try {
        await superAdmin.create(binding);
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
      }
      return true;
    },
    {
      ...opts,
      what: `the ClusterRoleBinding ${binding.metadata.name} through ${SUPER_ADMIN_KUBECONFIG}`,
    },
  );
  return admin;
}

const adminClients = new WeakMap<InitData, Promise<KubeClient>>();

/** kubeadm's initData.Client() (joinData.Client() for a join's view): once per run, on first use. */
export function adminClient(data: InitData): Promise<KubeClient> {
  let client = adminClients.get(data);
  if (!client) {
    const asIs = data.ensureAdminBinding === false;
    const make = asIs
      ? data.api.clientFor(ADMIN_KUBECONFIG_PATH)
      : ensureAdminClusterRoleBinding(data);
    client = make.catch((e: unknown) => {
      adminClients.delete(data);
      const what = asIs
        ? `couldn't create a Kubernetes client from ${ADMIN_KUBECONFIG_PATH}`
        : `could not bootstrap the admin user in file ${ADMIN_KUBECONFIG}`;
      throw new Error(`${what}: ${(e as Error).message}`, { cause: e });
    });
    adminClients.set(data, client);
  }
  return client;
}

/**
 * kubeadm's WaitControlPlaneClient: admin.conf pointed at this node's API server rather than the
 * control-plane endpoint, so the wait checks the component this node runs.
 */
export function waitControlPlaneClient(data: InitData): Promise<KubeClient> {
  return data.api.clientFor(ADMIN_KUBECONFIG_PATH, {
    server: localAPIEndpointURL(data.cfg.init.localAPIEndpoint),
  });
}
