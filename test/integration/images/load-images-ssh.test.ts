import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeImageArchive } from "../../support/image-archive.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { SUDO_USER } from "../../support/testbed-ssh.js";
import { clusterFile, runner, type Runner } from "../up/support.js";

// `kubeforge load-images` over real SSH into containerd's real daemon and `ctr`: each testbed
// host runs Debian's containerd in its own mount namespace (its /run is the host's own tmpfs, and
// /var/lib/containerd gets a tmpfs of its own so the overlayfs snapshotter can unpack there), at
// containerd's default socket, as on a prepared node. img-2 is logged in as a non-root user with
// password-less sudo: ctr runs as root through sudo. The archives are `docker save` layouts made
// by test/support/image-archive.ts (no registry is reachable here).

const exec = promisify(execFile);

let bed: SshTestbed;
let r: Runner;
let clusterPath: string;

/** Starts containerd in the host's namespaces (the CRI plugin off: only images are needed). */
async function startContainerd(h: SshTestHost): Promise<void> {
  await h.sshOutput(
    [
      "set -e",
      "mkdir -p /var/lib/containerd /run/containerd",
      "mount -t tmpfs tmpfs /var/lib/containerd",
      `printf 'version = 2\\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\\n' >/run/kf-containerd.toml`,
      "setsid containerd --config /run/kf-containerd.toml </dev/null >/run/kf-containerd.log 2>&1 &",
      "for i in $(seq 100); do ctr version >/dev/null 2>&1 && exit 0; sleep 0.1; done",
      "cat /run/kf-containerd.log >&2; exit 1",
    ].join("\n"),
    { timeoutMs: 60_000 },
  );
}

/** The image names in a containerd namespace of the host, by the real ctr. */
async function images(h: SshTestHost, namespace: string): Promise<string[]> {
  const out = await h.sshOutput(`ctr --namespace ${namespace} images ls -q`);
  return out.split("\n").filter((l) => l !== "");
}

beforeAll(async () => {
  bed = await createTestbed(["img-1", "img-2"], { ssh: true });
  await Promise.all(bed.hosts.map(startContainerd));
  r = await runner();
  clusterPath = await r.writeClusterFile(
    clusterFile({
      name: "img",
      controlPlanes: [bed.host("img-1")],
      workers: [bed.host("img-2")],
      userFor: (h) => (h.name === "img-2" ? SUDO_USER : "root"),
    }),
  );
}, 300_000);

afterAll(async () => {
  await bed?.stop();
});

describe("kubeforge load-images over SSH, into containerd's k8s.io namespace", () => {
  it("imports archives on every node, unpacked, where the kubelet's CRI looks", async () => {
    const a = await writeImageArchive(r.dir, "app.tar", "kubeforge-test/app:v1", "app\n");
    const tool = await writeImageArchive(r.dir, "tool.tar", "example.com/tool:2", "tool\n");
    // gzipped, as `docker save | gzip` keeps them: unpacked on the runner (ctr 1.x reads plain tar).
    await exec("gzip", ["-k", tool]);
    const res = await r.kubeforge(["load-images", "-f", clusterPath, a, `${tool}.gz`]);
    expect(res.code, res.stderr).toBe(0);
    for (const h of bed.hosts) {
      // ctr names a docker archive's RepoTags fully: docker.io/ for a name without a registry.
      expect(await images(h, "k8s.io")).toEqual([
        "docker.io/kubeforge-test/app:v1",
        "example.com/tool:2",
      ]);
      // Not the default namespace, which the kubelet never sees.
      expect(await images(h, "default")).toEqual([]);
      // Unpacked with the default snapshotter: the image's layer is there, ready to run.
      const check = await h.sshOutput("ctr --namespace k8s.io images check");
      expect(check).toMatch(/docker\.io\/kubeforge-test\/app:v1\s+\S+\s+\S+\s+complete/);
      expect(res.stderr).toContain(
        `${h.name}: [load-images] imported docker.io/kubeforge-test/app:v1, example.com/tool:2`,
      );
    }
  }, 300_000);

  it("refuses a missing archive before any node is touched", async () => {
    const good = await writeImageArchive(r.dir, "other.tar", "kubeforge-test/other:v1", "x\n");
    const res = await r.kubeforge(["load-images", "-f", clusterPath, good, "missing.tar"]);
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toMatch(/^load-images: \/\S+\/missing\.tar does not exist$/);
    for (const h of bed.hosts)
      expect(await images(h, "k8s.io")).not.toContain("docker.io/kubeforge-test/other:v1");
  }, 120_000);

  it("refuses an item that is neither an image name nor a .tar path", async () => {
    const res = await r.kubeforge(["load-images", "-f", clusterPath, "Not An Image"]);
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe(
      'load-images: "Not An Image" is neither an image reference (such as app:dev or ghcr.io/acme/app:1) nor an archive path ending in .tar, .tar.gz or .tgz',
    );
  });

  it("names the node and the archive when containerd refuses it", async () => {
    const { writeFile } = await import("node:fs/promises");
    const bad = `${r.dir}/broken.tar`;
    await writeFile(bad, "not a tar archive at all\n".repeat(40));
    const res = await r.kubeforge(["load-images", "-f", clusterPath, bad]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("load-images: failed on 2 of 2 hosts:");
    for (const h of bed.hosts) {
      expect(res.stderr).toMatch(
        new RegExp(` - ${h.name}: importing \\S+/broken\\.tar into containerd failed: \\S`),
      );
    }
  }, 120_000);
});
