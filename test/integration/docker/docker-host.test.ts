import { mkdtemp, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectDiagnostics } from "../../../src/cluster/diagnostics.js";
import type { ClusterSpec } from "../../../src/config/cluster/types.js";
import { LABELS } from "../../../src/config/docker/network-plan.js";
import { installKubeletService, kubeadmDropIn } from "../../../src/node/kubelet-service.js";
import { run } from "../../../src/remote/host.js";
import type { DockerCluster } from "../../../src/remote/docker/cluster.js";
import type { DockerEngine } from "../../../src/remote/docker/engine.js";
import type { DockerHost } from "../../../src/remote/docker/host.js";
import { dockerTestsUnavailable } from "../../support/docker.js";
import { singleDockerNode } from "./support.js";

// A node container on a real Docker engine with real systemd as PID 1 (the images are built
// here with no registry: test/support/docker.ts), reached through DockerHost, the Host port
// over the Engine API: commands, stdin, exit codes, time limits and cancels that end the
// command inside the container, files with their modes, facts, a port forward from the node's
// own loopback. Then node preparation's kubelet unit and drop-in under real systemd:
// daemon-reload, enable, start (systemd runs the simulated kubelet through the unit's
// ExecStart and the drop-in's flags), restart; the diagnostics of the node (the kubelet's
// journal, docker inspect); and the removal of exactly the cluster's labelled resources.

const unavailable = dockerTestsUnavailable();
if (unavailable && process.env.CI)
  throw new Error(`the Docker tests cannot run under CI: ${unavailable}`);

let engine: DockerEngine;
let cluster: DockerCluster;
let host: DockerHost;
let spec: ClusterSpec;
let work: string;

beforeAll(async () => {
  if (unavailable) return;
  ({ engine, cluster, host, spec } = await singleDockerNode(`dh${process.pid}`, "withSimulation"));
  work = await mkdtemp(join(tmpdir(), "kubeforge-docker-host-"));
}, 60 * 60_000);

