import { pause } from "../remote/interruption.js";
import { formatGoDuration } from "../config/duration.js";
import { poll } from "../kube/poll.js";
import type { Route } from "../remote/route.js";
import type { KubeClient, KubeObject } from "../kube/types.js";
import { ETCD_CLIENT_URLS_ANNOTATION, type EtcdMember } from "../manifests/etcd.js";
import {
  ETCD_ERR_MEMBER_NOT_FOUND,
  ETCD_ERR_MEMBER_NOT_LEARNER,
  ETCD_ERR_PEER_URL_EXISTS,
  EtcdClient,
  formatMemberID,
  isEtcdServerError,
  isEtcdTLSFailure,
  type EtcdApiMember,
  type EtcdStatus,
  type EtcdTLSCredentials,
} from "./client.js";

// kubeadm's operations on a stacked etcd cluster, over EtcdClient.
// kubeadm: cmd/kubeadm/app/util/etcd/etcd.go (NewFromCluster, Sync, ListMembers, GetMemberID,
// AddMemberAsLearner, MemberPromote, RemoveMember, CheckClusterHealth, WaitForClusterAvailable)
// and cmd/kubeadm/app/phases/etcd/local.go (CheckLocalEtcdClusterStatus,
// CreateStackedEtcdStaticPodManifestFile, RemoveStackedEtcdMemberFromCluster), as of the v1.35
// branch with the 2024–2026 fixes cherry-picked there: member add lists members first and reuses
// an existing peer URL (k/k#127491), promote re-checks learner state on every attempt (#130782)
// and treats "not a learner" as done (#139842), a learner's client URL is not added to the
// client's endpoints (#137251, release-1.35 #137257).
// Every call retries as kubeadm's wait.PollUntilContextTimeout does (every 500 ms for up to
// timeouts.etcdAPICall); one deliberate difference: a TLS failure at every endpoint (wrong CA,
// refused client certificate) is reported at once, since no retry can fix it.

/** kubeadm: constants.EtcdAPICallRetryInterval. */
export const ETCD_API_CALL_RETRY_INTERVAL_MS = 500;
/** kubeadm: v1beta4 timeouts.etcdAPICall default (constants.EtcdAPICallTimeout). */
export const ETCD_API_CALL_TIMEOUT_MS = 120_000;
/** kubeadm: constants.KubernetesAPICallRetryInterval. */
export const KUBERNETES_API_CALL_RETRY_INTERVAL_MS = 500;
/** kubeadm: v1beta4 timeouts.kubernetesAPICall default. */
export const KUBERNETES_API_CALL_TIMEOUT_MS = 60_000;
/** kubeadm: phases/etcd/local.go etcdHealthyCheckRetries and etcdHealthyCheckInterval. */
export const ETCD_HEALTHY_CHECK_RETRIES = 8;
export const ETCD_HEALTHY_CHECK_INTERVAL_MS = 5_000;
/** The label selector of kubeadm's etcd static Pods (component=etcd, tier=control-plane). */
export const ETCD_POD_LABEL_SELECTOR = "component=etcd,tier=control-plane";

/** Lists the etcd Pods of the cluster (kube-system, ETCD_POD_LABEL_SELECTOR). */
export type EtcdPodLister = () => Promise<KubeObject[]>;

/** The lister kubeadm uses: Pods in kube-system labelled component=etcd,tier=control-plane. */
export function etcdPodLister(client: KubeClient): EtcdPodLister {
  return () =>
    client.list("v1", "Pod", { namespace: "kube-system", labelSelector: ETCD_POD_LABEL_SELECTOR });
}

export interface EtcdEndpointDiscoveryOptions {
  /** Default 500 ms. */
  intervalMs?: number;
  /** Default 1 min (timeouts.kubernetesAPICall). */
  timeoutMs?: number;
}

/**
 * The client URLs of the etcd Pods, from their `kubeadm.kubernetes.io/etcd.advertise-client-urls`
 * annotation, in list order. Waits until there is at least one and every etcd Pod has one: a
 * static Pod may not be mirrored yet (kubeadm: getRawEtcdEndpointsFromPodAnnotation).
 */
