import { kubeletClientUsesRBAC } from "../../config/versions.js";
import { createOrUpdateAll } from "../../kube/idempotency.js";
import {
  GET_NODES_CLUSTER_ROLE,
  KUBELET_API_ADMIN_BINDING,
  NODE_AUTOAPPROVE_BOOTSTRAP,
  NODE_AUTOAPPROVE_CERTIFICATE_ROTATION,
  NODE_KUBELET_BOOTSTRAP,
  bootstrapTokenRBAC,
  clusterInfoRBAC,
} from "../../manifests/rbac.js";
import type { Phase } from "../../workflow/phase.js";
import { apiCallOptions } from "../init/clients.js";
import type { UpgradeData } from "./data.js";
import { upgradeInitView } from "./init-view.js";

// The bootstrap-token phase of `upgrade apply` (cmd/phases/upgrade/apply/bootstraptoken.go):
// no token is created — the RBAC that lets bootstrap tokens join nodes, approves their CSRs and
// rotates node certificates is re-applied with the target kubeadm's rules, and the cluster-info
// RBAC with it. The same objects init creates (manifests/rbac.ts).

/** The line kubeadm prints once each rule is in place, by ClusterRoleBinding name. */
const CONFIGURED: Record<string, string> = {
  [GET_NODES_CLUSTER_ROLE]: "allow Node Bootstrap tokens to get nodes",
  [NODE_KUBELET_BOOTSTRAP]:
    "allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials",
  [NODE_AUTOAPPROVE_BOOTSTRAP]:
    "allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token",
  [NODE_AUTOAPPROVE_CERTIFICATE_ROTATION]:
    "allow certificate rotation for all node client certificates in the cluster",
  [KUBELET_API_ADMIN_BINDING]:
    "allow the API server kubelet client certificate to access the kubelet API",
};

export const upgradeBootstrapTokenPhase: Phase<UpgradeData> = {
  name: "bootstrap-token",
  short: "Configures bootstrap token and cluster-info RBAC rules",
  run: async (data, ctx) => {
    ctx.log.info(
      "[upgrade/bootstrap-token] Configuring bootstrap token and cluster-info RBAC rules",
    );
    const client = await data.client();
    const opts = apiCallOptions(upgradeInitView(data));
    const kubeletAPIAdminBinding = kubeletClientUsesRBAC(
      data.cfg.cluster.kubernetesVersion,
      data.release,
    );
    const rules = bootstrapTokenRBAC({ kubeletAPIAdminBinding });
    await createOrUpdateAll(client, [...rules, ...clusterInfoRBAC()], opts);
    for (const obj of rules) {
      const done = obj.kind === "ClusterRoleBinding" ? CONFIGURED[obj.metadata.name] : undefined;
      if (done) ctx.log.info(`[bootstrap-token] Configured RBAC rules to ${done}`);
    }
  },
};
