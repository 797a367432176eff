import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { initEtcdPod } from "../../../../src/manifests/etcd.js";
import { renderStaticPod } from "../../../../src/manifests/static-pod.js";
import {
  ETCD_MANIFEST,
  locateEtcdData,
  parseEtcdManifest,
  removeEtcdMemberPhase,
} from "../../../../src/phases/reset/remove-etcd-member.js";
import type { LocalHost } from "../../../../src/remote/local.js";
import { tempRootHost } from "../../../support/init-fixtures.js";
import { initConfig, release135 } from "../../manifests/fixtures.js";
import { recordingEtcd, resetData, runResetPhase, writeNodeFiles } from "./fixtures.js";

// kubeadm's TestGetEtcdDataDir (cmd/phases/reset/removeetcdmember_test.go) pods, as known answers.
const KUBEADM_ETCD_POD = `apiVersion: v1
kind: Pod
metadata:
spec:
  volumes:
  - hostPath:
      path: /path/to/etcd
      type: DirectoryOrCreate
    name: etcd-data
  - hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs`;
const KUBEADM_ETCD_POD_WITHOUT_DATA_VOLUME = `apiVersion: v1
kind: Pod
metadata:
spec:
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs`;

/** The etcd.yaml `kubeforge init` writes for cp-1 at 10.0.0.4. */
const generatedManifest = () => renderStaticPod(initEtcdPod(initConfig(), release135()));

describe("locateEtcdData (kubeadm's getEtcdDataDir)", () => {
  it.each([
    ["the etcd-data volume of etcd.yaml", undefined, KUBEADM_ETCD_POD, "/path/to/etcd"],
    ["the default when etcd.yaml is gone", undefined, undefined, "/var/lib/etcd"],
    [
      "the cluster's dataDir over etcd.yaml",
      { etcd: { local: { dataDir: "/data/etcd" } } },
      KUBEADM_ETCD_POD,
      "/data/etcd",
    ],
    [
      "the manifest when the cluster has no local etcd section",
      {},
      KUBEADM_ETCD_POD,
      "/path/to/etcd",
    ],
  ])("%s", (_name, cluster, manifest, dataDir) => {
    expect(
      locateEtcdData(cluster, manifest === undefined ? undefined : { text: manifest }),
    ).toMatchObject({
      kind: "local",
      dataDir,
    });
  });

  it.each([
    ["an etcd.yaml without the etcd-data volume", undefined, KUBEADM_ETCD_POD_WITHOUT_DATA_VOLUME],
    ["an etcd.yaml that is not a Pod", undefined, "invalid pod"],
    [
      "a cluster configured with external etcd",
      { etcd: { external: { endpoints: ["https://10.0.0.9:2379"] } } },
      undefined,
    ],
  ])("external etcd: %s", (_name, cluster, manifest) => {
    expect(
      locateEtcdData(cluster, manifest === undefined ? undefined : { text: manifest }).kind,
    ).toBe("external");
  });
});

describe("parseEtcdManifest", () => {
  it("finds this node's member in the etcd.yaml init writes", () => {
    expect(parseEtcdManifest(generatedManifest(), ETCD_MANIFEST)).toEqual({
      dataDir: "/var/lib/etcd",
      member: {
        name: "cp-1",
        peerURL: "https://10.0.0.4:2380",
        clientURL: "https://10.0.0.4:2379",
      },
    });
  });

  it("takes the first URL of a list and the last occurrence of a flag, as etcd's flag parsing", () => {
    const pod = `apiVersion: v1
kind: Pod
metadata: {name: etcd}
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --initial-advertise-peer-urls=https://10.0.0.1:2380
    - --initial-advertise-peer-urls=https://10.0.0.5:2380,https://[fd00::5]:2380
    - --advertise-client-urls=https://10.0.0.5:2379
    - --name=node-5
  volumes:
  - {name: etcd-data, hostPath: {path: /mnt/etcd}}
`;
    expect(parseEtcdManifest(pod, ETCD_MANIFEST)).toEqual({
      dataDir: "/mnt/etcd",
      member: {
        name: "node-5",
        peerURL: "https://10.0.0.5:2380",
        clientURL: "https://10.0.0.5:2379",
      },
    });
  });
});

