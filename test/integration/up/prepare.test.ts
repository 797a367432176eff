import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  nodeImages,
  prepareNodes,
  type PrepareNodesInput,
} from "../../../src/cluster/up/prepare.js";
import { defaultClusterSpec } from "../../../src/config/cluster/defaults.js";
import type { ClusterNodeSpec, ClusterSpec } from "../../../src/config/cluster/types.js";
import { releaseFor } from "../../../src/config/versions.js";
import type { SshHost } from "../../../src/remote/ssh/host.js";
import type { Reporter } from "../../../src/workflow/reporter.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { firstControlPlaneConfig } from "../../support/up-config.js";
import { imageRepositoryDocument, startStallingRegistry } from "../../support/stalling-registry.js";
import { skipNodePreparation } from "../../support/machine-safety.js";
import { connectTestHost } from "../../support/testbed-connect.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";

// prepareNodes over SSH on two testbed hosts (a control plane as root, a worker as the sudo user
// kf), downloading from the local HTTPS release server: the binaries land in the host's
// /usr/local/bin (an overlay of the host's: the machine's folder is untouched), containerd's
// configuration, the kubelet unit and its drop-in are written, the node's images are pulled
// through the simulated crictl; a second run changes nothing; a tampered checksum fails naming
// the URL before any host is touched. Packages are never installed (/usr is the machine's).
// As in node-prep-ssh.test.ts: swap and kernel modules are the machine's, so the test does not
// run where a host's "swapoff -a" or modprobe would change the machine; it needs the machine's
// containerd on the PATH (the hosts find it there, as on a hosted runner).

