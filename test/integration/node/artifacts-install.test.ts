import { createHash } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { releaseArtifacts } from "../../../src/node/artifacts/catalog.js";
import {
  fetchArtifact,
  fetchKubeletOverride,
  type FetchedArtifact,
} from "../../../src/node/artifacts/fetch.js";
import { installArtifacts } from "../../../src/node/artifacts/install.js";
import { LocalHost } from "../../../src/remote/local.js";
import type { SshHost } from "../../../src/remote/ssh/host.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { connectTestHost } from "../../support/testbed-connect.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";

// Installing fetched artifacts on a testbed host over SSH, as the non-root sudo user `kf` and as
// root: files land at the install-kubeadm paths with their modes, owned by root; a second run
// writes nothing; only changed files (content or mode) are rewritten; a custom kubelet replaces
// the official one. The host's /usr/local/bin is the machine's folder in the testbed's SSH view,
// so the test overlays it inside the host's mount namespace first: nothing reaches the machine.

let server: ReleaseServer;
let bed: SshTestbed;
let h: SshTestHost;
let scratch: string;
let official: FetchedArtifact[];
const hosts: SshHost[] = [];
const rootfsDirs: string[] = [];
const machineHadKubelet = existsSync("/usr/local/bin/kubelet");
const machineKubeletMtime = machineHadKubelet ? statSync("/usr/local/bin/kubelet").mtimeMs : 0;

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function connect(user: string): Promise<SshHost> {
  const host = await connectTestHost(h, user);
  hosts.push(host);
  return host;
}

/** Runs a root shell command on the host; throws with its stderr when it fails. */
const onHost = (command: string) => h.sshOutput(command);

/** node path → "mode owner sha256" as the host's own tools see them. */
async function nodeState(paths: string[]): Promise<Record<string, string>> {
  const quoted = paths.map((p) => `'${p}'`).join(" ");
  const out = await onHost(
    `for f in ${quoted}; do printf '%s %s %s\\n' "$f" "$(stat -c '%a %U' "$f")" "$(sha256sum < "$f" | cut -d' ' -f1)"; done`,
  );
  return Object.fromEntries(
    out
      .trim()
      .split("\n")
      .map((l) => {
        const [path, ...rest] = l.split(" ");
        return [path!, rest.join(" ")];
      }),
  );
}

async function expected(fetched: FetchedArtifact[]): Promise<Record<string, string>> {
  const want: Record<string, string> = {};
  for (const f of fetched) {
    for (const file of f.files) {
      want[file.to] = `${file.mode.toString(8)} root ${sha256(await readFile(file.from))}`;
    }
  }
  return want;
}

const allPaths = () => official.flatMap((f) => f.files.map((x) => x.to)).sort();

beforeAll(async () => {
  server = await startReleaseServer();
  scratch = await mkdtemp(join(tmpdir(), "kubeforge-artifacts-install-"));
  const opts = { cacheDir: join(scratch, "cache"), ca: server.ca };
  official = await Promise.all(
    releaseArtifacts("v1.35.2", "x64", server.sources).map((a) => fetchArtifact(a, opts)),
  );
  bed = await createTestbed(["art1"], { ssh: true });
  h = bed.hosts[0]!;
  // The host's own /usr/local/bin: an overlay whose writable layer is in the host's /run (tmpfs).
  await onHost(
    "mkdir -p /run/kf-ulb/upper /run/kf-ulb/work && mount -t overlay kubeforge-test -o lowerdir=/usr/local/bin,upperdir=/run/kf-ulb/upper,workdir=/run/kf-ulb/work /usr/local/bin",
  );
});

afterAll(async () => {
  await Promise.all(hosts.map((x) => x.close()));
  await bed?.stop();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
  for (const dir of rootfsDirs) await rm(dir, { recursive: true, force: true });
  // Nothing was written to the machine's own /usr/local/bin.
  expect(existsSync("/usr/local/bin/kubelet")).toBe(machineHadKubelet);
  if (machineHadKubelet) {
    expect(statSync("/usr/local/bin/kubelet").mtimeMs).toBe(machineKubeletMtime);
  }
});

