import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalHost } from "../../../src/remote/local.js";
import {
  CONTAINERD_CONFIG_BACKUP,
  CONTAINERD_CRI_SOCKET,
  prepareContainerd,
} from "../../../src/node/runtime/containerd.js";
import { containerdConfig } from "../../../src/node/runtime/containerd-config.js";
import { HostDouble, onPath } from "../../support/host-double.js";

// prepareContainerd's decisions on a node whose commands are stubbed (a node's containerd, its
// package manager and its service manager cannot be arranged here for real) and whose files live
// in a temporary rootfs. The configuration itself is checked by the real containerd in
// test/integration/node/containerd-config.test.ts.

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "kubeforge-containerd-unit-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

interface NodeState {
  installed: boolean;
  running: boolean;
  /** crictl info answers after this many more asks (slow start), or never. */
  answersAfter: number;
  aptWorks: boolean;
  hasInitSystem: boolean;
  restarts: number;
  installs: string[][];
}

function node(state: NodeState) {
  return new HostDouble(new LocalHost({ rootfs: root }), {
    commands: [
      {
        match: (argv) => argv[0] === "sh" && argv[4] === "containerd",
        result: () => (state.installed ? { stdout: "/usr/bin/containerd\n" } : { code: 1 }),
      },
      onPath("crictl", "/usr/local/bin/crictl"),
      onPath("systemctl", state.hasInitSystem ? "/usr/bin/systemctl" : undefined),
      onPath("openrc", undefined),
      onPath("apt-get", "/usr/bin/apt-get"),
      {
        match: ["test", "-S", "/run/containerd/containerd.sock"],
        result: () => ({ code: state.installed && state.running ? 0 : 1 }),
      },
      {
        match: ["/usr/local/bin/crictl", "--runtime-endpoint", CONTAINERD_CRI_SOCKET, "info"],
        result: () => {
          if (!state.running || state.answersAfter-- > 0) {
            return { code: 1, stderr: "connect: connection refused" };
          }
          return {
            stdout: JSON.stringify({
              status: { conditions: [{ type: "RuntimeReady", status: true }] },
            }),
          };
        },
      },
      { match: ["systemctl", "daemon-reload"], result: {} },
      {
        match: ["systemctl", "restart", "containerd"],
        result: () => {
          state.restarts++;
          state.running = true;
          return {};
        },
      },
      {
        match: [
          "env",
          "DEBIAN_FRONTEND=noninteractive",
          "apt-get",
          "-o",
          "DPkg::Lock::Timeout=300",
          "update",
        ],
        result: {},
      },
      {
        match: (argv) => argv[2] === "apt-get" && argv.includes("install"),
        result: (argv) => {
          state.installs.push([...argv]);
          if (!state.aptWorks)
            return { code: 100, stderr: "E: Unable to locate package containerd" };
          state.installed = true;
          state.running = true;
          return {};
        },
      },
    ],
  });
}

function fresh(over: Partial<NodeState> = {}): NodeState {
  return {
    installed: true,
    running: true,
    answersAfter: 0,
    aptWorks: true,
    hasInitSystem: true,
    restarts: 0,
    installs: [],
    ...over,
  };
}

const settings = { sandboxImage: "registry.k8s.io/pause:3.10", systemdCgroup: true };
const fast = { waitTimeoutMs: 2_000, waitIntervalMs: 20 };