const machineContainerd = (() => {
  try {
    execFileSync("sh", ["-c", "command -v containerd"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const skip = skipNodePreparation(machineContainerd ? [] : ["containerd is not installed"]);

const VERSION = "v1.35.2";
const RELEASE = releaseFor(VERSION);
const ENDPOINT = "unix:///run/containerd/containerd.sock";
const machineHadKubelet = existsSync("/usr/local/bin/kubelet");
const machineKubeletMtime = machineHadKubelet ? statSync("/usr/local/bin/kubelet").mtimeMs : 0;

let server: ReleaseServer;
let bed: SshTestbed;
let cacheDir: string;
const hosts: SshHost[] = [];
const lines: string[] = [];
let targets: PrepareNodesInput["nodes"];

const reporter = (node: string): Reporter => ({
  info: (m) => void lines.push(`${node}: ${m}`),
  warn: (m) => void lines.push(`${node}: WARNING ${m}`),
  mask: () => {},
  group: (_title, fn) => fn(),
});

const NODES: { node: ClusterNodeSpec; user: string }[] = [
  { node: { name: "prep-cp", role: "control-plane", host: "ssh://root@prep-cp" }, user: "root" },
  { node: { name: "prep-w", role: "worker", host: "ssh://kf@prep-w" }, user: "kf" },
];

function spec(): ClusterSpec {
  const s = defaultClusterSpec();
  return {
    ...s,
    nodes: NODES.map((n) => n.node),
    prepare: { ...s.prepare, installPackages: false, downloads: server.sources },
  };
}

/** The input up gives prepareNodes: the cluster's configuration as its first control plane builds it. */
function input(
  over: Partial<PrepareNodesInput> & { kubernetesVersion?: string } = {},
): PrepareNodesInput {
  const { kubernetesVersion = VERSION, ...rest } = over;
  const s = rest.spec ?? spec();
  return {
    spec: s,
    nodes: targets,
    cluster: firstControlPlaneConfig(s, kubernetesVersion),
    release: RELEASE,
    reporter,
    env: {},
    cacheDir,
    ca: server.ca,
    runtimeTimeoutMs: 20_000,
    ...rest,
  };
}

const onHost = (h: SshTestHost, command: string) => h.sshOutput(command, { timeoutMs: 60_000 });

const WATCHED = [
  "/usr/local/bin/kubelet",
  "/usr/local/bin/kubectl",
  "/usr/local/bin/crictl",
  "/opt/cni/bin/bridge",
  "/etc/containerd/config.toml",
  "/etc/systemd/system/kubelet.service",
  "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
];

/** Inode, mtime and content hash of every file preparation writes, as the host sees them. */
async function snapshot(h: SshTestHost): Promise<string> {
  return onHost(
    h,
    `for f in ${WATCHED.join(" ")}; do if [ -e "$f" ]; then echo "$f $(stat -c '%i %Y %a' "$f") $(sha256sum < "$f" | cut -d' ' -f1)"; else echo "$f absent"; fi; done; ls /etc/containerd/certs.d 2>/dev/null || true`,
  );
}

beforeAll(async () => {
  if (skip) return;
  server = await startReleaseServer();
  cacheDir = await mkdtemp(join(tmpdir(), "kubeforge-prepare-cache-"));
  bed = await createTestbed(
    NODES.map((n) => n.node.name),
    { ssh: true },
  );
  targets = [];
  for (const { node, user } of NODES) {
    const h = bed.host(node.name);
    const host = await connectTestHost(h, user);
    hosts.push(host);
    targets.push({ node, host, arch: (await host.facts()).arch });
  }
}, 240_000);

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  await bed?.stop();
  await server?.close();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
});

describe.skipIf(skip)("prepareNodes over SSH", () => {
  /** prepareNodes, and then its image pulls, which go on after it returns. */
  async function prepareAndPull(i: PrepareNodesInput): Promise<void> {
    const pulls = await prepareNodes(i);
    await Promise.all(i.nodes.map(({ node }) => pulls.done(node.name)));
  }

  it("installs the binaries, configures containerd, writes the kubelet unit and pulls the node's images", async () => {
    await prepareAndPull(input());
    for (const { node } of NODES) {
      const h = bed.host(node.name);
      const arch =
        targets.find((t) => t.node.name === node.name)!.arch === "arm64" ? "arm64" : "amd64";
      // The binaries are the release server's bytes.
      const served = (await server.payload(`/dl/release/${VERSION}/bin/linux/${arch}/kubelet`))
        .toString("hex")
        .slice(-64);
      const kubelet = await onHost(
        h,
        "od -An -tx1 -v /usr/local/bin/kubelet | tr -d ' \\n' | tail -c 64",
      );
      expect(kubelet).toBe(served);
      expect(
        await onHost(
          h,
          "stat -c '%a %U' /usr/local/bin/kubelet /usr/local/bin/kubectl /usr/local/bin/crictl /opt/cni/bin/bridge /opt/cni/bin/host-local /opt/cni/bin/loopback",
        ),
      ).toBe("755 root\n".repeat(6));
      const config = await onHost(h, "cat /etc/containerd/config.toml");
      expect(config).toContain(`sandbox_image = "registry.k8s.io/pause:${RELEASE.pauseVersion}"`);
      expect(config).toContain("SystemdCgroup = true");
      expect(config).toContain("disabled_plugins = []");
      const unit = await onHost(h, "cat /etc/systemd/system/kubelet.service");
      expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/kubelet$/m);
      expect(
        await onHost(h, "cat /etc/systemd/system/kubelet.service.d/10-kubeadm.conf"),
      ).toContain("ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS");
      // Every image of the node's role is in the (simulated) runtime; control-plane images only
      // on the control plane.
      const images = nodeImages(firstControlPlaneConfig(spec(), VERSION), node.role, RELEASE);
      for (const image of images) {
        const out = await onHost(h, `crictl --runtime-endpoint ${ENDPOINT} inspecti -q '${image}'`);
        expect((JSON.parse(out) as { status: { repoTags: string[] } }).status.repoTags).toEqual([
          image,
        ]);
      }
      const apiserver = `registry.k8s.io/kube-apiserver:${VERSION}`;
      expect(images.includes(apiserver)).toBe(node.role === "control-plane");
      if (node.role === "worker") {
        const r = await h.sshRun(
          `crictl --runtime-endpoint ${ENDPOINT} inspecti -q '${apiserver}'`,
        );
        expect(r.code).toBe(1);
        // logrus quotes the message: its inner quotes are escaped.
        expect(r.stderr).toContain(`no such image \\"${apiserver}\\" present`);
      }
    }
    // Installs never reached the machine's own /usr/local/bin.
    expect(existsSync("/usr/local/bin/kubelet")).toBe(machineHadKubelet);
    if (machineHadKubelet) {
      expect(statSync("/usr/local/bin/kubelet").mtimeMs).toBe(machineKubeletMtime);
    }
    expect(
      lines.some((l) => l.startsWith("prep-w: [prepare] pulled registry.k8s.io/kube-proxy:")),
    ).toBe(true);
  }, 240_000);

  it("changes nothing on a second run (no download, no write, no pull, no restart)", async () => {
    const before = await Promise.all(NODES.map((n) => snapshot(bed.host(n.node.name))));
    const requests = server.requests.length;
    lines.length = 0;
    await prepareAndPull(input());
    const after = await Promise.all(NODES.map((n) => snapshot(bed.host(n.node.name))));
    expect(after).toEqual(before);
    expect(server.requests.length).toBe(requests);
    const changes = lines.filter((l) =>
      /\[prepare\] (installed|wrote|pulled|restarting|starting|enabled|set |loaded|removed)/.test(
        l,
      ),
    );
    expect(changes).toEqual([]);
    for (const { node } of NODES) {
      expect(lines).toContain(`${node.name}: [prepare] containerd already configured and running`);
      expect(lines).toContain(`${node.name}: [prepare] kubelet service already installed`);
    }
  }, 240_000);

  it("fails on a tampered checksum naming the URL, before any host is changed", async () => {
    const before = await Promise.all(NODES.map((n) => snapshot(bed.host(n.node.name))));
    const version = "v1.35.3";
    const arch = targets[0]!.arch === "arm64" ? "arm64" : "amd64";
    const path = `/dl/release/${version}/bin/linux/${arch}/kubelet`;
    server.fault(path, "tampered-checksum");
    const fresh = await mkdtemp(join(tmpdir(), "kubeforge-prepare-cache-"));
    try {
      const run = prepareNodes(input({ kubernetesVersion: version, cacheDir: fresh }));
      await expect(run).rejects.toThrow(
        `${server.url}${path} does not match its published checksum`,
      );
    } finally {
      server.fault(path, undefined);
      await rm(fresh, { recursive: true, force: true });
    }
    const after = await Promise.all(NODES.map((n) => snapshot(bed.host(n.node.name))));
    expect(after).toEqual(before);
  }, 240_000);

  it("a failing pull does not fail preparation: it is the node's error when up waits for its images", async () => {
    const s = spec();
    const unreachable = {
      ...s,
      kubeadm: { documents: imageRepositoryDocument("registry.invalid/k8s") },
    };
    const pulls = await prepareNodes(input({ spec: unreachable }));
    // Preparation itself succeeded: containerd now uses the configured repository's pause.
    for (const { node } of NODES) {
      expect(await onHost(bed.host(node.name), "cat /etc/containerd/config.toml")).toContain(
        `sandbox_image = "registry.invalid/k8s/pause:${RELEASE.pauseVersion}"`,
      );
    }
    await expect(pulls.done("prep-w")).rejects.toThrow(
      /^prep-w: image pre-pull: .*registry\.invalid\/k8s\/pause.*no such host/s,
    );
    await expect(pulls.done("prep-cp")).rejects.toThrow(/^prep-cp: image pre-pull: /);
  }, 240_000);

  it("cancelling the pulls ends them on every host, a root login and a sudo user alike", async () => {
    const registry = await startStallingRegistry(bed.gateway);
    const pullsOn = (h: SshTestHost) => onHost(h, registry.pullsCommand);
    try {
      const s = spec();
      const stalling = {
        ...s,
        kubeadm: { documents: imageRepositoryDocument(registry.repository) },
      };
      const pulls = await prepareNodes(input({ spec: stalling }));
      for (const { node } of NODES) {
        const h = bed.host(node.name);
        await expect.poll(() => pullsOn(h), { timeout: 30_000 }).not.toBe("");
      }
      const started = Date.now();
      await pulls.cancel();
      // The pulls' own time limit is 15 minutes: nothing waited for it.
      expect(Date.now() - started).toBeLessThan(15_000);
      for (const { node } of NODES) {
        expect(await pullsOn(bed.host(node.name)), node.name).toBe("");
        await expect(pulls.done(node.name)).rejects.toThrow(/cancelled/);
      }
    } finally {
      await registry.close();
    }
  }, 240_000);

  it("does nothing when preparation is off", async () => {
    const requests = server.requests.length;
    lines.length = 0;
    const s = spec();
    await prepareNodes(
      input({
        spec: { ...s, prepare: { ...s.prepare, enabled: false } },
        cacheDir: "/nonexistent",
      }),
    );
    expect(lines).toEqual([]);
    expect(server.requests.length).toBe(requests);
  });
});