afterAll(async () => {
  await host?.close();
  await cluster?.remove();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe.skipIf(unavailable)("a node container through DockerHost", () => {
  it("runs systemd as PID 1, with the node's name and a private cgroup tree", async () => {
    expect((await run(host, ["cat", "/proc/1/comm"])).stdout.trim()).toBe("systemd");
    expect(await host.hostname()).toBe("node-1");
    const state = (await host.exec(["systemctl", "is-system-running"])).stdout.trim();
    expect(["running", "degraded"]).toContain(state);
    // systemd made its own slices: the cgroup mounts are writable inside the container.
    const slices = await host.exec([
      "sh",
      "-c",
      "ls /sys/fs/cgroup/systemd 2>/dev/null || ls /sys/fs/cgroup",
    ]);
    expect(slices.stdout).toContain("system.slice");
    expect((await run(host, ["systemctl", "is-active", "containerd"])).stdout.trim()).toBe(
      "active",
    );
  });

  it("runs argv exactly, passes stdin and reports exit codes", async () => {
    const r = await host.exec(["sh", "-c", 'cat; echo "$1" >&2; exit 7', "sh", "it's $HOME"], {
      stdin: "from stdin\n",
    });
    expect(r).toEqual({ code: 7, stdout: "from stdin\n", stderr: "it's $HOME\n" });
    expect((await host.exec(["no-such-command"])).code).toBe(127);
  });

  it("ends a command at its time limit, inside the container", async () => {
    const r = await host.exec(["sleep", "97"], { timeoutMs: 1_500 });
    expect(r.code).toBe(124);
    expect(r.stderr).toContain("timed out after 1500 ms");
    const left = await host.exec(["sh", "-c", "pgrep -fx 'sleep 97' || true"]);
    expect(left.stdout.trim()).toBe("");
  });

  it("cancels a command: it is gone when exec rejects", async () => {
    const abort = new AbortController();
    const running = host.exec(["sleep", "98"], { signal: abort.signal });
    await new Promise((r) => setTimeout(r, 1_500));
    abort.abort(new Error("test cancel"));
    await expect(running).rejects.toThrow('cancelled "sleep 98"');
    const left = await host.exec(["sh", "-c", "pgrep -fx 'sleep 98' || true"]);
    expect(left.stdout.trim()).toBe("");
  });

  it("writes, reads, lists and removes files with their modes", async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13]);
    await host.writeFile("/etc/kubeforge-test/a/key", bytes, 0o600);
    expect(await host.readFile("/etc/kubeforge-test/a/key")).toEqual(bytes);
    expect(await host.stat("/etc/kubeforge-test/a/key")).toEqual({
      isFile: true,
      isDirectory: false,
      mode: 0o600,
      size: 6,
    });
    await host.mkdirp("/etc/kubeforge-test/b", 0o700);
    expect(await host.readDir("/etc/kubeforge-test")).toEqual(["a", "b"]);
    await host.remove("/etc/kubeforge-test", { recursive: true });
    expect(await host.exists("/etc/kubeforge-test")).toBe(false);
    await expect(host.readFile("/nope")).rejects.toThrow(/no such file/);
  });

  it("keeps /var on the node's volume", async () => {
    const mounts = (await run(host, ["sh", "-c", "grep ' /var ' /proc/self/mountinfo"])).stdout;
    expect(mounts).toContain(" /var ");
    const volumes = await engine.listVolumes([`${LABELS.cluster}=${spec.name}`]);
    expect(volumes.map((v) => v.Name)).toEqual([`kubeforge-${spec.name}-node-1-var`]);
  });

  it("reports the node's facts", async () => {
    const f = await host.facts();
    expect(f).toMatchObject({ hostname: "node-1", uid: 0, rootAccess: true });
    expect(f.cpuCount).toBeGreaterThan(0);
    expect(f.memoryBytes).toBeGreaterThan(0);
  });

  it("forwards a runner port to the node's own loopback", async () => {
    await run(host, [
      "sh",
      "-c",
      "nohup socat TCP-LISTEN:10299,bind=127.0.0.1,fork,reuseaddr SYSTEM:'echo node-loopback' >/dev/null 2>&1 &",
    ]);
    await new Promise((r) => setTimeout(r, 1_000));
    const f = await host.forward("127.0.0.1", 10299);
    try {
      const said = await new Promise<string>((resolve, reject) => {
        const s = connect(f.port, "127.0.0.1");
        let text = "";
        s.on("data", (b) => (text += b.toString()));
        s.on("end", () => resolve(text));
        s.on("error", reject);
      });
      expect(said).toBe("node-loopback\n");
    } finally {
      await f.close();
    }
  });

  it("installs the kubelet unit and drop-in under real systemd, which starts and restarts the kubelet", async () => {
    // The release server's stand-in, as node preparation installs it; the test image's drop-in
    // runs the simulated kubelet in its place (test/support/docker.ts).
    await host.writeFile("/usr/local/bin/kubelet", await readFile("/bin/true"), 0o755);
    const lines: string[] = [];
    expect(
      await installKubeletService(host, {
        kubeletPath: "/usr/local/bin/kubelet",
        log: (l) => lines.push(l),
      }),
    ).toEqual({ changed: true });
    expect(lines).toContain("enabled kubelet.service");
    expect((await run(host, ["systemctl", "is-enabled", "kubelet"])).stdout.trim()).toBe("enabled");
    // systemd read the drop-in: ExecStart is kubeadm's, with its environment variables.
    const show = (
      await run(host, ["systemctl", "show", "kubelet", "-p", "ExecStart", "-p", "DropInPaths"])
    ).stdout;
    expect(show).toContain("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf");
    expect(await host.readFile("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf")).toEqual(
      Buffer.from(kubeadmDropIn("/usr/local/bin/kubelet")),
    );
    expect(show).toContain(
      "$KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS",
    );
    // A second install changes nothing (no daemon-reload needed).
    expect(await installKubeletService(host, { kubeletPath: "/usr/local/bin/kubelet" })).toEqual({
      changed: false,
    });
    await run(host, ["systemctl", "start", "kubelet"]);
    const pid = async () =>
      (await run(host, ["systemctl", "show", "kubelet", "-p", "MainPID", "--value"])).stdout.trim();
    const first = await pid();
    expect(Number(first)).toBeGreaterThan(1);
    expect((await run(host, ["cat", `/proc/${first}/cmdline`])).stdout).toContain(
      "sim-kubelet.mjs",
    );
    await run(host, ["systemctl", "restart", "kubelet"]);
    const second = await pid();
    expect(second).not.toBe(first);
    expect((await run(host, ["systemctl", "is-active", "kubelet"])).stdout.trim()).toBe("active");
  });

  it(
    "collects the node's diagnostics: the kubelet's journal and docker inspect",
    { timeout: 180_000 },
    async () => {
      // The simulated kubelet (a Node process) takes seconds to start on a busy machine.
      const end = Date.now() + 90_000;
      const logged = async () =>
        (await host.exec(["journalctl", "-u", "kubelet", "-o", "cat", "--no-pager"])).stdout;
      while (!(await logged()).includes("simulated kubelet process") && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 1_000));
      }
      const outDir = join(work, "diagnostics");
      await collectDiagnostics(host, "node-1", { outDir });
      const journal = await readFile(join(outDir, "node-1", "kubelet.log"), "utf8");
      expect(journal).toContain("simulated kubelet process");
      const inspect = JSON.parse(
        await readFile(join(outDir, "node-1", "docker-inspect.json"), "utf8"),
      ) as {
        Config: { Labels: Record<string, string> };
      };
      expect(inspect.Config.Labels[LABELS.cluster]).toBe(spec.name);
    },
  );

  it("removes the cluster's containers, volumes and network, and nothing else", async () => {
    const bystander = await engine
      .createVolume({ Name: `kubeforge-bystander-${process.pid}` })
      .then(() => `kubeforge-bystander-${process.pid}`);
    try {
      const removed = await cluster.remove();
      expect(removed.sort()).toEqual(
        [
          `container kubeforge-${spec.name}-node-1`,
          `network kubeforge-${spec.name}`,
          `volume kubeforge-${spec.name}-node-1-var`,
        ].sort(),
      );
      expect(await cluster.owned()).toEqual([]);
      const left = await engine.listVolumes([]);
      expect(left.map((v) => v.Name)).toContain(bystander);
    } finally {
      await engine.removeVolume(bystander);
    }
  });
});
