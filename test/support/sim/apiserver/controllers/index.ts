// SIMULATION (test double). The kube-controller-manager controllers kubeadm relies on, reacting
// to store events (no polling): bootstrapsigner, tokencleaner, csrapproving, csrsigning,
// garbagecollector, serviceaccount and root-ca-cert-publisher; and, while this controller
// manager holds the kube-system/kube-controller-manager Lease (cluster-controllers.ts), the ones
// a whole cluster needs: nodeipam, nodelifecycle, deployment, replicaset, daemonset, endpoint,
// podgc, job and disruption.
// k8s: cmd/kube-controller-manager/app/controllermanager.go (IsControllerEnabled: "name",
// "-name", "*"; bootstrapsigner and tokencleaner are off unless named),
// cmd/kube-controller-manager/names/controller_names.go (current names and their aliases).
import { readFileSync } from "node:fs";
import { buildAuthorizer } from "../authz.js";
import type { ObjectStore } from "../store.js";
import { startBootstrapSigner } from "./bootstrap-signer.js";
import { startClusterControllers } from "./cluster-controllers.js";
import type { ControllerContext, StopFn } from "./context.js";
import { startCSRApprover } from "./csr-approver.js";
import { startCSRSigner } from "./csr-signer.js";
import { startGarbageCollector } from "./garbage-collector.js";
import { startRootCAPublisher, startServiceAccountController } from "./namespace-defaults.js";
import { startTokenCleaner } from "./token-cleaner.js";

export interface FakeControllersOptions {
  clusterSigningCertFile: string;
  clusterSigningKeyFile: string;
  /** --controllers; default ["*", "bootstrapsigner", "tokencleaner"] as kubeadm sets it. */
  controllers?: string[];
  /** --cluster-signing-duration in milliseconds; default one year (8760h). */
  clusterSigningDuration?: number;
  log?: (line: string) => void;
  /** --root-ca-file: publish kube-root-ca.crt in every namespace. */
  rootCAFile?: string;
  /** The authorizer's modes for the approver's SubjectAccessReviews; default ["Node", "RBAC"]. */
  authorizationModes?: string[];
  /** --allocate-node-cidrs (default false): node-ipam-controller assigns spec.podCIDRs. */
  allocateNodeCIDRs?: boolean;
  /** --cluster-cidr: one CIDR, or an IPv4 and an IPv6 one separated by a comma. */
  clusterCIDR?: string;
  /** --node-cidr-mask-size (single stack), --node-cidr-mask-size-ipv4/-ipv6; defaults 24 and 64. */
  nodeCIDRMaskSize?: number;
  nodeCIDRMaskSizeIPv4?: number;
  nodeCIDRMaskSizeIPv6?: number;
  /** --service-cluster-ip-range: kept out of the node CIDRs when it overlaps the cluster CIDR. */
  serviceClusterIPRange?: string;
  /** --node-monitor-grace-period in ms; default 50 s (40 s before v1.32). */
  nodeMonitorGracePeriod?: number;
  /** --node-startup-grace-period in ms; default 60 s. */
  nodeStartupGracePeriod?: number;
  /** --node-monitor-period in ms; default 5 s. */
  nodeMonitorPeriod?: number;
  /** --leader-elect (default true): the cluster-wide controllers run only while holding the lease. */
  leaderElect?: boolean;
  /** --leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period
   * in ms (defaults 15 s, 10 s, 2 s); --leader-elect-resource-namespace/-name. */
  leaderElection?: {
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
    namespace?: string;
    name?: string;
  };
  /** The candidate's identity in the lease; default "<hostname>_<uuid>". */
  leaderElectionIdentity?: string;
  /**
   * Simulated time, as the simulated kubelet's --time-scale: every duration above (grace periods,
   * monitor period, leader election, Deployments' progressDeadlineSeconds) is multiplied by it,
   * so that 0.05 makes the 50 s node grace period 2.5 s. Default 1.
   */
  timeScale?: number;
}

// Canonical names (v1.28+) → the simulated controller; old names are aliases.
const ALIASES: Record<string, string> = {
  "bootstrap-signer-controller": "bootstrapsigner",
  "token-cleaner-controller": "tokencleaner",
  "certificatesigningrequest-approving-controller": "csrapproving",
  "certificatesigningrequest-signing-controller": "csrsigning",
  "garbage-collector-controller": "garbagecollector",
  "serviceaccount-controller": "serviceaccount",
  "root-ca-certificate-publisher-controller": "root-ca-cert-publisher",
  "node-ipam-controller": "nodeipam",
  "node-lifecycle-controller": "nodelifecycle",
  "deployment-controller": "deployment",
  "replicaset-controller": "replicaset",
  "endpoints-controller": "endpoint",
  "pod-garbage-collector-controller": "podgc",
  "daemonset-controller": "daemonset",
  "job-controller": "job",
  "disruption-controller": "disruption",
};
const DISABLED_BY_DEFAULT = new Set(["bootstrapsigner", "tokencleaner"]);

function canonical(name: string): string {
  return ALIASES[name] ?? name;
}

export function isControllerEnabled(name: string, controllers: string[]): boolean {
  let star = false;
  for (const raw of controllers) {
    const neg = raw.startsWith("-");
    const c = canonical(neg ? raw.slice(1) : raw);
    if (c === name) return !neg;
    if (raw === "*") star = true;
  }
  return star && !DISABLED_BY_DEFAULT.has(name);
}

export const ONE_YEAR_MS = 8760 * 3600_000;

export function startFakeControllers(
  store: ObjectStore,
  opts: FakeControllersOptions,
): { stop(): void } {
  const log = opts.log ?? (() => {});
  const controllers = opts.controllers ?? ["*", "bootstrapsigner", "tokencleaner"];
  const ctx: ControllerContext = {
    store,
    log,
    authorize: buildAuthorizer(store, opts.authorizationModes ?? ["Node", "RBAC"]),
  };
  const stops: StopFn[] = [];
  const on = (n: string) => isControllerEnabled(n, controllers);
  try {
    if (on("garbagecollector")) stops.push(startGarbageCollector(ctx));
    if (on("serviceaccount")) stops.push(startServiceAccountController(ctx));
    if (on("root-ca-cert-publisher") && opts.rootCAFile) {
      stops.push(startRootCAPublisher(ctx, readFileSync(opts.rootCAFile, "utf8")));
    }
    if (on("bootstrapsigner")) stops.push(startBootstrapSigner(ctx));
    if (on("tokencleaner")) stops.push(startTokenCleaner(ctx));
    if (on("csrapproving")) stops.push(startCSRApprover(ctx));
    if (on("csrsigning")) {
      stops.push(
        startCSRSigner(ctx, {
          certFile: opts.clusterSigningCertFile,
          keyFile: opts.clusterSigningKeyFile,
          durationMs: opts.clusterSigningDuration ?? ONE_YEAR_MS,
        }),
      );
    }
    stops.push(startClusterControllers(ctx, opts, on));
  } catch (e) {
    for (const s of stops) s();
    throw e;
  }
  log(`simulated kube-controller-manager started (${controllers.join(",")})`);
  return {
    stop() {
      for (const s of stops.splice(0)) s();
    },
  };
}