describe("installArtifacts over SSH", () => {
  it("as a sudo user: installs kubelet, kubectl, crictl and the CNI plugins, root-owned, with their modes", async () => {
    const kf = await connect(h.ssh.sudoUser);
    expect(kf.uid).not.toBe(0);
    const lines: string[] = [];
    const r = await installArtifacts(kf, official, { log: (l) => lines.push(l) });
    expect([...r.installed].sort()).toEqual(allPaths());
    expect(r.unchanged).toEqual([]);
    expect(allPaths()).toEqual([
      "/opt/cni/bin/LICENSE",
      "/opt/cni/bin/bridge",
      "/opt/cni/bin/host-local",
      "/opt/cni/bin/loopback",
      "/opt/cni/bin/portmap",
      "/usr/local/bin/crictl",
      "/usr/local/bin/kubectl",
      "/usr/local/bin/kubelet",
    ]);
    expect(await nodeState(allPaths())).toEqual(await expected(official));
    // The installed kubelet runs on the host (a copy of /bin/true).
    expect((await h.sshRun("/usr/local/bin/kubelet", { user: h.ssh.sudoUser })).code).toBe(0);
    // The CNI plugins are in the host's rootfs, where the testbed binds /opt/cni.
    expect((await stat(h.path("/opt/cni/bin/bridge"))).mode & 0o777).toBe(0o755);
    expect(
      lines.some((l) =>
        l.startsWith(`${h.name}: installed /usr/local/bin/kubelet (kubelet v1.35.2, sha256 `),
      ),
    ).toBe(true);
  });

  it("as the sudo user again: nothing is written", async () => {
    const kf = await connect(h.ssh.sudoUser);
    const before = await onHost("stat -c '%i %Y' /usr/local/bin/kubelet /opt/cni/bin/bridge");
    const r = await installArtifacts(kf, official, {});
    expect(r.installed).toEqual([]);
    expect([...r.unchanged].sort()).toEqual(allPaths());
    // Same inodes: no file was replaced.
    expect(await onHost("stat -c '%i %Y' /usr/local/bin/kubelet /opt/cni/bin/bridge")).toBe(before);
  });

  it("as root: rewrites exactly the files whose content or mode changed", async () => {
    const root = await connect("root");
    await onHost("printf changed > /usr/local/bin/kubectl && chmod 0700 /opt/cni/bin/loopback");
    const r = await installArtifacts(root, official, {});
    expect([...r.installed].sort()).toEqual(["/opt/cni/bin/loopback", "/usr/local/bin/kubectl"]);
    expect(r.unchanged).toHaveLength(allPaths().length - 2);
    expect(await nodeState(allPaths())).toEqual(await expected(official));
    const again = await installArtifacts(root, official, {});
    expect(again.installed).toEqual([]);
  });

  it("installs a custom kubelet (path, then pinned URL) in place of the official one", async () => {
    const kf = await connect(h.ssh.sudoUser);
    const opts = { cacheDir: join(scratch, "cache"), ca: server.ca };
    const own = join(scratch, "kubelet-build");
    await writeFile(own, await server.elf("amd64", "my kubelet build"), { mode: 0o755 });
    const fromPath = await fetchKubeletOverride(own, opts);
    const r = await installArtifacts(kf, [...official, fromPath], {});
    expect(r.installed).toEqual(["/usr/local/bin/kubelet"]);
    expect((await nodeState(["/usr/local/bin/kubelet"]))["/usr/local/bin/kubelet"]).toBe(
      `755 root ${fromPath.sha256}`,
    );

    const body = await server.elf("amd64", "my kubelet from a URL");
    server.put("/builds/kubelet", body);
    const fromUrl = await fetchKubeletOverride(
      `${server.url}/builds/kubelet#sha256=${sha256(body)}`,
      opts,
    );
    const r2 = await installArtifacts(kf, [...official, fromUrl], {});
    expect(r2.installed).toEqual(["/usr/local/bin/kubelet"]);
    expect((await nodeState(["/usr/local/bin/kubelet"]))["/usr/local/bin/kubelet"]).toBe(
      `755 root ${sha256(body)}`,
    );
    expect((await installArtifacts(kf, [...official, fromUrl], {})).installed).toEqual([]);
  });

  it("refuses artifacts built for another architecture before writing anything", async () => {
    const kf = await connect(h.ssh.sudoUser);
    const opts = { cacheDir: join(scratch, "cache"), ca: server.ca };
    const [armKubelet] = releaseArtifacts("v1.35.2", "arm64", server.sources);
    const arm = await fetchArtifact(armKubelet!, opts);
    const before = await nodeState(["/usr/local/bin/kubelet"]);
    await expect(installArtifacts(kf, [official[1]!, arm], {})).rejects.toThrow(
      `${h.name}: kubelet v1.35.2 from ${armKubelet!.url} is built for arm64, but the node is amd64`,
    );
    expect(await nodeState(["/usr/local/bin/kubelet"])).toEqual(before);
  });
});

describe("installArtifacts on a LocalHost with a rootfs", () => {
  it("installs under the rootfs, then finds everything unchanged (sha256sum sees the rootfs paths)", async () => {
    const rootfs = await mkdtemp(join(tmpdir(), "kubeforge-artifacts-rootfs-"));
    rootfsDirs.push(rootfs);
    const host = new LocalHost({ rootfs });
    const first = await installArtifacts(host, official, {});
    expect([...first.installed].sort()).toEqual(allPaths());
    for (const f of official) {
      for (const file of f.files) {
        const s = await stat(join(rootfs, file.to));
        expect(s.mode & 0o777).toBe(file.mode);
        expect(sha256(await readFile(join(rootfs, file.to)))).toBe(
          sha256(await readFile(file.from)),
        );
      }
    }
    const second = await installArtifacts(host, official, {});
    expect(second.installed).toEqual([]);
    expect([...second.unchanged].sort()).toEqual(allPaths());
  });
});
