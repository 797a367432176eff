import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  containerdConfig,
  registryHostsFiles,
  type ContainerdSettings,
} from "../../../src/node/runtime/containerd-config.js";

// The config kubeforge writes, read by the machine's real containerd (Debian's 1.6):
// `containerd --config <file> config dump` prints the configuration containerd would run with
// (the file merged over its defaults), or fails on a file it cannot load. One test also starts
// the daemon on temporary folders and asks it which plugins loaded.

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-containerd-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(argv: string[], timeoutMs = 20_000) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(argv[0]!, argv.slice(1), { timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let n = 0;
async function dump(text: string) {
  const file = join(dir, `config-${n++}.toml`);
  await writeFile(file, text);
  return run(["containerd", "--config", file, "config", "dump"]);
}

/** "table.key" → raw value, from containerd's TOML output ("" is the top-level table). */
function values(toml: string): Map<string, string> {
  const out = new Map<string, string>();
  let table = "";
  for (const line of toml.split("\n")) {
    const t = line.trim();
    const header = /^\[(.+)\]$/.exec(t);
    if (header) table = header[1]!;
    const kv = /^([A-Za-z0-9_-]+|"[^"]+")\s*=\s*(.*)$/.exec(t);
    if (kv) out.set(`${table}|${kv[1]}`, kv[2]!);
  }
  return out;
}

const CRI = 'plugins."io.containerd.grpc.v1.cri"';

describe("containerd reads kubeforge's config.toml", () => {
  it.each([
    { systemdCgroup: true, sandboxImage: "registry.k8s.io/pause:3.10" },
    { systemdCgroup: false, sandboxImage: "mirror.example:5000/k8s/pause:3.9" },
  ])(
    "CRI enabled, SystemdCgroup=$systemdCgroup, sandbox_image, config_path",
    async (s: ContainerdSettings) => {
      const r = await dump(containerdConfig(s));
      expect(r.code, r.stderr).toBe(0);
      const v = values(r.stdout);
      expect(v.get("|version")).toBe("2");
      expect(v.get("|disabled_plugins")).toBe("[]");
      expect(v.get(`${CRI}|sandbox_image`)).toBe(JSON.stringify(s.sandboxImage));
      expect(v.get(`${CRI}.containerd|default_runtime_name`)).toBe('"runc"');
      expect(v.get(`${CRI}.containerd.runtimes.runc|runtime_type`)).toBe('"io.containerd.runc.v2"');
      expect(v.get(`${CRI}.containerd.runtimes.runc.options|SystemdCgroup`)).toBe(
        String(s.systemdCgroup),
      );
      expect(v.get(`${CRI}.registry|config_path`)).toBe('"/etc/containerd/certs.d"');
    },
  );

  it("keeps quotes and backslashes in strings intact (TOML escaping)", async () => {
    const sandboxImage = 'reg.example/pa"use\\x:1';
    const r = await dump(containerdConfig({ sandboxImage, systemdCgroup: true }));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(values(r.stdout).get(`${CRI}|sandbox_image`)!)).toBe(sandboxImage);
  });

  it("the checks can fail: containerd rejects bad values, and a Docker-style file disables CRI", async () => {
    const good = containerdConfig({
      sandboxImage: "registry.k8s.io/pause:3.10",
      systemdCgroup: true,
    });
    // Unescaped quoting, as a naive writer would produce it.
    const unescaped = good.replace(
      'sandbox_image = "registry.k8s.io/pause:3.10"',
      'sandbox_image = "reg"istry"',
    );
    expect(unescaped).not.toBe(good);
    const bad = await dump(unescaped);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/toml/i);
    const wrongType = await dump(good.replace(/sandbox_image = ".*"/, "sandbox_image = 5"));
    expect(wrongType.code).not.toBe(0);
    expect(wrongType.stderr).toMatch(/convert 5/);
    // What hosted runners ship for Docker: the assertions above would see CRI disabled.
    const docker = await dump('disabled_plugins = ["cri"]\n');
    expect(docker.code, docker.stderr).toBe(0);
    expect(values(docker.stdout).get("|disabled_plugins")).toBe('["cri"]');
  });
});

describe("the containerd daemon with kubeforge's config", () => {
  let daemon: ChildProcess | undefined;
  afterAll(async () => {
    if (daemon?.exitCode === null) {
      daemon.kill("SIGTERM");
      await new Promise((r) => daemon!.once("exit", r));
    }
  });

  async function pluginsOf(config: string, name: string): Promise<string> {
    // Test-only additions keep the daemon's files in the temporary folder: root and state at
    // the top level (before any table), and its sockets and opt folder.
    const base = join(dir, name);
    const text = config.replace(
      /^version = 2$/m,
      `version = 2\nroot = "${base}/root"\nstate = "${base}/state"`,
    );
    const socket = `${base}/state/containerd.sock`;
    const file = `${base}.toml`;
    await writeFile(
      file,
      `${text}\n[grpc]\n  address = "${socket}"\n[ttrpc]\n  address = "${socket}.ttrpc"\n` +
        `[plugins."io.containerd.internal.v1.opt"]\n  path = "${base}/opt"\n`,
    );
    const proc = spawn("containerd", ["--config", file], { stdio: "ignore" });
    daemon = proc;
    try {
      for (let i = 0; i < 100; i++) {
        const r = await run(["ctr", "--address", socket, "plugins", "ls"]);
        if (r.code === 0) return r.stdout;
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error(`containerd (${name}) did not answer on ${socket}`);
    } finally {
      proc.kill("SIGTERM");
      await new Promise((res) =>
        proc.exitCode !== null ? res(undefined) : proc.once("exit", res),
      );
    }
  }

  it("loads the CRI plugin (and does not with Docker's CRI-less config)", async () => {
    const ours = await pluginsOf(
      containerdConfig({ sandboxImage: "registry.k8s.io/pause:3.10", systemdCgroup: true }),
      "ours",
    );
    expect(ours).toMatch(/^io\.containerd\.grpc\.v1\s+cri\s+\S+\s+ok\s*$/m);
    const docker = await pluginsOf(
      'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n',
      "docker",
    );
    expect(docker).not.toMatch(/^io\.containerd\.grpc\.v1\s+cri\s+\S+\s+ok/m);
  });
});

describe("registry hosts files", () => {
  it("are TOML with one host table per mirror, in order (read by Python's tomllib)", async () => {
    const files = registryHostsFiles({
      "docker.io": ["https://mirror.gcr.io", "http://10.0.0.5:5000"],
      "registry.k8s.io": ["https://k8s.mirror.example/v2-prefix"],
    });
    expect(files.map((f) => f.path)).toEqual([
      "/etc/containerd/certs.d/docker.io/hosts.toml",
      "/etc/containerd/certs.d/registry.k8s.io/hosts.toml",
    ]);
    const file = join(dir, "hosts.toml");
    await writeFile(file, files[0]!.content);
    const r = await run([
      "python3",
      "-c",
      "import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))",
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const parsed = JSON.parse(r.stdout) as { host: Record<string, { capabilities: string[] }> };
    expect(Object.keys(parsed.host)).toEqual(["https://mirror.gcr.io", "http://10.0.0.5:5000"]);
    expect(parsed.host["https://mirror.gcr.io"]!.capabilities).toEqual(["pull", "resolve"]);
    // No `server`: containerd falls back to the registry's default host after the mirrors.
    expect(parsed).not.toHaveProperty("server");
  });
});
