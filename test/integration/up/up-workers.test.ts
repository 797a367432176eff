import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { SUDO_USER } from "../../support/testbed-ssh.js";
import {
  clusterFile,
  diagnostics,
  nodeReadiness,
  runner,
  secretLines,
  treeDigest,
  type Runner,
} from "./support.js";

// `kubeforge up` over real SSH (OpenSSH sshd in each testbed host's namespaces) against the
// simulated control plane: one control plane and two workers — w-2 logged in as a non-root user
// with password-less sudo, as on most cloud VMs — then `up` again (nothing changes), then
// `down` (every host clean).

let bed: SshTestbed;
let r: Runner;
let clusterPath: string;
let kubeconfig: string;
let upOutput = "";

/** What kubeforge keeps on every host: node files, CNI configuration, its own state. */
function hostDigests(): Promise<string[]> {
  return Promise.all(
    bed.hosts.flatMap((h) =>
      ["etc/kubernetes", "etc/cni", "var/lib/kubeforge"].map((d) => treeDigest(h.path(d))),
    ),
  );
}

interface SecretList {
  items: { type: string; data: Record<string, string> }[];
}

async function bootstrapTokens() {
  const all = await r.kubectl<SecretList>(kubeconfig, ["-n", "kube-system", "get", "secrets"]);
  return all.items.filter((s) => s.type === "bootstrap.kubernetes.io/token");
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1", "w-2"], { ssh: true });
  r = await runner();
  clusterPath = await r.writeClusterFile(
    clusterFile({
      name: "ci",
      controlPlanes: [bed.host("cp-1")],
      workers: [bed.host("w-1"), bed.host("w-2")],
      userFor: (h) => (h.name === "w-2" ? SUDO_USER : "root"),
    }),
  );
  kubeconfig = join(r.dir, "admin.conf");
}, 120_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("kubeforge up: 1 control plane + 2 workers over SSH", () => {
  it("builds the cluster and exports an admin.conf that real kubectl uses", async () => {
    const result = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    upOutput = result.stdout + result.stderr;
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stdout.trim()).toBe(kubeconfig);
    expect((await stat(kubeconfig)).mode & 0o777).toBe(0o600);
    expect(await nodeReadiness(r, kubeconfig)).toEqual({
      "cp-1": "True",
      "w-1": "True",
      "w-2": "True",
    });
    const coredns = await r.kubectl<{ status: { conditions: { type: string; status: string }[] } }>(
      kubeconfig,
      ["-n", "kube-system", "get", "deployment", "coredns"],
    );
    expect(coredns.status.conditions.find((c) => c.type === "Available")?.status).toBe("True");
    // Each host's files landed in its own rootfs through SSH, with kubeadm's modes, root's
    // also on w-2, where they went through sudo.
    for (const name of ["w-1", "w-2"]) {
      const h = bed.host(name);
      const kubeletConf = await stat(h.path("etc/kubernetes/kubelet.conf"));
      expect([kubeletConf.mode & 0o777, kubeletConf.uid], name).toEqual([0o600, 0]);
      const cni = JSON.parse(
        await readFile(h.path("etc/cni/net.d/10-kubeforge-bridge.conflist"), "utf8"),
      ) as { plugins: { type: string }[] };
      expect(cni.plugins[0]!.type).toBe("bridge");
    }
  }, 420_000);

  it("prints no private key line, token secret or certificate key", async () => {
    expect(upOutput).not.toBe("");
    for (const line of await secretLines(bed)) expect(upOutput).not.toContain(line);
    const secrets = await bootstrapTokens();
    expect(secrets.length).toBeGreaterThan(0);
    for (const s of secrets) {
      const secret = Buffer.from(s.data["token-secret"] ?? "", "base64").toString();
      expect(secret).toMatch(/^[a-z0-9]{16}$/);
      expect(upOutput).not.toContain(secret);
    }
  });

  it("changes nothing when run again on the finished cluster", async () => {
    const before = await hostDigests();
    const tokens = await bootstrapTokens();
    const again = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    if (again.code !== 0) throw new Error(await diagnostics(bed, again));
    for (const name of ["cp-1", "w-1", "w-2"]) expect(again.stderr).toContain(`${name}: `);
    expect(again.stderr).toMatch(/cp-1: control-plane, .*already part of the cluster/);
    expect(await hostDigests()).toEqual(before);
    expect((await bootstrapTokens()).length).toBe(tokens.length);
  }, 300_000);

  it("--skip-phases wait skips the readiness wait; up phase kubeconfig writes admin.conf again", async () => {
    const before = await hostDigests();
    const skipped = await r.kubeforge([
      "up",
      "-f",
      clusterPath,
      "--kubeconfig",
      kubeconfig,
      "--skip-phases",
      "wait",
    ]);
    if (skipped.code !== 0) throw new Error(await diagnostics(bed, skipped));
    expect(skipped.stderr).not.toContain("[wait]");
    expect(skipped.stdout.trim()).toBe(kubeconfig);
    // Only admin.conf again, to another place: no host changes, a config real kubectl uses.
    const again = join(r.dir, "again.conf");
    const phase = await r.kubeforge([
      "up",
      "phase",
      "kubeconfig",
      "-f",
      clusterPath,
      "--kubeconfig",
      again,
    ]);
    if (phase.code !== 0) throw new Error(await diagnostics(bed, phase));
    expect(phase.stdout.trim()).toBe(again);
    expect(phase.stderr).toContain(`admin.conf written to ${again}`);
    expect(phase.stderr).not.toContain("[wait]");
    expect(phase.stderr).not.toContain("cni: ");
    expect((await stat(again)).mode & 0o777).toBe(0o600);
    expect(await nodeReadiness(r, again)).toEqual({ "cp-1": "True", "w-1": "True", "w-2": "True" });
    expect(await hostDigests()).toEqual(before);
  }, 300_000);

  it("an unknown phase name is refused, listing the valid ones, before any host is contacted", async () => {
    const valid =
      /containers, connect, facts, plan, registry, reset-stale, early-preflight, prepare, preflight, api-proxy, init, join, join\/control-planes, join\/workers, nodes, cni, storage, registry-hosts, wait, kubeconfig/;
    const phase = await r.kubeforge(["up", "phase", "waitt", "-f", clusterPath]);
    expect(phase.code).not.toBe(0);
    expect(phase.stderr).toMatch(/invalid phase name "waitt"/);
    expect(phase.stderr).toMatch(valid);
    expect(phase.stderr).not.toContain("[connect]");
    const skip = await r.kubeforge(["up", "-f", clusterPath, "--skip-phases", "cni,waitt"]);
    expect(skip.code).not.toBe(0);
    expect(skip.stderr).toMatch(
      /--skip-phases: "waitt" is neither an init nor a join phase, nor one of up's/,
    );
    expect(skip.stderr).toMatch(valid);
    expect(skip.stderr).not.toContain("[connect]");
    const help = await r.kubeforge(["up", "--help"]);
    expect(help.stdout).toMatch(/Up workflow phases, in order:/);
    for (const name of [
      "reset-stale",
      "early-preflight",
      "control-planes",
      "workers",
      "kubeconfig",
    ]) {
      expect(help.stdout).toContain(name);
    }
  }, 120_000);

  it("refuses another version, API endpoint or networking for the finished cluster, changing nothing", async () => {
    const before = await hostDigests();
    const text = await readFile(clusterPath, "utf8");
    const refused = async (changed: string) => {
      const path = await r.writeClusterFile(changed, "changed.yaml");
      const out = join(r.dir, "changed.conf");
      const res = await r.kubeforge(["up", "-f", path, "--kubeconfig", out]);
      expect(res.code, res.stderr).toBe(1);
      await expect(stat(out)).rejects.toThrow(); // no admin.conf handed out either
      return res.stderr;
    };
    // A nightly upgrade rehearsal must not go green on the old version.
    expect(
      await refused(text.replace("kubernetesVersion: v1.35.0", "kubernetesVersion: v1.36.0")),
    ).toContain(
      'kubernetesVersion "v1.36.0": the cluster "ci" runs v1.35.0 (recorded on cp-1) and "up" does not upgrade or downgrade a cluster',
    );
    expect(
      await refused(
        text.replace(
          "kubernetesVersion: v1.35.0",
          'kubernetesVersion: v1.35.0\ncontrolPlaneEndpoint: "cp.example.test:6443"',
        ),
      ),
    ).toMatch(
      /the cluster "ci" serves its API at 10\.251\.\d+\.\d+:6443 \(admin\.conf on cp-1\), but this Cluster file needs cp\.example\.test:6443 \(its controlPlaneEndpoint\)/,
    );
    // Nor other networking: the ranges live in its certificates, static pods and objects.
    expect(
      await refused(
        text.replace(
          "kubernetesVersion: v1.35.0",
          "kubernetesVersion: v1.35.0\nnetworking: {serviceSubnet: 10.97.0.0/16}",
        ),
      ),
    ).toContain(
      'networking.serviceSubnet 10.97.0.0/16: the cluster "ci" was built with 10.96.0.0/12 (kube-system/kubeadm-config, through cp-1)',
    );
    expect(await hostDigests()).toEqual(before);
  }, 300_000);

  it("down --dry-run reports what it would remove on every host and changes nothing", async () => {
    const before = await Promise.all(bed.hosts.map((h) => treeDigest(h.path("etc/kubernetes"))));
    const result = await r.kubeforge([
      "down",
      "-f",
      clusterPath,
      "--kubeconfig",
      kubeconfig,
      "--dry-run",
    ]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    for (const name of ["cp-1", "w-1", "w-2"]) {
      expect(result.stderr).toMatch(
        new RegExp(`${name}: .*Would remove /etc/kubernetes/kubelet.conf`),
      );
      expect((await bed.host(name).daemonPids()).kubelet, name).toBeDefined();
    }
    expect(await Promise.all(bed.hosts.map((h) => treeDigest(h.path("etc/kubernetes"))))).toEqual(
      before,
    );
    expect((await stat(kubeconfig)).isFile()).toBe(true);
  }, 120_000);

  it("down with a Cluster file naming another cluster refuses, names every host, resets none", async () => {
    const other = await r.writeClusterFile(
      clusterFile({
        name: "other",
        controlPlanes: [bed.host("cp-1")],
        workers: [bed.host("w-1"), bed.host("w-2")],
        userFor: (h) => (h.name === "w-2" ? SUDO_USER : "root"),
      }),
      "other.yaml",
    );
    const before = await Promise.all(bed.hosts.map((h) => treeDigest(h.path("etc/kubernetes"))));
    const result = await r.kubeforge(["down", "-f", other, "--kubeconfig", kubeconfig]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'not tearing down the cluster "other": 3 of 3 hosts are not its nodes; nothing was reset:',
    );
    for (const name of ["cp-1", "w-1", "w-2"]) {
      expect(result.stderr).toContain(
        ` - ${name}: it belongs to the kubeforge cluster "ci"; run "kubeforge down" for that cluster first`,
      );
      expect((await bed.host(name).daemonPids()).kubelet, name).toBeDefined();
    }
    expect(await Promise.all(bed.hosts.map((h) => treeDigest(h.path("etc/kubernetes"))))).toEqual(
      before,
    );
    expect((await stat(kubeconfig)).isFile()).toBe(true);
  }, 120_000);

  it("down resets every host it reaches: no kubelet, no node files, no kubeforge state; the one it cannot is named", async () => {
    // A node whose VM is gone already (nothing listens on its port): reported, not in the way.
    const withGone = (await readFile(clusterPath, "utf8")).replace(
      "\n---\n",
      `\n- {name: gone, role: worker, host: "ssh://root@127.0.0.1:1", ssh: {hostKeyFingerprints: ["${bed.host("w-1").ssh.hostKeyFingerprint}"]}}\n---\n`,
    );
    const path = await r.writeClusterFile(withGone, "with-gone.yaml");
    const result = await r.kubeforge(["down", "-f", path, "--kubeconfig", kubeconfig]);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(
      /failed on 1 of 4 hosts:\n - gone: left as it is: gone \(ssh:\/\/root@127\.0\.0\.1:1\): .*refused/,
    );
    for (const h of bed.hosts) {
      const pids = await h.daemonPids();
      expect(pids.kubelet, `${h.name} kubelet`).toBeUndefined();
      expect(pids.containers, `${h.name} containers`).toEqual([]);
      for (const dir of ["etc/kubernetes/manifests", "var/lib/kubelet", "etc/cni/net.d"]) {
        expect(await readdir(h.path(dir)).catch(() => []), `${h.name} ${dir}`).toEqual([]);
      }
      await expect(stat(h.path("etc/kubernetes/kubelet.conf"))).rejects.toThrow();
      await expect(stat(h.path("var/lib/kubeforge/node.json"))).rejects.toThrow();
    }
    await expect(stat(kubeconfig)).rejects.toThrow();
  }, 300_000);
});
