import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSpec } from "../../../src/cli/up.js";
import { connectNode } from "../../../src/cluster/connect.js";
import { stopLocalRegistry } from "../../../src/cluster/local-registry.js";
import { pointNodesAtRegistry } from "../../../src/cluster/up/registry.js";
import type { Host } from "../../../src/remote/host.js";
import { TerminalReporter } from "../../../src/workflow/reporter.js";
import { writeImageArchive } from "../../support/image-archive.js";
import { freePort } from "../../support/ports.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { SUDO_USER } from "../../support/testbed-ssh.js";
import { clusterFile, runner, type Runner } from "../up/support.js";

// `kubeforge load-images` over real SSH into containerd's real daemon and `ctr`: each testbed
// host runs Debian's containerd in its own mount namespace (its /run is the host's own tmpfs, and
// /var/lib/containerd gets a tmpfs of its own so the overlayfs snapshotter can unpack there), at
// containerd's default socket, as on a prepared node. img-2 is logged in as a non-root user with
// password-less sudo: ctr runs as root through sudo. The archives are `docker save` layouts made
// by test/support/image-archive.ts (no registry is reachable here).
// The local registry (registry: <port>) is Debian's docker-registry, the distribution registry,
// started on the runner by `kubeforge up phase registry`; an image pushed to it with the real ctr
// is pulled by the other node's ctr through the hosts.toml `up` writes, and by nothing else.

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

/** A server holding a port on every address of the runner. */
async function listening(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  return server;
}
const portOf = (server: Server) => (server.address() as { port: number }).port;

describe("registry: a local registry on the runner, pulled by the nodes' containerd over SSH", () => {
  let port: number;
  let withRegistry: string;
  const stateFile = () => join(r.dir, ".kube", "kubeforge-img.conf.registry.json");

  beforeAll(async () => {
    port = await freePort();
    const text = await readFile(clusterPath, "utf8");
    withRegistry = await r.writeClusterFile(
      text.replace("name: img\n", `name: img\nregistry: ${port}\n`),
      "cluster-registry.yaml",
    );
  });

  afterAll(async () => {
    await stopLocalRegistry(stateFile());
  });

  it("refuses a port another program holds, before anything starts", async () => {
    const busy = await listening();
    try {
      const text = await readFile(withRegistry, "utf8");
      const file = await r.writeClusterFile(
        text.replace(`registry: ${port}`, `registry: ${portOf(busy)}`),
        "cluster-busy.yaml",
      );
      const res = await r.kubeforge(["up", "phase", "registry", "-f", file]);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(
        `registry: port ${portOf(busy)} on this machine is in use by another program; give another port (for example registry: ${portOf(busy) + 1})`,
      );
      expect(existsSync(stateFile())).toBe(false);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  }, 120_000);

  it("serves a pushed image that each node's containerd pulls as localhost:<port>/... through its hosts.toml", async () => {
    const res = await r.kubeforge(["up", "phase", "registry", "-f", withRegistry]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain(
      `[up] registry: push to localhost:${port} (the /usr/bin/docker-registry program, pid`,
    );
    // The distribution registry's API answers on the runner (registry API v2: GET /v2/ is 200).
    expect((await fetch(`http://127.0.0.1:${port}/v2/`)).status).toBe(200);

    // A real push with ctr from img-1 to the runner's address as img-1 sees it.
    const [pusher, puller] = bed.hosts as [SshTestHost, SshTestHost];
    const runnerAddress = (await pusher.sshOutput("printenv SSH_CONNECTION")).split(" ")[0]!;
    const archive = await writeImageArchive(r.dir, "pushed.tar", "kubeforge-test/pushed:v1", "p\n");
    const copy = await pusher.sshRun("base64 -d >/run/pushed.tar", {
      stdin: (await readFile(archive)).toString("base64"),
    });
    expect(copy.code, copy.stderr).toBe(0);
    const remote = `${runnerAddress}:${port}/kubeforge-test/pushed:v1`;
    await pusher.sshOutput(
      [
        "set -e",
        "ctr images import /run/pushed.tar",
        `ctr images tag docker.io/kubeforge-test/pushed:v1 ${remote}`,
        `ctr images push --plain-http ${remote}`,
      ].join("\n"),
      { timeoutMs: 120_000 },
    );
    const tags = (await (
      await fetch(`http://127.0.0.1:${port}/v2/kubeforge-test/pushed/tags/list`)
    ).json()) as { tags: string[] };
    expect(tags.tags).toEqual(["v1"]);

    // Without the hosts.toml, localhost:<port> on a node is the node itself: nothing there.
    const name = `localhost:${port}/kubeforge-test/pushed:v1`;
    const pull = `ctr --namespace k8s.io images pull --hosts-dir /etc/containerd/certs.d ${name}`;
    const before = await puller.sshRun(pull);
    expect(before.code).not.toBe(0);

    // up's registry-hosts work on every node, over SSH (img-2 through sudo).
    const reporter = new TerminalReporter({ write: () => undefined });
    const spec = await readSpec(withRegistry, reporter);
    const hosts = new Map<string, Host>();
    try {
      for (const node of spec.nodes) {
        hosts.set(
          node.name,
          await connectNode(spec, node, { readFile: (p) => readFile(p), env: process.env }),
        );
      }
      const servers = await pointNodesAtRegistry(
        { host: `localhost:${port}`, port, via: "test" },
        { nodes: spec.nodes, hostOf: (n) => hosts.get(n)!, concurrency: 2, log: () => undefined },
      );
      expect(servers).toEqual([`http://${runnerAddress}:${port}`]);
    } finally {
      for (const h of hosts.values()) await h.close?.();
    }
    for (const h of bed.hosts) {
      expect(
        await h.sshOutput(`cat /etc/containerd/certs.d/localhost:${port}/hosts.toml`),
      ).toContain(`server = "http://${runnerAddress}:${port}"`);
    }
    const after = await puller.sshRun(pull, { timeoutMs: 120_000 });
    expect(after.code, after.stderr).toBe(0);
    expect(await images(puller, "k8s.io")).toContain(name);

    // A second up reuses the running registry; down's side removes it and its blobs.
    const again = await r.kubeforge(["up", "phase", "registry", "-f", withRegistry]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("(already running)");
    const state = JSON.parse(await readFile(stateFile(), "utf8")) as {
      pid: number;
      dataDir: string;
    };
    expect(await stopLocalRegistry(stateFile())).toBe(`the registry process ${state.pid}`);
    await expect(fetch(`http://127.0.0.1:${port}/v2/`)).rejects.toThrow();
    expect(existsSync(state.dataDir)).toBe(false);
  }, 300_000);
});
