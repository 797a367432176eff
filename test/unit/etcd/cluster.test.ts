import { describe, expect, it } from "vitest";
import {
  ETCD_ERR_LEARNER_NOT_READY,
  ETCD_ERR_MEMBER_NOT_LEARNER,
  ETCD_ERR_PEER_URL_EXISTS,
  EtcdRequestError,
  GrpcCode,
  type EtcdApiMember,
  type EtcdClient,
} from "../../../src/etcd/client.js";
import {
  EtcdCluster,
  etcdEndpointsFromPods,
  etcdPodLister,
  initialClusterFlag,
} from "../../../src/etcd/cluster.js";
import type { KubeClient, KubeObject, ListOptions } from "../../../src/kube/types.js";

// The retry and naming policy of kubeadm's util/etcd, against a scripted etcd. The real etcd
// behaviour (learner add, promote, remove over TLS) is in test/integration/etcd/client.test.ts.

const ANNOTATION = "kubeadm.kubernetes.io/etcd.advertise-client-urls";

function pod(name: string, clientURL?: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "kube-system",
      ...(clientURL ? { annotations: { [ANNOTATION]: clientURL } } : {}),
    },
  };
}

const member = (id: string, name: string, peer: string, extra: Partial<EtcdApiMember> = {}) => ({
  id,
  name,
  peerURLs: [peer],
  clientURLs: name ? [peer.replace(":2380", ":2379")] : [],
  isLearner: false,
  ...extra,
});

const serverError = (operation: string, message: string, code: number) =>
  new EtcdRequestError(operation, "https://10.0.0.1:2379", "server", message, code, message);

/** An EtcdClient whose answers a test scripts; records the calls. */
class ScriptedEtcd {
  calls: string[] = [];
  endpoints = ["https://10.0.0.1:2379"];
  members: EtcdApiMember[] = [];
  promoteErrors: Error[] = [];
  addError: Error | undefined;
  listError: Error | undefined;
  removeError: Error | undefined;

  setEndpoints(eps: string[]) {
    this.endpoints = eps;
  }
  memberList() {
    this.calls.push("list");
    return this.listError
      ? Promise.reject(this.listError)
      : Promise.resolve(structuredClone(this.members));
  }
  memberAdd(peerURLs: string[], opts: { isLearner?: boolean }) {
    this.calls.push(`add ${peerURLs.join(",")}${opts.isLearner ? " learner" : ""}`);
    if (this.addError) return Promise.reject(this.addError);
    const added = member("99", "", peerURLs[0]!, { isLearner: opts.isLearner ?? false });
    this.members.push(added);
    return Promise.resolve({ member: added, members: structuredClone(this.members) });
  }
  memberPromote(id: string) {
    this.calls.push(`promote ${id}`);
    const next = this.promoteErrors.shift();
    if (next) return Promise.reject(next);
    for (const m of this.members) if (m.id === id) m.isLearner = false;
    return Promise.resolve(structuredClone(this.members));
  }
  memberRemove(id: string) {
    this.calls.push(`remove ${id}`);
    if (this.removeError) return Promise.reject(this.removeError);
    this.members = this.members.filter((m) => m.id !== id);
    return Promise.resolve(structuredClone(this.members));
  }
}

const clusterOver = (etcd: ScriptedEtcd, timeoutMs = 1_000) =>
  new EtcdCluster(etcd as unknown as EtcdClient, {
    apiCallTimeoutMs: timeoutMs,
    retryIntervalMs: 10,
  });

