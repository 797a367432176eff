import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canConnect } from "../../../src/remote/route.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { stopTunnelProcess } from "../../../src/cluster/tunnel.js";
import { alive } from "../../support/processes.js";
import { clusterFile, diagnostics, nodeReadiness, runner, type Runner } from "../up/support.js";

// `kubeforge up` when the runner reaches only the nodes' SSH port: every node's firewall rejects
// the runner (the testbed bridge's gateway) on 6443 and 2379. Init, the worker's join
// (discovery, TLS bootstrap), the labels, the pod network and the readiness wait all go through
// the nodes' SSH connections (remote/route.ts). The admin.conf `up` writes for the runner points
// at kubeforge's runner-side SSH tunnel (cluster/tunnel.ts), which real kubectl uses after `up`
// has returned, verifying the API server's certificate; `down` stops the tunnel.

let bed: SshTestbed;
let r: Runner;
let clusterPath: string;
let kubeconfig: string;

async function rejectRunner(h: SshTestHost, port: number): Promise<void> {
  const argv = ["iptables", "-A", "INPUT", "-s", bed.gateway, "-p", "tcp", "--dport", String(port)];
  const res = await h.exec([...argv, "-j", "REJECT"]);
  if (res.code !== 0) throw new Error(`iptables on ${h.name}: ${res.stderr}`);
}

interface NodeList {
  items: {
    metadata: { name: string };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1"], { ssh: true });
  for (const h of bed.hosts) {
    await rejectRunner(h, 6443);
    await rejectRunner(h, 2379);
  }
  r = await runner();
  clusterPath = await r.writeClusterFile(
    clusterFile({ name: "ci", controlPlanes: [bed.host("cp-1")], workers: [bed.host("w-1")] }),
  );
  kubeconfig = join(r.dir, "admin.conf");
}, 120_000);

afterAll(async () => {
  if (kubeconfig) await stopTunnelProcess(`${kubeconfig}.tunnel.json`);
  await bed?.stop();
}, 120_000);

describe("kubeforge up when the runner reaches only SSH", () => {
  it("builds the cluster through the nodes' SSH connections", async () => {
    const cp = bed.host("cp-1");
    const result = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    // The API server's port stayed closed to the runner the whole time.
    expect(await canConnect(cp.address, 6443, 2_000)).toBe(false);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stdout.trim()).toBe(kubeconfig);
    // Seen from the control plane itself: both nodes joined and Ready, CoreDNS available.
    const kubectl = async <T>(args: string[]): Promise<T> => {
      const res = await cp.exec([
        "kubectl",
        "--kubeconfig",
        cp.path("etc/kubernetes/admin.conf"),
        "--request-timeout",
        "20s",
        ...args,
        "-o",
        "json",
      ]);
      if (res.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${res.stderr}`);
      return JSON.parse(res.stdout) as T;
    };
    const nodes = await kubectl<NodeList>(["get", "nodes"]);
    expect(
      Object.fromEntries(
        nodes.items.map((n) => [
          n.metadata.name,
          n.status?.conditions?.find((c) => c.type === "Ready")?.status,
        ]),
      ),
    ).toEqual({ "cp-1": "True", "w-1": "True" });
    const coredns = await kubectl<{ status: { conditions: { type: string; status: string }[] } }>([
      "-n",
      "kube-system",
      "get",
      "deployment",
      "coredns",
    ]);
    expect(coredns.status.conditions.find((c) => c.type === "Available")?.status).toBe("True");
  }, 420_000);

  it("hands the runner an admin.conf that reaches the API server through the SSH tunnel", async () => {
    const admin = await readFile(kubeconfig, "utf8");
    expect(admin).toMatch(/server: https:\/\/127\.0\.0\.1:\d+/);
    expect(admin).toContain("tls-server-name: kubernetes");
    expect(await nodeReadiness(r, kubeconfig)).toEqual({ "cp-1": "True", "w-1": "True" });
    // The certificate is verified: a name the API server certificate lacks is refused.
    const wrongName = admin.replace("tls-server-name: kubernetes", "tls-server-name: example.com");
    const wrong = await r.writeClusterFile(wrongName, "wrong-name.conf");
    await expect(nodeReadiness(r, wrong)).rejects.toThrow(/certificate|x509/);
  }, 120_000);

  it("down stops the tunnel and resets both hosts", async () => {
    const state = JSON.parse(await readFile(`${kubeconfig}.tunnel.json`, "utf8")) as {
      pid: number;
    };
    const result = await r.kubeforge(["down", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stderr).toContain("the SSH tunnel to the API servers was stopped");
    const end = Date.now() + 10_000;
    while (alive(state.pid) && Date.now() < end) await new Promise((res) => setTimeout(res, 100));
    expect(alive(state.pid)).toBe(false);
  }, 300_000);
});
