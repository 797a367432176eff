import { createOrMutate, createOrUpdate, getIfExists } from "../../kube/idempotency.js";
import { refOf, type KubeClient } from "../../kube/types.js";
import { bootstrapTokenSecret } from "../../manifests/bootstrap-token.js";
import {
  CLUSTER_INFO_KUBECONFIG_KEY,
  clusterInfoConfigMapFromAdminConf,
  clusterInfoProblem,
  clusterInfoUpToDate,
} from "../../manifests/cluster-info.js";
import { kubeletClientUsesRBAC } from "../../config/versions.js";
import { bootstrapTokenRBAC, clusterInfoRBAC } from "../../manifests/rbac.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { ADMIN_KUBECONFIG_PATH, adminClient, apiCallOptions } from "./clients.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/bootstraptoken.go: the bootstrap tokens, the RBAC that lets their
// holders post CSRs and get them approved, and kube-public/cluster-info, which joining nodes
// read anonymously and verify with the token's JWS signature.

/**
 * cluster-info, created when missing. One that describes this cluster is brought up to date
 * (only its kubeconfig key: the BootstrapSigner owns the jws-kubeconfig-* keys); one that holds
 * another CA or server is reported, not overwritten: joining nodes would trust it.
 */
async function ensureClusterInfo(data: InitData, client: KubeClient): Promise<void> {
  const desired = clusterInfoConfigMapFromAdminConf(
    await data.host.readFile(ADMIN_KUBECONFIG_PATH),
    ADMIN_KUBECONFIG_PATH,
    data.cfg.cluster.kubernetesVersion,
  );
  const opts = apiCallOptions(data);
  const existing = await getIfExists(client, refOf(desired), opts);
  if (existing) {
    const problem = clusterInfoProblem(existing, desired);
    if (problem) throw new Error(problem);
    if (clusterInfoUpToDate(existing, desired)) return;
  }
  const kubeconfig = (desired.data as Record<string, string>)[CLUSTER_INFO_KUBECONFIG_KEY]!;
  await createOrMutate(
    client,
    desired,
    (cm) => {
      cm.data = {
        ...(cm.data as Record<string, string>),
        [CLUSTER_INFO_KUBECONFIG_KEY]: kubeconfig,
      };
    },
    opts,
  );
}

async function runBootstrapToken(data: InitData, ctx: PhaseContext): Promise<void> {
  const client = await adminClient(data);
  const opts = apiCallOptions(data);
  const tokens = data.cfg.init.bootstrapTokens.map((t) => t.token ?? "");
  if (!data.skipTokenPrint) {
    if (tokens.length === 1) ctx.log.info(`[bootstrap-token] Using token: ${tokens[0]}`);
    else if (tokens.length > 1)
      ctx.log.info(`[bootstrap-token] Using tokens: [${tokens.join(" ")}]`);
  }
  ctx.log.info(
    "[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles",
  );
  // UpdateOrCreateTokens(failIfExists=false): an existing token Secret is replaced, which also
  // renews its expiration.
  for (const [i, token] of data.cfg.init.bootstrapTokens.entries()) {
    await createOrUpdate(
      client,
      bootstrapTokenSecret(token, data.now(), `bootstrapTokens[${i}]`),
      opts,
    );
  }
  const kubeletAPIAdminBinding = kubeletClientUsesRBAC(
    data.cfg.cluster.kubernetesVersion,
    data.release,
  );
  for (const obj of bootstrapTokenRBAC({ kubeletAPIAdminBinding }))
    await createOrUpdate(client, obj, opts);
  ctx.log.info(
    `[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace`,
  );
  await ensureClusterInfo(data, client);
  for (const obj of clusterInfoRBAC()) await createOrUpdate(client, obj, opts);
}

export const bootstrapTokenPhase: Phase<InitData> = {
  name: "bootstrap-token",
  short: "Generates bootstrap tokens used to join a node to a cluster",
  run: runBootstrapToken,
};