describe("the remove-etcd-member phase", () => {
  let host: LocalHost;
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ host, root, cleanup } = await tempRootHost());
    await writeNodeFiles(root, {
      [ETCD_MANIFEST]: generatedManifest(),
      "/var/lib/etcd/member/snap/db": "etcd data",
      "/var/lib/etcd/member/wal/0.wal": "wal",
      "/etc/kubernetes/pki/etcd/ca.crt": "CA PEM",
      "/etc/kubernetes/pki/etcd/healthcheck-client.crt": "CLIENT CERT PEM",
      "/etc/kubernetes/pki/etcd/healthcheck-client.key": "CLIENT KEY PEM",
    });
  });
  afterEach(() => cleanup());

  it("removes this node's member with the etcd client credentials, then empties the data directory", async () => {
    const etcd = recordingEtcd("removed");
    const data = resetData(host, { etcd: etcd.access });
    const log = await runResetPhase(removeEtcdMemberPhase, data);
    expect(etcd.calls).toHaveLength(1);
    const [, member, tls, client] = etcd.calls[0]!;
    expect(member).toEqual({
      name: "cp-1",
      peerURL: "https://10.0.0.4:2380",
      clientURL: "https://10.0.0.4:2379",
    });
    expect(tls).toEqual({ ca: "CA PEM", cert: "CLIENT CERT PEM", key: "CLIENT KEY PEM" });
    expect(client).toBeUndefined();
    expect(await readdir(join(root, "var/lib/etcd"))).toEqual([]);
    expect(data.state.etcdDataDir).toBe("/var/lib/etcd");
    expect(log.lines).toEqual([
      "[reset] Removed etcd member cp-1 (https://10.0.0.4:2380) from the etcd cluster",
      "[reset] Deleted contents of the etcd data directory: /var/lib/etcd",
    ]);
    expect(log.warnings).toEqual([]);
  });

  it.each([
    ["only-member", "is the only remaining member of the etcd cluster: not removing it"],
    ["not-a-member", "was already removed from the etcd cluster"],
  ] as const)("reports %s and still empties the data directory", async (outcome, text) => {
    const log = await runResetPhase(
      removeEtcdMemberPhase,
      resetData(host, { etcd: recordingEtcd(outcome).access }),
    );
    expect(log.lines[0]).toContain(text);
    expect(await readdir(join(root, "var/lib/etcd"))).toEqual([]);
  });

  it("warns when the member cannot be removed, and empties the data directory anyway (kubeadm)", async () => {
    const etcd = recordingEtcd(
      new Error("etcd member list failed at every endpoint: connection refused"),
    );
    const log = await runResetPhase(removeEtcdMemberPhase, resetData(host, { etcd: etcd.access }));
    expect(log.warnings).toEqual([
      "[reset] Failed to remove etcd member: etcd member list failed at every endpoint: connection refused, please manually remove this etcd member using etcdctl",
    ]);
    expect(await readdir(join(root, "var/lib/etcd"))).toEqual([]);
  });

  it("when the whole cluster goes (kubeforge down), empties the data directory without removing the member", async () => {
    const etcd = recordingEtcd("removed");
    const data = resetData(host, { etcd: etcd.access, removeEtcdMember: false });
    const log = await runResetPhase(removeEtcdMemberPhase, data);
    expect(etcd.calls).toEqual([]);
    expect(await readdir(join(root, "var/lib/etcd"))).toEqual([]);
    expect(data.state.etcdDataDir).toBe("/var/lib/etcd");
    expect(log.lines).toEqual([
      "[reset] The whole cluster is being torn down: not removing this node's etcd member",
      "[reset] Deleted contents of the etcd data directory: /var/lib/etcd",
    ]);
  });

  it("never touches anything for an external etcd", async () => {
    const etcd = recordingEtcd("removed");
    const log = await runResetPhase(
      removeEtcdMemberPhase,
      resetData(host, {
        etcd: etcd.access,
        clusterConfiguration: { etcd: { external: { endpoints: ["https://10.0.0.9:2379"] } } },
      }),
    );
    expect(etcd.calls).toEqual([]);
    expect(await readdir(join(root, "var/lib/etcd/member"))).toEqual(["snap", "wal"]);
    expect(log.lines[0]).toMatch(/^\[reset\] No etcd config found\. Assuming external etcd/);
  });

  it("on a node without etcd.yaml (a worker) removes no member but empties a leftover data directory", async () => {
    await host.remove(ETCD_MANIFEST);
    const etcd = recordingEtcd("removed");
    await runResetPhase(removeEtcdMemberPhase, resetData(host, { etcd: etcd.access }));
    expect(etcd.calls).toEqual([]);
    expect(await readdir(join(root, "var/lib/etcd"))).toEqual([]);
  });

  it("in a dry run, says what it would do and changes nothing", async () => {
    const etcd = recordingEtcd("removed");
    const reported: string[] = [];
    const data = resetData(host, {
      etcd: etcd.access,
      dryRun: true,
      report: (l) => reported.push(l),
    });
    const log = await runResetPhase(removeEtcdMemberPhase, data);
    expect(etcd.calls).toEqual([]);
    expect(log.lines).toEqual([
      "[reset] Would remove the etcd member on this node from the etcd cluster",
      "[reset] Would delete contents of the etcd data directory: /var/lib/etcd",
    ]);
    expect(reported).toEqual(["[dryrun] Would remove /var/lib/etcd/member and everything in it"]);
    expect(await readdir(join(root, "var/lib/etcd/member"))).toEqual(["snap", "wal"]);
    // Seen through the dry run the directory is empty now, so cleanup-node's second look at it
    // (state.etcdDataDir) finds nothing more to report.
    expect(data.state.etcdDataDir).toBe("/var/lib/etcd");
    expect(await data.host.readDir("/var/lib/etcd")).toEqual([]);
  });

  it("is a no-op on a clean host", async () => {
    await cleanup();
    ({ host, root, cleanup } = await tempRootHost());
    await mkdir(join(root, "var/lib/etcd"), { recursive: true });
    const etcd = recordingEtcd("removed");
    const log = await runResetPhase(removeEtcdMemberPhase, resetData(host, { etcd: etcd.access }));
    expect([etcd.calls, log.lines, log.warnings]).toEqual([[], [], []]);
  });
});