export async function etcdEndpointsFromPods(
  listPods: EtcdPodLister,
  opts: EtcdEndpointDiscoveryOptions = {},
): Promise<string[]> {
  let seen = "";
  try {
    return await poll(
      async () => {
        const pods = await listPods();
        const endpoints = pods.flatMap((p) => {
          const url = p.metadata.annotations?.[ETCD_CLIENT_URLS_ANNOTATION];
          return url === undefined ? [] : [url];
        });
        seen = `${pods.length} etcd Pod(s), ${endpoints.length} with the annotation`;
        return endpoints.length > 0 && endpoints.length === pods.length ? endpoints : undefined;
      },
      {
        intervalMs: opts.intervalMs ?? KUBERNETES_API_CALL_RETRY_INTERVAL_MS,
        timeoutMs: opts.timeoutMs ?? KUBERNETES_API_CALL_TIMEOUT_MS,
        what: `every etcd Pod (${ETCD_POD_LABEL_SELECTOR}) in kube-system to carry the ${ETCD_CLIENT_URLS_ANNOTATION} annotation`,
      },
    );
  } catch (e) {
    const last = seen ? ` (last seen: ${seen})` : "";
    throw new Error(
      `could not retrieve the list of etcd endpoints${last}: ${(e as Error).message}`,
      { cause: e },
    );
  }
}

/** Thrown inside a retry loop to end it with `error`. */
class StopRetrying extends Error {
  constructor(readonly error: unknown) {
    super("stop retrying", { cause: error });
  }
}

export interface EtcdClusterOptions {
  /** How long each kubeadm-level call retries. Default 2 min (timeouts.etcdAPICall). */
  apiCallTimeoutMs?: number;
  /** Default 500 ms. */
  retryIntervalMs?: number;
}

export interface EtcdClusterFromPodsOptions extends EtcdClusterOptions {
  /** Deadline of one etcd request. Default 2 s. */
  requestTimeoutMs?: number;
  discovery?: EtcdEndpointDiscoveryOptions;
  /** How this process reaches the endpoints (the node's view); default directly. */
  route?: Route;
}

/** kubeadm's etcdutil.Client. */
export class EtcdCluster {
  private readonly apiCallTimeoutMs: number;
  private readonly retryIntervalMs: number;

  constructor(
    readonly client: EtcdClient,
    opts: EtcdClusterOptions = {},
  ) {
    this.apiCallTimeoutMs = opts.apiCallTimeoutMs ?? ETCD_API_CALL_TIMEOUT_MS;
    this.retryIntervalMs = opts.retryIntervalMs ?? ETCD_API_CALL_RETRY_INTERVAL_MS;
  }