describe("etcdEndpointsFromPods", () => {
  it("returns the annotation of every etcd Pod, in list order", async () => {
    const list = () =>
      Promise.resolve([
        pod("etcd-b", "https://10.0.0.2:2379"),
        pod("etcd-a", "https://10.0.0.1:2379"),
      ]);
    expect(await etcdEndpointsFromPods(list)).toEqual([
      "https://10.0.0.2:2379",
      "https://10.0.0.1:2379",
    ]);
  });

  it("waits while a Pod lacks the annotation or no Pod is mirrored yet", async () => {
    const answers = [[], [pod("etcd-a", "https://10.0.0.1:2379"), pod("etcd-b")]];
    let n = 0;
    const list = () =>
      Promise.resolve(
        answers[n++] ?? [
          pod("etcd-a", "https://10.0.0.1:2379"),
          pod("etcd-b", "https://10.0.0.2:2379"),
        ],
      );
    expect(await etcdEndpointsFromPods(list, { intervalMs: 5, timeoutMs: 1_000 })).toEqual([
      "https://10.0.0.1:2379",
      "https://10.0.0.2:2379",
    ]);
    expect(n).toBe(3);
  });

  it("gives up after the timeout saying what it saw", async () => {
    const list = () => Promise.resolve([pod("etcd-a", "https://10.0.0.1:2379"), pod("etcd-b")]);
    await expect(etcdEndpointsFromPods(list, { intervalMs: 5, timeoutMs: 50 })).rejects.toThrow(
      /^could not retrieve the list of etcd endpoints \(last seen: 2 etcd Pod\(s\), 1 with the annotation\): timed out after 50ms/,
    );
  });

  it("lists kube-system Pods with kubeadm's etcd labels", async () => {
    const seen: unknown[] = [];
    const client = {
      list: (apiVersion: string, kind: string, opts?: ListOptions) => {
        seen.push([apiVersion, kind, opts]);
        return Promise.resolve([]);
      },
    } as unknown as KubeClient;
    await etcdPodLister(client)();
    expect(seen).toEqual([
      [
        "v1",
        "Pod",
        { namespace: "kube-system", labelSelector: "component=etcd,tier=control-plane" },
      ],
    ]);
  });
});

describe("initialClusterFlag", () => {
  it.each([
    [[{ name: "cp-1", peerURL: "https://10.0.0.1:2380" }], "cp-1=https://10.0.0.1:2380"],
    [
      [
        { name: "cp-1", peerURL: "https://10.0.0.1:2380" },
        { name: "cp-2", peerURL: "https://[fd00::2]:2380" },
      ],
      "cp-1=https://10.0.0.1:2380,cp-2=https://[fd00::2]:2380",
    ],
  ])("joins name=peerURL in order", (members, flag) => {
    expect(initialClusterFlag(members)).toBe(flag);
  });
});

