import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  commandOf,
  createTestbed,
  type CliResult,
  type TestHost,
  type Testbed,
} from "../../support/testbed.js";
import { etcdctl as etcdctlAt } from "../../support/etcdctl.js";
import { initFirstControlPlane, joinArgs } from "../../support/stacked-cluster.js";

// `kubeforge reset` of a control plane in a two-member stacked etcd cluster built for real:
// `kubeforge init` on one namespace host, `kubeforge join --control-plane` on another, each
// running Debian's etcd from the etcd.yaml it generated (through the simulated kubelet). Reset
// of the joined control plane must remove its member through the etcd API; etcdctl — etcd's own
// Go client — judges the cluster that remains.

const TOKEN = "abcdef.0123456789abcdef";
const CERTIFICATE_KEY = "7a".repeat(32);

let bed: Testbed;
let cp1: TestHost;
let cp2: TestHost;

/** etcdctl against the host's advertised client URL (not its loopback). */
const etcdctl = (host: TestHost, args: string[]) =>
  etcdctlAt(host, args, `https://${host.address}:2379`);

interface MemberList {
  members: { name: string; peerURLs: string[]; isLearner?: boolean }[];
}

const members = async (host: TestHost) =>
  (JSON.parse(await etcdctl(host, ["member", "list", "-w", "json"])) as MemberList).members;

const reset = (host: TestHost) => host.kubeforge(["reset", "--force", "--rootfs", host.rootfs]);

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "cp-2"]);
  [cp1, cp2] = bed.hosts as [TestHost, TestHost];
  const secrets = { token: TOKEN, certificateKey: CERTIFICATE_KEY };
  const init = await initFirstControlPlane(cp1, secrets);
  if (init.code !== 0) throw new Error(`init failed:\n${init.stderr}\n${await cp1.node.logs()}`);
  const join2 = await cp2.kubeforge(
    joinArgs(cp1, await bed.caCertHash(cp1), cp2, secrets, "control-plane"),
  );
  if (join2.code !== 0) {
    throw new Error(`join of cp-2 failed:\n${join2.stderr}\n${await cp2.node.logs()}`);
  }
}, 300_000);

afterAll(async () => {
  await bed?.stop();
});

describe("kubeforge reset of a control plane with a stacked etcd member", () => {
  it("starts from two started voting members", async () => {
    const list = await members(cp1);
    expect(list.map((m) => [m.name, m.peerURLs, m.isLearner ?? false]).sort()).toEqual([
      ["cp-1", [`https://${cp1.address}:2380`], false],
      ["cp-2", [`https://${cp2.address}:2380`], false],
    ]);
  });

  describe("reset of the joined control plane", () => {
    let r: CliResult;
    let etcdBefore: number[];

    beforeAll(async () => {
      // The runtime records its children's pids as it syncs; give a loaded machine time to.
      const end = Date.now() + 20_000;
      do {
        etcdBefore = (await cp2.daemonPids()).containers.filter((p) => commandOf(p) === "etcd");
        if (etcdBefore.length > 0) break;
        await new Promise((res) => setTimeout(res, 250));
      } while (Date.now() < end);
      r = await reset(cp2);
      if (r.code !== 0) console.log(r.stderr);
    }, 120_000);

    it("succeeds and says it removed the member", () => {
      expect(r.stderr).not.toMatch(/error execution phase|WARNING/);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(
        `[reset] Removed etcd member cp-2 (https://${cp2.address}:2380) from the etcd cluster`,
      );
    });

    it("leaves one healthy member, cp-1, as etcdctl sees it", async () => {
      expect((await members(cp1)).map((m) => m.name)).toEqual(["cp-1"]);
      const health = JSON.parse(
        await etcdctl(cp1, ["endpoint", "health", "--cluster", "-w", "json"]),
      ) as { endpoint: string; health: boolean }[];
      expect(health.map((e) => [e.endpoint, e.health])).toEqual([
        [`https://${cp1.address}:2379`, true],
      ]);
    });

    it("stops cp-2's etcd and empties its data directory", async () => {
      expect(etcdBefore).toHaveLength(1);
      expect((await cp2.daemonPids()).containers).toEqual([]);
      expect(commandOf(etcdBefore[0]!)).toBeUndefined();
      expect(await readdir(cp2.path("var/lib/etcd"))).toEqual([]);
    });

    it("a second reset of cp-2 succeeds and leaves the cluster as it is", async () => {
      const again = await reset(cp2);
      expect(again.code).toBe(0);
      expect(again.stderr).not.toMatch(/etcd member|WARNING/);
      expect((await members(cp1)).map((m) => m.name)).toEqual(["cp-1"]);
    });
  });

  it("reset of the last control plane keeps the only member and empties the node", async () => {
    const r = await reset(cp1);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      `[reset] The etcd member cp-1 (https://${cp1.address}:2380) is the only remaining member of the etcd cluster: not removing it`,
    );
    expect(await readdir(cp1.path("var/lib/etcd"))).toEqual([]);
    expect((await cp1.daemonPids()).containers).toEqual([]);
  }, 120_000);
});