  /**
   * kubeadm's NewFromCluster: endpoints from the etcd Pods' annotation, then synced with the
   * member list. `tls` is etcd/ca.crt with etcd/healthcheck-client.{crt,key}, as kubeadm uses.
   */
  static async fromPods(
    listPods: EtcdPodLister,
    tls: EtcdTLSCredentials,
    opts: EtcdClusterFromPodsOptions = {},
  ): Promise<EtcdCluster> {
    const endpoints = await etcdEndpointsFromPods(listPods, opts.discovery);
    const client = new EtcdClient({
      endpoints,
      tls,
      ...(opts.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: opts.requestTimeoutMs }),
      ...(opts.route ? { route: opts.route } : {}),
    });
    const cluster = new EtcdCluster(client, opts);
    await cluster.sync();
    return cluster;
  }

  get endpoints(): string[] {
    return this.client.endpoints;
  }

  /** kubeadm's retry loop around one etcd operation; `what` completes "waiting for ...". */
  private async retry<T>(what: string, attempt: () => Promise<T | undefined>): Promise<T> {
    try {
      return await poll(attempt, {
        intervalMs: this.retryIntervalMs,
        timeoutMs: this.apiCallTimeoutMs,
        what,
        retryIf: (e) => !(e instanceof StopRetrying) && !isEtcdTLSFailure(e),
      });
    } catch (e) {
      throw e instanceof StopRetrying ? e.error : e;
    }
  }

  /**
   * Replaces the endpoints with the client URLs of every started voting member, as clientv3's
   * Sync does (members without a name have not started; learners serve no client traffic).
   */
  async sync(): Promise<void> {
    const members = await this.retry("the etcd member list (endpoint sync)", () =>
      this.client.memberList(),
    );
    const endpoints = members
      .filter((m) => m.name !== "" && !m.isLearner)
      .flatMap((m) => m.clientURLs);
    if (endpoints.length === 0) {
      throw new Error("etcd reported no started voting member with a client URL");
    }
    this.client.setEndpoints(endpoints);
  }

  private listRaw(): Promise<EtcdApiMember[]> {
    return this.retry("the etcd member list", () => this.client.memberList());
  }

  /** kubeadm's ListMembers: name and first peer URL of every member. */
  async listMembers(): Promise<EtcdMember[]> {
    return (await this.listRaw()).map((m) => ({ name: m.name, peerURL: m.peerURLs[0] ?? "" }));
  }

  /** kubeadm's GetMemberID: the member whose first peer URL is `peerURL`, if any. */
  async getMemberID(peerURL: string): Promise<string | undefined> {
    return (await this.listRaw()).find((m) => m.peerURLs[0] === peerURL)?.id;
  }

  /**
   * kubeadm's AddMemberAsLearner. Idempotent: a member with this peer URL already there (from an
   * earlier, interrupted join) is reused rather than added again. Returns every member for the
   * new member's --initial-cluster, in etcd's order: the one with `peerURL` under `name`, a member
   * that has not started yet under its hex ID (kubeadm's naming for unnamed members).
   */
  async addMemberAsLearner(name: string, peerURL: string): Promise<EtcdMember[]> {
    // Parsed first so that a bad URL adds nothing.
    try {
      new URL(peerURL);
    } catch (e) {
      throw new Error(`the etcd peer URL "${peerURL}" is not a URL`, { cause: e });
    }
    const members = await this.retry(`etcd to add the learner ${peerURL}`, async () => {
      const existing = await this.client.memberList();
      if (existing.some((m) => m.peerURLs[0] === peerURL)) return existing;
      try {
        return (await this.client.memberAdd([peerURL], { isLearner: true })).members;
      } catch (e) {
        // Added meanwhile by someone else (or by our own request that timed out).
        if (isEtcdServerError(e, ETCD_ERR_PEER_URL_EXISTS)) return this.client.memberList();
        throw e;
      }
    });
    // kubeadm: the learner's client URL is not added to the endpoints (#137251).
    return members.map((m) =>
      m.peerURLs[0] === peerURL
        ? { name, peerURL }
        : { name: m.name || formatMemberID(m.id), peerURL: m.peerURLs[0] ?? "" },
    );
  }

  private async isLearner(id: string): Promise<boolean> {
    return (await this.listRaw()).some((m) => m.id === id && m.isLearner);
  }

  /**
   * kubeadm's MemberPromote: returns at once if the member is not a learner; otherwise retries
   * promotion (a learner is promotable only once in sync with the leader) until it is a voter.
   */
  async memberPromote(learnerID: string): Promise<void> {
    if (!(await this.isLearner(learnerID))) return;
    await this.retry(`etcd to promote the learner ${formatMemberID(learnerID)}`, async () => {
      let learner: boolean;
      try {
        learner = await this.isLearner(learnerID);
      } catch (e) {
        // The member list already retried for the whole timeout: kubeadm gives up here too.
        throw new StopRetrying(e);
      }
      if (!learner) return true;
      try {
        await this.client.memberPromote(learnerID);
        return true;
      } catch (e) {
        // Promoted by an earlier attempt whose answer was lost (#139842).
        if (isEtcdServerError(e, ETCD_ERR_MEMBER_NOT_LEARNER)) return true;
        throw e;
      }
    });
  }

  /** kubeadm's RemoveMember; a member already gone counts as removed. Returns the members left. */
  async removeMember(id: string): Promise<EtcdMember[]> {
    const remaining = await this.retry(
      `etcd to remove the member ${formatMemberID(id)}`,
      async () => {
        try {
          return await this.client.memberRemove(id);
        } catch (e) {
          if (isEtcdServerError(e, ETCD_ERR_MEMBER_NOT_FOUND)) return [];
          throw e;
        }
      },
    );
    return remaining.map((m) => ({ name: m.name, peerURL: m.peerURLs[0] ?? "" }));
  }

  /** kubeadm's getClusterStatus: the status of every endpoint, each retried on its own. */
  async clusterStatus(): Promise<Map<string, EtcdStatus>> {
    const statuses = new Map<string, EtcdStatus>();
    for (const endpoint of this.client.endpoints) {
      statuses.set(
        endpoint,
        await this.retry(`the status of etcd at ${endpoint}`, () => this.client.status(endpoint)),
      );
    }
    return statuses;
  }

  /** kubeadm's CheckClusterHealth as CheckLocalEtcdClusterStatus words its failure. */
  async checkClusterHealth(): Promise<void> {
    try {
      await this.clusterStatus();
    } catch (e) {
      throw new Error(`etcd cluster is not healthy: ${(e as Error).message}`, { cause: e });
    }
  }

  /**
   * kubeadm's WaitForClusterAvailable: up to `retries` rounds of status from every endpoint,
   * `intervalMs` apart, until one round succeeds.
   */
  async waitForClusterAvailable(retries: number, intervalMs: number): Promise<void> {
    let last: unknown;
    for (let i = 0; i < retries; i++) {
      if (i > 0) await pause(intervalMs);
      try {
        await this.clusterStatus();
        return;
      } catch (e) {
        last = e;
      }
    }
    const why = last instanceof Error ? `: ${last.message}` : "";
    throw new Error(
      `timeout waiting for etcd cluster to be available after ${retries} attempts ${formatGoDuration(intervalMs)} apart${why}`,
      last === undefined ? undefined : { cause: last },
    );
  }
}

