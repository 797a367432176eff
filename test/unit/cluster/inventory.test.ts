import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inspectMachine } from "../../../src/cluster/inventory.js";
import { CommandError, type ExecOptions, type Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { HostDouble } from "../../support/host-double.js";

// What a host's inventory asks of the machine in one command: the OS, the cgroup version and the
// CRI sockets at kubeadm's known paths. The command is the real one, run by this machine's sh
// over a folder standing in for the host's /etc/os-release, /sys/fs/cgroup and /var/run.

let root: string;
const servers: Server[] = [];
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "kf-machine-"));
});
afterAll(async () => {
  for (const s of servers) s.close();
  await rm(root, { recursive: true, force: true });
});

/**
 * This machine, with the absolute paths of the machine script moved under `dir` (the script is
 * the product's; only the paths it names change).
 */
function hostAt(dir: string): Host {
  const local = new LocalHost();
  const moved = (a: string) =>
    a.replaceAll("/etc/", `${dir}/etc/`).replaceAll("/sys/", `${dir}/sys/`);
  return Object.assign(Object.create(local) as Host, {
    // The sockets it names are named back as the host's own paths.
    exec: async (argv: string[], opts?: ExecOptions) => {
      const r = await local.exec(
        argv.map((a, i) => (i === 2 ? moved(a) : i > 3 ? `${dir}${a}` : a)),
        opts,
      );
      return { ...r, stdout: r.stdout.replaceAll(`${dir}/var/run/`, "/var/run/") };
    },
  });
}

describe("inspectMachine", () => {
  it("reads PRETTY_NAME, the cgroup version and the sockets present, in kubeadm's order", async () => {
    const dir = join(root, "v2");
    await mkdir(join(dir, "etc"), { recursive: true });
    await mkdir(join(dir, "sys/fs/cgroup"), { recursive: true });
    await mkdir(join(dir, "var/run/crio"), { recursive: true });
    await writeFile(
      join(dir, "etc/os-release"),
      'NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 13 (trixie)"\n',
    );
    await writeFile(join(dir, "sys/fs/cgroup/cgroup.controllers"), "cpu io memory pids\n");
    // Sockets that exist (CRI-O's and cri-dockerd's); containerd's does not.
    for (const p of ["var/run/crio/crio.sock", "var/run/cri-dockerd.sock"]) {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(join(dir, p), resolve));
      servers.push(server);
    }
    expect(await inspectMachine(hostAt(dir))).toEqual({
      os: "Debian GNU/Linux 13 (trixie)",
      cgroupVersion: 2,
      criSockets: ["unix:///var/run/crio/crio.sock", "unix:///var/run/cri-dockerd.sock"],
    });
  });

  it("says unknown OS, cgroup v1 and no socket where there are none", async () => {
    expect(await inspectMachine(hostAt(join(root, "bare")))).toEqual({
      os: "unknown OS",
      cgroupVersion: 1,
      criSockets: [],
    });
  });

  it("fails naming the host and the command when the command fails", async () => {
    const failing = new HostDouble(new LocalHost(), {
      commands: [{ match: ["sh"], result: { code: 126, stderr: "sh: permission denied" } }],
    });
    const err = (await inspectMachine(failing).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(CommandError);
    expect(err.message).toMatch(/^local: "sh -c .*" exited with code 126: sh: permission denied$/);
  });
});
