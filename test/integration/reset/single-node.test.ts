import { execFile, execFileSync } from "node:child_process";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { createConnection } from "node:net";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listFiles } from "../../../src/cli/files.js";
import { bundledCli, type CliResult } from "../../support/cli.js";
import { simHost, type SimHost } from "../../support/sim-cluster.js";
import { alive } from "../../support/processes.js";

// `kubeforge reset` on a control plane made by a real `kubeforge init` on the simulated node
// (the kubelet, its container runtime and the API server are the simulation in test/support/sim;
// etcd is Debian's real etcd). What reset did is checked from outside: the node's systemctl and
// crictl, /proc (mounts, the etcd process), the files under the rootfs, the API port.

const run = promisify(execFile);
const CRI = "unix:///var/run/containerd/containerd.sock";

let kubeforge: Awaited<ReturnType<typeof bundledCli>>["kubeforge"];
let host: SimHost;
let init: CliResult;
let mountPoint: string;
let etcdPid: number;

const resetArgs = (...extra: string[]) => ["reset", "--rootfs", host.rootfs, ...extra];
const cli = (args: string[]) => kubeforge(args, { env: host.node.env });

async function crictl(...args: string[]): Promise<string> {
  const { stdout } = await run("crictl", ["--runtime-endpoint", CRI, ...args], {
    env: host.node.env,
  });
  return stdout;
}

async function kubeletState(): Promise<string> {
  const r = await run("systemctl", ["is-active", "kubelet"], { env: host.node.env }).catch(
    (e: { stdout: string }) => e,
  );
  return r.stdout.trim();
}

const mounted = async (path: string) =>
  (await readFile("/proc/mounts", "utf8")).split("\n").some((l) => l.split(" ")[1] === path);

/** Every file and folder under the rootfs with its content, except what running daemons write. */
async function snapshot(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const f of await listFiles(host.rootfs)) {
    const rel = relative(host.rootfs, f);
    if (rel.startsWith("var/log/") || rel.startsWith("var/lib/etcd/")) continue;
    out.set(rel, (await readFile(f)).toString("base64"));
  }
  return out;
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createConnection({ host: host.address, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  host = await simHost();
  init = await cli([
    "init",
    "--config",
    host.configFile,
    "--rootfs",
    host.rootfs,
    "--ignore-preflight-errors",
    "all",
  ]);
  if (init.code !== 0) throw new Error(`init failed:\n${init.stderr}\n${await host.node.logs()}`);
  // What a kubelet leaves behind besides its own files: a mounted volume (a real tmpfs), a CNI
  // configuration, kubeforge's node marker.
  mountPoint = host.path("var/lib/kubelet/pods/3f1c/volumes/kubernetes.io~empty-dir/scratch");
  await mkdir(mountPoint, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint]);
  await writeFile(join(mountPoint, "data"), "volume data");
  await mkdir(host.path("etc/cni/net.d"), { recursive: true });
  await writeFile(host.path("etc/cni/net.d/10-kubeforge-bridge.conflist"), "{}\n");
  await mkdir(host.path("var/lib/kubeforge"), { recursive: true });
  await writeFile(host.path("var/lib/kubeforge/node.json"), "{}\n");
  const children = JSON.parse(
    await readFile(join(host.node.paths.runtimeDir, "children.json"), "utf8"),
  ) as number[];
  etcdPid = children[0]!;
}, 180_000);

afterAll(async () => {
  if (mountPoint && (await mounted(mountPoint))) execFileSync("umount", ["-l", mountPoint]);
  await host?.stop();
});

/** The runtime's pod sandboxes, as `crictl pods` lists them. */
async function sandboxes(): Promise<{ metadata: { name: string }; state: string }[]> {
  return (
    JSON.parse(await crictl("pods", "-o", "json")) as {
      items: { metadata: { name: string }; state: string }[];
    }
  ).items;
}

/** The names of the static pods' sandboxes (CoreDNS's Pods left out), sorted. */
const staticPods = (items: { metadata: { name: string } }[]) =>
  items
    .map((p) => p.metadata.name)
    .filter((n) => !n.startsWith("coredns-"))
    .sort();