/** The value of etcd's --initial-cluster: "name=peerURL" of every member, in order. */
export function initialClusterFlag(members: readonly EtcdMember[]): string {
  return members.map((m) => `${m.name}=${m.peerURL}`).join(",");
}

export interface JoinStackedMemberOptions {
  /** This node's name (the member's name). */
  nodeName: string;
  /** This node's peer URL, `https://<advertiseAddress>:2380`. */
  peerURL: string;
  /**
   * Writes this node's etcd.yaml for these members (--initial-cluster, and
   * --initial-cluster-state=existing). Runs after the member is added, before it is promoted.
   */
  writeManifest: (members: EtcdMember[]) => Promise<void>;
  /** Runs after the manifest is written, before promotion (e.g. wait for the etcd Pod). */
  beforePromote?: () => Promise<void>;
  /** Default 8 and 5 s (kubeadm's 40 s). */
  healthyCheckRetries?: number;
  healthyCheckIntervalMs?: number;
  /** Progress lines as kubeadm prints them ("[etcd] ..."). */
  log?: (line: string) => void;
}

/**
 * kubeadm's CreateStackedEtcdStaticPodManifestFile for a real run: add this node as a learner,
 * write its etcd.yaml, promote it, wait until every endpoint answers.
 */
export async function joinStackedEtcdMember(
  cluster: EtcdCluster,
  opts: JoinStackedMemberOptions,
): Promise<EtcdMember[]> {
  const log = opts.log ?? (() => {});
  const members = await cluster.addMemberAsLearner(opts.nodeName, opts.peerURL);
  log("[etcd] Announced new etcd member joining to the existing etcd cluster");
  log('[etcd] Creating static Pod manifest for "etcd"');
  await opts.writeManifest(members);
  await opts.beforePromote?.();
  const learnerID = await cluster.getMemberID(opts.peerURL);
  if (learnerID === undefined) {
    throw new Error(`etcd has no member with the peer URL ${opts.peerURL} to promote`);
  }
  await cluster.memberPromote(learnerID);
  const retries = opts.healthyCheckRetries ?? ETCD_HEALTHY_CHECK_RETRIES;
  const interval = opts.healthyCheckIntervalMs ?? ETCD_HEALTHY_CHECK_INTERVAL_MS;
  log(
    `[etcd] Waiting for the new etcd member to join the cluster. This can take up to ${formatGoDuration(retries * interval)}`,
  );
  await cluster.waitForClusterAvailable(retries, interval);
  return members;
}

export interface RemoveStackedMemberOptions {
  /** This node's peer URL. */
  peerURL: string;
  /** This node's client URL, `https://<advertiseAddress>:2379`. */
  clientURL: string;
}

/**
 * kubeadm's RemoveStackedEtcdMemberFromCluster (reset): removes this node's member, unless it is
 * the last one. Returns false when there was nothing to remove.
 */
export async function removeStackedEtcdMember(
  cluster: EtcdCluster,
  opts: RemoveStackedMemberOptions,
): Promise<boolean> {
  const members = await cluster.listMembers();
  if (members.length === 1 && cluster.endpoints.includes(opts.clientURL)) return false;
  const id = await cluster.getMemberID(opts.peerURL);
  if (id === undefined) return false;
  await cluster.removeMember(id);
  return true;
}
