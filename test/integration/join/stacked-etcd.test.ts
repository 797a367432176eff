import { readFile } from "node:fs/promises";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestbed,
  type CliResult,
  type TestHost,
  type Testbed,
} from "../../support/testbed.js";
import { etcdctl } from "../../support/etcdctl.js";
import { initFirstControlPlane, joinArgs } from "../../support/stacked-cluster.js";

// Issue 4's proof: a three-member stacked etcd cluster formed for real. `kubeforge init` on one
// namespace host, then `kubeforge join --control-plane --certificate-key` on two more, each host
// running Debian's etcd from the etcd.yaml it generated (through the simulated kubelet), with
// certificates it generated from the CAs it downloaded; then a worker joins through TLS
// bootstrap. Checked from outside with etcdctl, openssl and kubectl.

const TOKEN = "abcdef.0123456789abcdef";
const CERTIFICATE_KEY = "5e".repeat(32);

let bed: Testbed;
let cps: TestHost[];
let worker: TestHost;
const results = new Map<string, CliResult>();

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "cp-2", "cp-3", "w-1"]);
  cps = bed.hosts.slice(0, 3);
  worker = bed.hosts[3]!;
  const [first] = cps as [TestHost];
  const secrets = { token: TOKEN, certificateKey: CERTIFICATE_KEY };
  const init = await initFirstControlPlane(first, secrets);
  results.set(first.name, init);
  if (init.code !== 0) throw new Error(`init failed:\n${init.stderr}\n${await first.node.logs()}`);
  const hash = await bed.caCertHash(first);
  // Control planes one at a time, as kubeadm requires.
  for (const h of cps.slice(1)) {
    const r = await h.kubeforge(joinArgs(first, hash, h, secrets, "control-plane"));
    results.set(h.name, r);
    if (r.code !== 0)
      throw new Error(`join of ${h.name} failed:\n${r.stderr}\n${await h.node.logs()}`);
  }
  const w = await worker.kubeforge(joinArgs(first, hash, worker, secrets, "worker"));
  results.set(worker.name, w);
  if (w.code !== 0) throw new Error(`join of ${worker.name} failed:\n${w.stderr}`);
}, 600_000);

afterAll(async () => {
  await bed?.stop();
});

describe("a three-member stacked etcd cluster made by init and two control-plane joins", () => {
  it("every command succeeded", () => {
    for (const [name, r] of results)
      expect([name, r.code, r.stderr.match(/error execution phase.*/)?.[0]]).toEqual([
        name,
        0,
        undefined,
      ]);
    expect(results.get("cp-2")!.stdout).toContain("a new control plane instance was created");
  });

  it("etcdctl lists three started voting members, one per control plane", async () => {
    const list = JSON.parse(await etcdctl(cps[0]!, ["member", "list", "-w", "json"])) as {
      members: { name: string; peerURLs: string[]; isLearner?: boolean }[];
    };
    expect(list.members).toHaveLength(3);
    expect(list.members.map((m) => m.name).sort()).toEqual(["cp-1", "cp-2", "cp-3"]);
    for (const m of list.members) {
      expect(m.isLearner ?? false).toBe(false);
      const host = cps.find((h) => h.name === m.name)!;
      expect(m.peerURLs).toEqual([`https://${host.address}:2380`]);
    }
  });

  it("endpoint health --cluster is healthy", async () => {
    const health = JSON.parse(
      await etcdctl(cps[0]!, ["endpoint", "health", "--cluster", "-w", "json"]),
    ) as { endpoint: string; health: boolean }[];
    expect(health).toHaveLength(3);
    for (const e of health) expect([e.endpoint, e.health]).toEqual([e.endpoint, true]);
  });

  it("each joined member runs from the etcd.yaml its node generated, joining the existing cluster", async () => {
    for (const h of cps.slice(1)) {
      const pod = load(await readFile(h.path("etc/kubernetes/manifests/etcd.yaml"), "utf8")) as {
        spec: { containers: { command: string[] }[] };
      };
      const command = pod.spec.containers[0]!.command;
      expect(command).toContain("--initial-cluster-state=existing");
      const initial = command.find((a) => a.startsWith("--initial-cluster="))!;
      expect(initial).toContain(`${h.name}=https://${h.address}:2380`);
      expect(initial).toContain(`cp-1=https://${cps[0]!.address}:2380`);
    }
  });

  it("the joined control planes' kubelets use their local API servers, all of which serve one cluster", async () => {
    for (const h of cps.slice(1)) {
      const kubeconfig = load(await readFile(h.path("etc/kubernetes/kubelet.conf"), "utf8")) as {
        clusters: { cluster: { server: string } }[];
      };
      expect([h.name, kubeconfig.clusters[0]!.cluster.server]).toEqual([
        h.name,
        `https://${h.address}:6443`,
      ]);
    }
    for (const h of cps) {
      const nodes = await bed.kubectl<{ items: { metadata: { name: string } }[] }>(cps[0]!, [
        "--server",
        `https://${h.address}:6443`,
        "get",
        "nodes",
      ]);
      expect([h.name, nodes.items.map((n) => n.metadata.name).sort()]).toEqual([
        h.name,
        ["cp-1", "cp-2", "cp-3", "w-1"],
      ]);
    }
    // kube-apiserver's own layout in etcd: /registry/minions/<node>.
    const keys = await etcdctl(cps[2]!, ["get", "/registry/minions/", "--prefix", "--keys-only"]);
    expect(keys.split("\n").filter(Boolean).sort()).toEqual(
      ["cp-1", "cp-2", "cp-3", "w-1"].map((n) => `/registry/minions/${n}`),
    );
  });

  it("the control planes carry the control-plane label; the worker is a Node with a CA-signed kubelet identity", async () => {
    const nodes = await bed.kubectl<{
      items: { metadata: { name: string; labels: Record<string, string> } }[];
    }>(cps[0]!, ["get", "nodes"]);
    const byName = new Map(nodes.items.map((n) => [n.metadata.name, n.metadata.labels]));
    for (const h of cps)
      expect(byName.get(h.name)?.["node-role.kubernetes.io/control-plane"]).toBe("");
    expect(byName.has("w-1")).toBe(true);
    const pem = worker.path("var/lib/kubelet/pki/kubelet-client-current.pem");
    const verify = await worker.exec([
      "openssl",
      "verify",
      "-CAfile",
      cps[0]!.path("etc/kubernetes/pki/ca.crt"),
      pem,
    ]);
    expect(verify.stdout).toContain(": OK");
    const subject = await worker.exec(["openssl", "x509", "-noout", "-subject", "-in", pem]);
    expect(subject.stdout).toMatch(/CN\s*=\s*system:node:w-1/);
  });
});