describe("prepareContainerd", () => {
  it("writes the config, keeps a foreign one once, restarts, waits for CRI; a second run changes nothing", async () => {
    const foreign = 'disabled_plugins = ["cri"]\n';
    await mkdir(join(root, "etc/containerd"), { recursive: true });
    await writeFile(join(root, "etc/containerd/config.toml"), foreign);
    const state = fresh({ answersAfter: 3 });
    const lines: string[] = [];
    const first = await prepareContainerd(node(state), settings, {
      allowInstall: false,
      log: (l) => lines.push(l),
      ...fast,
    });
    expect(first).toEqual({ criSocket: CONTAINERD_CRI_SOCKET, changed: true, installed: false });
    expect(await readFile(join(root, "etc/containerd/config.toml"), "utf8")).toBe(
      containerdConfig(settings),
    );
    expect(await readFile(join(root, CONTAINERD_CONFIG_BACKUP), "utf8")).toBe(foreign);
    expect(state.restarts).toBe(1);
    expect(lines).toContain("restarting containerd (configuration changed)");

    const again = await prepareContainerd(node(state), settings, { allowInstall: false, ...fast });
    expect(again.changed).toBe(false);
    expect(state.restarts).toBe(1);

    // A changed setting rewrites and restarts; the original backup is never overwritten.
    const third = await prepareContainerd(
      node(state),
      { ...settings, systemdCgroup: false },
      { allowInstall: false, ...fast },
    );
    expect(third.changed).toBe(true);
    expect(state.restarts).toBe(2);
    expect(await readFile(join(root, CONTAINERD_CONFIG_BACKUP), "utf8")).toBe(foreign);
  });

  it("writes registry hosts files and removes its own stale ones, without restarting for them", async () => {
    const state = fresh();
    const host = node(state);
    await prepareContainerd(
      host,
      {
        ...settings,
        registryMirrors: {
          "docker.io": ["https://mirror.gcr.io"],
          "quay.io": ["https://q.example"],
        },
      },
      { allowInstall: false, ...fast },
    );
    expect(state.restarts).toBe(1);
    const user = join(root, "etc/containerd/certs.d/ghcr.io/hosts.toml");
    await mkdir(join(user, ".."), { recursive: true });
    await writeFile(user, 'server = "https://ghcr.io"\n'); // the user's own: kept
    const r = await prepareContainerd(
      host,
      { ...settings, registryMirrors: { "docker.io": ["https://mirror.gcr.io"] } },
      { allowInstall: false, ...fast },
    );
    expect(r.changed).toBe(true);
    expect(state.restarts).toBe(1);
    expect(await host.exists("/etc/containerd/certs.d/quay.io/hosts.toml")).toBe(false);
    expect(await host.exists("/etc/containerd/certs.d/docker.io/hosts.toml")).toBe(true);
    expect(await readFile(user, "utf8")).toContain("ghcr.io");
  });

  it("starts a stopped containerd even when its config is already in place", async () => {
    await mkdir(join(root, "etc/containerd"), { recursive: true });
    await writeFile(join(root, "etc/containerd/config.toml"), containerdConfig(settings));
    const state = fresh({ running: false });
    const r = await prepareContainerd(node(state), settings, { allowInstall: false, ...fast });
    expect(r.changed).toBe(true);
    expect(state.restarts).toBe(1);
  });

  it("refuses to install when not allowed, naming what is missing", async () => {
    const state = fresh({ installed: false, running: false });
    await expect(
      prepareContainerd(node(state), settings, { allowInstall: false, ...fast }),
    ).rejects.toThrow(
      /containerd is not installed .* installing packages is not allowed; install containerd or allow installation/,
    );
    expect(state.installs).toEqual([]);
    expect(await new LocalHost({ rootfs: root }).exists("/etc/containerd/config.toml")).toBe(false);
  });

  it("installs containerd with apt-get when allowed", async () => {
    const state = fresh({ installed: false, running: false });
    const r = await prepareContainerd(node(state), settings, { allowInstall: true, ...fast });
    expect(r).toEqual({ criSocket: CONTAINERD_CRI_SOCKET, changed: true, installed: true });
    expect(state.installs).toHaveLength(1);
    expect(state.installs[0]).toEqual(expect.arrayContaining(["install", "-y", "containerd"]));
  });

  it("fails clearly when the package cannot be installed", async () => {
    const state = fresh({ installed: false, running: false, aptWorks: false });
    await expect(
      prepareContainerd(node(state), settings, { allowInstall: true, ...fast }),
    ).rejects.toThrow(/containerd could not be installed with apt-get: .*Unable to locate package/);
  });

  it("fails clearly when containerd never answers CRI", async () => {
    const state = fresh({ answersAfter: Number.POSITIVE_INFINITY });
    await expect(
      prepareContainerd(node(state), settings, {
        allowInstall: false,
        waitTimeoutMs: 200,
        waitIntervalMs: 20,
      }),
    ).rejects.toThrow(
      /containerd did not answer on unix:\/\/\/var\/run\/containerd\/containerd.sock within 0s \(connect: connection refused\); see "journalctl -u containerd"/,
    );
  });

  it("fails clearly without an init system to restart it", async () => {
    const state = fresh({ hasInitSystem: false });
    await expect(
      prepareContainerd(node(state), settings, { allowInstall: false, ...fast }),
    ).rejects.toThrow(/cannot \(re\)start containerd: no supported init system/);
  });

  it("rejects bad settings before touching the node", async () => {
    const state = fresh();
    await expect(
      prepareContainerd(
        node(state),
        { ...settings, registryMirrors: { "docker.io": ["ftp://x"] } },
        { allowInstall: false, ...fast },
      ),
    ).rejects.toThrow('registry mirror "ftp://x" for docker.io must be an http:// or https:// URL');
    expect(await new LocalHost({ rootfs: root }).exists("/etc/containerd/config.toml")).toBe(false);
  });
});