describe("kubeforge reset of a single control plane", () => {
  it("starts from a running control plane: four static pods, etcd, the API server", async () => {
    const items = await sandboxes();
    expect(items.every((p) => p.state === "SANDBOX_READY")).toBe(true);
    // Besides the static pods, CoreDNS's Pods once the node is Ready (they tolerate the
    // control-plane taint and the simulated kubelet runs the Pods bound to its node).
    expect(staticPods(items)).toEqual([
      "etcd-cp-1",
      "kube-apiserver-cp-1",
      "kube-controller-manager-cp-1",
      "kube-scheduler-cp-1",
    ]);
    expect(alive(etcdPid)).toBe(true);
    expect(await portOpen(host.apiPort)).toBe(true);
    expect(await kubeletState()).toBe("active");
  });

  it("a dry run changes nothing and reports what it would do", async () => {
    const before = await snapshot();
    const r = await cli(resetArgs("--dry-run"));
    expect(r.stderr).not.toMatch(/error execution phase/);
    expect(r.code).toBe(0);
    expect(await snapshot()).toEqual(before);
    expect(await kubeletState()).toBe("active");
    expect(await mounted(mountPoint)).toBe(true);
    expect(staticPods(await sandboxes())).toHaveLength(4);
    expect(r.stderr).toContain("[dryrun] Would run on local: systemctl stop kubelet");
    expect(r.stderr).toContain(`[dryrun] Would run on local: umount ${mountPoint}`);
    expect(r.stderr).toMatch(
      /\[dryrun\] Would run on local: \S*crictl --runtime-endpoint \S+ stopp [0-9a-f]{64}/,
    );
    expect(r.stderr).toContain("[dryrun] Would remove /etc/kubernetes/admin.conf");
    expect(r.stderr).toContain("[dryrun] Would remove /etc/kubernetes/pki/ca.crt");
    expect(r.stderr).toContain("Would remove the etcd member on this node from the etcd cluster");
  });

  it("refuses to run unconfirmed when nobody can answer, and says to pass --force", async () => {
    const r = await cli(resetArgs());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error execution phase preflight: .*pass --force/);
    expect(await kubeletState()).toBe("active");
    expect(await readdir(host.path("etc/kubernetes/manifests"))).toHaveLength(4);
  });

  describe("reset --force", () => {
    let r: CliResult;

    beforeAll(async () => {
      r = await cli(resetArgs("--force"));
      if (r.code !== 0) console.log(r.stderr);
    }, 120_000);

    it("succeeds and prints kubeadm's reminders for what it does not clean", () => {
      expect(r.stderr).not.toMatch(/error execution phase|WARNING/);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("network filtering rules");
      expect(r.stdout).toContain("$HOME/.kube/config");
      expect(r.stderr).toContain("The etcd member cp-1");
      expect(r.stderr).toContain("is the only remaining member");
    });

    it("stops the kubelet and leaves no pod, container or etcd process running", async () => {
      expect(await kubeletState()).toBe("inactive");
      expect((await crictl("pods", "-q")).trim()).toBe("");
      expect((await crictl("ps", "-a", "-q")).trim()).toBe("");
      expect(alive(etcdPid)).toBe(false);
      expect(await portOpen(host.apiPort)).toBe(false);
    });

    it("unmounts what was mounted below /var/lib/kubelet", async () => {
      expect(await mounted(mountPoint)).toBe(false);
    });

    it("empties kubeadm's directories and keeps them", async () => {
      for (const dir of [
        "etc/kubernetes/manifests",
        "etc/kubernetes/pki",
        "var/lib/kubelet",
        "var/lib/etcd",
        "etc/cni/net.d",
      ]) {
        expect([dir, await readdir(host.path(dir))]).toEqual([dir, []]);
      }
    });

    it("deletes the kubeconfig files and kubeforge's own state", async () => {
      expect((await readdir(host.path("etc/kubernetes"))).sort()).toEqual(["manifests", "pki"]);
      // Emptied, not removed (the folder may be a mount point).
      expect(await readdir(host.path("var/lib/kubeforge"))).toEqual([]);
    });

    it("a second reset succeeds and changes nothing", async () => {
      const before = await snapshot();
      const again = await cli(resetArgs("--force"));
      expect(again.code).toBe(0);
      expect(again.stderr).not.toMatch(/WARNING|Would/);
      expect(await snapshot()).toEqual(before);
    });

    it("a new kubeforge init on the reset host succeeds", async () => {
      const second = await cli([
        "init",
        "--config",
        host.configFile,
        "--rootfs",
        host.rootfs,
        "--ignore-preflight-errors",
        "all",
      ]);
      if (second.code !== 0) console.log(second.stderr, await host.node.logs());
      expect(second.stderr).not.toMatch(/error execution phase/);
      expect(second.code).toBe(0);
      const nodes = await host.kubectl<{ items: { metadata: { name: string } }[] }>([
        "get",
        "nodes",
      ]);
      expect(nodes.items.map((n) => n.metadata.name)).toEqual(["cp-1"]);
    }, 120_000);
  });
});