describe("EtcdCluster (kubeadm util/etcd policy)", () => {
  it("sync keeps the client URLs of started voting members only", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [
      member("1", "cp-1", "https://10.0.0.1:2380"),
      member("2", "", "https://10.0.0.2:2380"),
      member("3", "cp-3", "https://10.0.0.3:2380", { isLearner: true }),
      member("4", "cp-4", "https://10.0.0.4:2380"),
    ];
    const cluster = clusterOver(etcd);
    await cluster.sync();
    expect(cluster.endpoints).toEqual(["https://10.0.0.1:2379", "https://10.0.0.4:2379"]);
  });

  it("adds a learner and names members as kubeadm does: ours by node name, unstarted ones by hex ID", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [
      member("1", "cp-1", "https://10.0.0.1:2380"),
      member("255", "", "https://10.0.0.2:2380"),
    ];
    const members = await clusterOver(etcd).addMemberAsLearner("cp-3", "https://10.0.0.3:2380");
    expect(etcd.calls).toEqual(["list", "add https://10.0.0.3:2380 learner"]);
    expect(members).toEqual([
      { name: "cp-1", peerURL: "https://10.0.0.1:2380" },
      { name: "ff", peerURL: "https://10.0.0.2:2380" },
      { name: "cp-3", peerURL: "https://10.0.0.3:2380" },
    ]);
    expect(etcd.endpoints).toEqual(["https://10.0.0.1:2379"]);
  });

  it("reuses a member whose peer URL is already there, without adding", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [
      member("1", "cp-1", "https://10.0.0.1:2380"),
      member("7", "", "https://10.0.0.3:2380", { isLearner: true }),
    ];
    const members = await clusterOver(etcd).addMemberAsLearner("cp-3", "https://10.0.0.3:2380");
    expect(etcd.calls).toEqual(["list"]);
    expect(members.at(-1)).toEqual({ name: "cp-3", peerURL: "https://10.0.0.3:2380" });
  });

  it("reads the members again when etcd says the peer URL exists (a lost answer)", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [member("1", "cp-1", "https://10.0.0.1:2380")];
    etcd.addError = serverError(
      "member add",
      ETCD_ERR_PEER_URL_EXISTS,
      GrpcCode.FailedPrecondition,
    );
    await clusterOver(etcd).addMemberAsLearner("cp-3", "https://10.0.0.3:2380");
    expect(etcd.calls).toEqual(["list", "add https://10.0.0.3:2380 learner", "list"]);
  });

  it("refuses a peer URL that is not a URL before touching etcd", async () => {
    const etcd = new ScriptedEtcd();
    await expect(clusterOver(etcd).addMemberAsLearner("cp-3", "10.0.0.3:2380:x")).rejects.toThrow(
      'the etcd peer URL "10.0.0.3:2380:x" is not a URL',
    );
    expect(etcd.calls).toEqual([]);
  });

  it("retries promotion while the learner is not in sync, then stops once it is a voter", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [
      member("1", "cp-1", "https://10.0.0.1:2380"),
      member("7", "cp-3", "https://10.0.0.3:2380", { isLearner: true }),
    ];
    const notReady = () =>
      serverError("member promote", ETCD_ERR_LEARNER_NOT_READY, GrpcCode.FailedPrecondition);
    etcd.promoteErrors = [notReady(), notReady()];
    await clusterOver(etcd).memberPromote("7");
    expect(etcd.calls.filter((c) => c.startsWith("promote"))).toEqual([
      "promote 7",
      "promote 7",
      "promote 7",
    ]);
    expect(etcd.members[1]!.isLearner).toBe(false);
  });

  it("takes 'can only promote a learner member' as promoted (an earlier answer was lost)", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [member("7", "cp-3", "https://10.0.0.3:2380", { isLearner: true })];
    etcd.promoteErrors = [
      serverError("member promote", ETCD_ERR_MEMBER_NOT_LEARNER, GrpcCode.FailedPrecondition),
    ];
    await clusterOver(etcd).memberPromote("7");
    expect(etcd.calls.filter((c) => c.startsWith("promote"))).toEqual(["promote 7"]);
  });

  it("ends promotion when the member list itself gives up (kubeadm returns that error)", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [member("7", "cp-3", "https://10.0.0.3:2380", { isLearner: true })];
    let lists = 0;
    const list = etcd.memberList.bind(etcd);
    etcd.memberList = () => (++lists === 1 ? list() : Promise.reject(new Error("list broke")));
    const error = await clusterOver(etcd, 50)
      .memberPromote("7")
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe(
      "timed out after 50ms waiting for the etcd member list: list broke",
    );
    expect(etcd.calls.filter((c) => c.startsWith("promote"))).toEqual([]);
  });

  it("does not promote a member that is already a voter", async () => {
    const etcd = new ScriptedEtcd();
    etcd.members = [member("7", "cp-3", "https://10.0.0.3:2380")];
    await clusterOver(etcd).memberPromote("7");
    expect(etcd.calls).toEqual(["list"]);
  });

  it("counts removing a member that is gone as done", async () => {
    const etcd = new ScriptedEtcd();
    etcd.removeError = serverError(
      "member remove",
      "etcdserver: member not found",
      GrpcCode.NotFound,
    );
    expect(await clusterOver(etcd).removeMember("7")).toEqual([]);
    expect(etcd.calls).toEqual(["remove 7"]);
  });

  it("retries a failing call until the timeout, and keeps the last error", async () => {
    const etcd = new ScriptedEtcd();
    etcd.listError = new EtcdRequestError(
      "member list",
      "https://10.0.0.1:2379",
      "connection",
      "connection refused",
    );
    await expect(clusterOver(etcd, 60).listMembers()).rejects.toThrow(
      "timed out after 60ms waiting for the etcd member list: etcd member list at https://10.0.0.1:2379 failed: connection refused",
    );
    expect(etcd.calls.length).toBeGreaterThan(2);
  });

  it("does not retry a TLS failure: a wrong CA stays wrong", async () => {
    const etcd = new ScriptedEtcd();
    etcd.listError = new EtcdRequestError(
      "member list",
      "https://10.0.0.1:2379",
      "tls",
      "the server certificate did not verify against the etcd CA (unable to verify the first certificate)",
    );
    await expect(clusterOver(etcd, 5_000).listMembers()).rejects.toBe(etcd.listError);
    expect(etcd.calls).toEqual(["list"]);
  });
});
