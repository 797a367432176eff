import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopTunnelProcess } from "../../../src/cluster/tunnel.js";
import { alive } from "../../support/processes.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { SUDO_USER } from "../../support/testbed-ssh.js";
import {
  clusterFile,
  diagnostics,
  eventually,
  nodeReadiness,
  runner,
  type Runner,
} from "./support.js";

// `kubeforge up` with three control planes, a worker and NO controlPlaneEndpoint: kubeforge
// provides the stable endpoint itself — a real HAProxy on every node (node-local load balancing,
// as kubespray and k0s do) that the worker's kubelet and kube-proxy use, and a runner-side tunnel
// with failover that the exported admin.conf names. With one control plane stopped, the worker
// stays Ready and kubectl through the exported admin.conf still works. cp-2 is reached as a
// non-root user with password-less sudo.

let bed: SshTestbed;
let r: Runner;
let kubeconfig: string;
let clusterPath: string;

interface ConfigMap {
  data: Record<string, string>;
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "cp-2", "cp-3", "w-1"], { ssh: true });
  r = await runner();
  kubeconfig = join(r.dir, "admin.conf");
}, 120_000);

afterAll(async () => {
  if (kubeconfig) await stopTunnelProcess(`${kubeconfig}.tunnel.json`);
  await bed?.stop();
}, 120_000);

describe("kubeforge up: 3 control planes + 1 worker, no endpoint of the user's", () => {
  it("builds the cluster behind node-local proxies and a runner-side tunnel", async () => {
    clusterPath = await r.writeClusterFile(
      clusterFile({
        name: "ha-local",
        controlPlanes: ["cp-1", "cp-2", "cp-3"].map((n) => bed.host(n)),
        workers: [bed.host("w-1")],
        // One control plane through a sudo user: its proxy, static pods and etcd go through sudo.
        userFor: (h) => (h.name === "cp-2" ? SUDO_USER : "root"),
      }),
    );
    const result = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));

    // The exported admin.conf names the tunnel and verifies the API server as "kubernetes".
    const admin = await readFile(kubeconfig, "utf8");
    expect(admin).toMatch(/server: https:\/\/127\.0\.0\.1:\d+/);
    expect(admin).toContain("tls-server-name: kubernetes");
    expect(await nodeReadiness(r, kubeconfig)).toEqual({
      "cp-1": "True",
      "cp-2": "True",
      "cp-3": "True",
      "w-1": "True",
    });

    // Every node runs the proxy; the worker's kubelet and kube-proxy use it.
    for (const h of bed.hosts) {
      const listening = await h.sshRun("ss -Hltn sport = :7443");
      expect(listening.stdout, h.name).toContain("127.0.0.1:7443");
    }
    // kubeadm's controlPlaneEndpoint is the node-local proxy: everything kubeadm derives from it
    // (kubelet.conf, admin.conf on every control plane, kube-proxy's kubeconfig) goes through it.
    const kubelet = await bed.host("w-1").sshRun("cat /etc/kubernetes/kubelet.conf");
    expect(kubelet.stdout).toContain("server: https://127.0.0.1:7443");
    const cpAdmin = await bed.host("cp-3").sshRun("cat /etc/kubernetes/admin.conf");
    expect(cpAdmin.stdout).toContain("server: https://127.0.0.1:7443");
    const proxy = await r.kubectl<ConfigMap>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kube-proxy",
    ]);
    expect(proxy.data["kubeconfig.conf"]).toContain("server: https://127.0.0.1:7443");
    const cm = await r.kubectl<ConfigMap>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kubeadm-config",
    ]);
    expect(cm.data.ClusterConfiguration).toContain("controlPlaneEndpoint: 127.0.0.1:7443");
  }, 600_000);

  it("a second up changes nothing and keeps the cluster reachable", async () => {
    const result = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stderr).not.toMatch(/kubeforge-apiserver-proxy (started|restarted)/);
    expect(await nodeReadiness(r, kubeconfig)).toMatchObject({ "w-1": "True" });
  }, 300_000);

  it("keeps the worker Ready and kubectl working with the first control plane stopped", async () => {
    await bed.host("cp-1").node.stop({ keepFiles: true });
    const readiness = await eventually(
      "cp-1 to be seen as not Ready",
      async () => {
        const nodes = await nodeReadiness(r, kubeconfig);
        if (nodes["cp-1"] === "True") throw new Error(JSON.stringify(nodes));
        return nodes;
      },
      90_000,
    );
    expect(readiness).toMatchObject({ "cp-1": "Unknown", "cp-2": "True", "w-1": "True" });
  }, 180_000);

  it("down stops the runner-side tunnel", async () => {
    const state = JSON.parse(await readFile(`${kubeconfig}.tunnel.json`, "utf8")) as {
      pid: number;
    };
    expect(alive(state.pid)).toBe(true);
    const result = await r.kubeforge(
      ["down", "-f", clusterPath, "--kubeconfig", kubeconfig],
      240_000,
    );
    // cp-1 is stopped with its files kept: down still resets every host.
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stderr).toContain("the SSH tunnel to the API servers was stopped");
    // The proxies went with the cluster.
    for (const h of bed.hosts) {
      const unit = await h.sshRun("test -e /etc/systemd/system/kubeforge-apiserver-proxy.service");
      expect(unit.code, h.name).not.toBe(0);
      expect((await h.sshRun("ss -Hltn sport = :7443")).stdout.trim(), h.name).toBe("");
      // Not removed one by one, but every member's data is gone.
      expect((await h.sshRun("ls -A /var/lib/etcd")).stdout.trim(), h.name).toBe("");
    }
    await eventually("the tunnel process to end", () =>
      alive(state.pid) ? Promise.reject(new Error("still running")) : Promise.resolve(),
    );
  }, 300_000);
});
