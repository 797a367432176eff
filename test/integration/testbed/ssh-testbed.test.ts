import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Client, type SFTPWrapper } from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  netnsOf,
  createTestbed,
  type SshTestbed,
  type SshTestHost,
} from "../../support/testbed.js";
import { SSH_NODE_DIRS } from "../../support/testbed-ssh.js";

// The testbed's SSH mode, checked from outside with the real OpenSSH client (and ssh2 for
// password logins), /proc and the machine's own files: each host answers on <address>:22 with
// its own host key and host name, sessions write into the host's rootfs and never into the
// machine, `systemctl` in a session is the simulated node's, the test users' sudo works as on
// a VM, and the faults the SSH tests need (sshd stopped, sessions dropped, link down) are real.

const execFileAsync = promisify(execFile);

let bed: SshTestbed;
let a: SshTestHost;
let b: SshTestHost;
let scratch: string;
/** The machine's node folders before the testbed: present or not, and their entries. */
const machineBefore = new Map<string, string[] | undefined>();

async function listing(dir: string): Promise<string[] | undefined> {
  return readdir(dir).then(
    (entries) => entries.sort(),
    () => undefined,
  );
}

/** `ssh` exactly as a person would run it, pinned to one known_hosts line. */
async function openssh(
  host: SshTestHost,
  knownHostsLine: string,
  user: string,
  command: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const known = join(scratch, `known-${host.name}-${Math.random().toString(36).slice(2)}`);
  await writeFile(known, `${knownHostsLine}\n`);
  return execFileAsync(
    "ssh",
    [
      "-F",
      "/dev/null",
      "-i",
      host.ssh.privateKeyFile,
      "-o",
      `UserKnownHostsFile=${known}`,
      "-o",
      "GlobalKnownHostsFile=/dev/null",
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=5",
      `${user}@${host.ssh.host}`,
      command,
    ],
    { timeout: 30_000 },
  ).then(
    (r) => ({ code: 0, ...r }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof e.code === "number" ? e.code : 1,
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? "",
    }),
  );
}

/** How a password login through ssh2 ends: "ready" or the error's level/message. */
function passwordLogin(host: SshTestHost, user: string, password: string): Promise<string> {
  return new Promise((resolve) => {
    const c = new Client();
    c.on("ready", () => {
      c.end();
      resolve("ready");
    });
    c.on("error", (e: Error & { level?: string }) => resolve(e.level ?? e.message));
    c.connect({
      host: host.ssh.host,
      port: host.ssh.port,
      username: user,
      password,
      tryKeyboard: false,
      readyTimeout: 10_000,
      hostVerifier: () => true,
    });
  });
}

function connectOutcome(host: string, port: number, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.setTimeout(timeoutMs, () => {
      s.destroy();
      resolve("TIMEOUT");
    });
    s.on("connect", () => {
      s.destroy();
      resolve("CONNECTED");
    });
    s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

const ok = (r: { code: number; stdout: string; stderr: string }) => {
  expect(r.stderr, r.stdout).toBe("");
  expect(r.code).toBe(0);
  return r.stdout;
};

beforeAll(async () => {
  for (const d of ["/etc/kubernetes", ...SSH_NODE_DIRS]) machineBefore.set(d, await listing(d));
  scratch = await mkdtemp(join(tmpdir(), "kubeforge-ssh-testbed-test-"));
  bed = await createTestbed(["s-1", "s-2"], { ssh: true });
  [a, b] = bed.hosts as [SshTestHost, SshTestHost];
}, 120_000);

afterAll(async () => {
  await bed?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
}, 60_000);

describe("a testbed of SSH hosts", () => {
  it("answers as each host, with the host key whose fingerprint and known_hosts line it exposes", async () => {
    for (const h of bed.hosts) {
      const r = await openssh(h, h.ssh.knownHostsLine, "root", "hostname");
      expect(ok(r).trim()).toBe(h.name);
      expect(h.ssh).toMatchObject({ host: h.address, port: 22, user: "root" });
      // The key the server really presents, fingerprinted by ssh-keygen from ssh-keyscan.
      const scan = await execFileAsync("ssh-keyscan", ["-t", "ed25519", h.address]);
      expect(scan.stdout.trim()).toBe(h.ssh.knownHostsLine);
      const lf = await execFileAsync("sh", [
        "-c",
        'printf "%s\\n" "$1" | ssh-keygen -lf -',
        "sh",
        scan.stdout,
      ]);
      expect(lf.stdout).toContain(` ${h.ssh.hostKeyFingerprint} `);
      expect(h.ssh.privateKey).toBe(await readFile(h.ssh.privateKeyFile, "utf8"));
      expect(h.ssh.privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/);
    }
    expect(a.ssh.hostKeyFingerprint).not.toBe(b.ssh.hostKeyFingerprint);
    const mode = (await execFileAsync("stat", ["-c", "%a", a.ssh.privateKeyFile])).stdout.trim();
    expect(mode).toBe("600");
  });

  it("is refused by a strict client pinned to another host's key", async () => {
    const wrongPin = b.ssh.knownHostsLine.replace(b.address, a.address);
    const r = await openssh(a, wrongPin, "root", "hostname");
    expect(r.code).toBe(255);
    expect(r.stderr).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    expect(r.stdout).toBe("");
  });

  it("runs sshd in the host's network namespace, apart from the machine's mount and UTS namespaces", async () => {
    for (const h of bed.hosts) {
      const pid = await h.sshdPid();
      expect(pid).toBeDefined();
      expect(netnsOf(pid!)).toBe(h.netnsId);
      expect(await h.netnsPids()).toContain(pid);
      expect(await readlink(`/proc/${pid}/ns/mnt`)).not.toBe(await readlink("/proc/self/ns/mnt"));
      expect(await readlink(`/proc/${pid}/ns/uts`)).not.toBe(await readlink("/proc/self/ns/uts"));
    }
    const logs = await bed.sshLogs(a);
    expect(logs).toContain(`Server listening on ${a.address} port 22`);
    expect(logs).toMatch(/Accepted publickey for root from /);
  });

  it("puts what a session writes in the node folders into the host's rootfs, not the machine's", async () => {
    ok(await a.sshRun("mkdir -p /etc/kubernetes/pki && echo from-ssh > /etc/kubernetes/x"));
    expect(await readFile(a.path("etc/kubernetes/x"), "utf8")).toBe("from-ssh\n");
    // Every node folder is the rootfs's.
    const script = SSH_NODE_DIRS.map((d) => `echo ${d} > ${d}/probe`).join(" && ");
    ok(await a.sshRun(script));
    for (const d of SSH_NODE_DIRS) {
      expect(await readFile(a.path(`${d.slice(1)}/probe`), "utf8"), d).toBe(`${d}\n`);
    }
    // The other host and the machine see none of it.
    expect(existsSync(b.path("etc/kubernetes/x"))).toBe(false);
    const onB = await b.sshRun("cat /etc/kubernetes/x");
    expect(onB.code).not.toBe(0);
    for (const [d, before] of machineBefore) expect(await listing(d), d).toEqual(before);
  });

  it("serves SFTP and TCP forwarding to ssh2, as kubeforge's SshHost uses them", async () => {
    const c = new Client();
    await new Promise<void>((resolve, reject) => {
      c.on("ready", () => resolve()).on("error", reject);
      c.connect({
        host: a.ssh.host,
        port: a.ssh.port,
        username: a.ssh.user,
        privateKey: a.ssh.privateKey,
        readyTimeout: 10_000,
        hostVerifier: (key: Buffer) =>
          `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}` ===
          a.ssh.hostKeyFingerprint,
      });
    });
    try {
      const sftp = await new Promise<SFTPWrapper>((resolve, reject) =>
        c.sftp((e, s) => (e ? reject(e) : resolve(s))),
      );
      await new Promise<void>((resolve, reject) =>
        sftp.writeFile("/var/lib/kubelet/over-sftp", "sftp\n", (e) => (e ? reject(e) : resolve())),
      );
      expect(await readFile(a.path("var/lib/kubelet/over-sftp"), "utf8")).toBe("sftp\n");
      // direct-tcpip to an address as the host sees it: its own sshd's banner comes back.
      const banner = await new Promise<string>((resolve, reject) =>
        c.forwardOut("127.0.0.1", 0, a.address, 22, (e, stream) => {
          if (e) return reject(e);
          stream.once("data", (d: Buffer) => {
            resolve(d.toString());
            stream.end();
          });
        }),
      );
      expect(banner).toMatch(/^SSH-2\.0-OpenSSH_/);
    } finally {
      c.end();
    }
  });

  it("keeps files written elsewhere under /etc on the host only", async () => {
    ok(
      await a.sshRun(
        "mkdir -p /etc/sysctl.d && echo 'net.ipv4.ip_forward = 1' > /etc/sysctl.d/99-kf-test.conf",
      ),
    );
    expect(ok(await a.sshRun("cat /etc/sysctl.d/99-kf-test.conf"))).toBe(
      "net.ipv4.ip_forward = 1\n",
    );
    expect(existsSync("/etc/sysctl.d/99-kf-test.conf")).toBe(false);
    expect((await b.sshRun("test -e /etc/sysctl.d/99-kf-test.conf")).code).toBe(1);
    // The name lookups of the non-SSH mode: every host by name, through the host's own files.
    expect(
      ok(await a.sshRun(`getent hosts ${b.name}`))
        .split(/\s+/)
        .slice(0, 2),
    ).toEqual([b.address, b.name]);
    expect(ok(await a.sshRun("cat /etc/hostname")).trim()).toBe(a.name);
  });

  it("runs the simulated node's systemctl in a session: is-active follows the node, start runs the kubelet in the host", async () => {
    const binEntries = (await readdir(a.node.binDir)).sort();
    expect(
      ok(await a.sshRun("ls /usr/local/sbin"))
        .trim()
        .split("\n"),
    ).toEqual(binEntries);
    expect(ok(await a.sshRun("command -v systemctl")).trim()).toBe("/usr/local/sbin/systemctl");
    const before = await a.sshRun("systemctl is-active kubelet");
    expect([before.code, before.stdout.trim()]).toEqual([3, "inactive"]);
    expect((await a.daemonPids()).kubelet).toBeUndefined();

    ok(await a.sshRun("systemctl start kubelet"));
    const { kubelet } = await a.daemonPids();
    expect(kubelet).toBeDefined();
    expect(netnsOf(kubelet!)).toBe(a.netnsId);
    const active = await a.sshRun("systemctl is-active kubelet");
    expect([active.code, active.stdout.trim()]).toEqual([0, "active"]);
    // b's node is another node.
    expect((await b.sshRun("systemctl is-active kubelet")).stdout.trim()).toBe("inactive");

    ok(await a.sshRun("systemctl stop kubelet"));
    expect((await a.sshRun("systemctl is-active kubelet")).stdout.trim()).toBe("inactive");
    expect((await a.daemonPids()).kubelet).toBeUndefined();
  });

  it("gives root sshd's superuser PATH, /usr/local/sbin first, and key-only login", async () => {
    expect(
      ok(await a.sshRun("echo $PATH"))
        .trim()
        .split(":")[0],
    ).toBe("/usr/local/sbin");
    expect(await passwordLogin(a, "root", a.ssh.password)).toBe("client-authentication");
  });

  it("has a user with password-less sudo, unknown to the machine", async () => {
    const user = a.ssh.sudoUser;
    expect(await readFile("/etc/passwd", "utf8")).not.toMatch(new RegExp(`^${user}:`, "m"));
    expect(ok(await openssh(a, a.ssh.knownHostsLine, user, "id -un")).trim()).toBe(user);
    const cat = await openssh(a, a.ssh.knownHostsLine, user, "sudo -n cat /etc/kubernetes/x");
    expect(ok(cat)).toBe("from-ssh\n");
    // sudo's secure_path reaches the simulated node's shims too.
    expect(ok(await a.sshRun("sudo -n sh -c 'command -v systemctl'", { user })).trim()).toBe(
      "/usr/local/sbin/systemctl",
    );
    // Without sudo, the user cannot write the node's folders.
    expect((await a.sshRun("touch /etc/kubernetes/y", { user })).code).not.toBe(0);
    expect(await passwordLogin(a, user, a.ssh.password)).toBe("ready");
    expect(await passwordLogin(a, user, `${a.ssh.password}-wrong`)).toBe("client-authentication");
  });

  it("has a user whose sudo asks for the password", async () => {
    const user = a.ssh.passwordSudoUser;
    const refused = await a.sshRun("sudo -n true", { user });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a password is required/);
    const withPassword = await a.sshRun("sudo -S -k -p '' cat /etc/kubernetes/x", {
      user,
      stdin: `${a.ssh.password}\n`,
    });
    expect(ok(withPassword)).toBe("from-ssh\n");
    const wrong = await a.sshRun("sudo -S -k -p '' true", { user, stdin: "nope\n" });
    expect(wrong.code).toBe(1);
  });

  describe("faults", () => {
    it("stops and starts sshd: refused while stopped, the host's files kept", async () => {
      await a.stopSsh();
      expect(await a.sshdPid()).toBeUndefined();
      expect(await connectOutcome(a.address, 22)).toBe("ECONNREFUSED");
      expect(await connectOutcome(b.address, 22)).toBe("CONNECTED");
      await a.startSsh();
      expect(ok(await a.sshRun("cat /etc/sysctl.d/99-kf-test.conf"))).toBe(
        "net.ipv4.ip_forward = 1\n",
      );
    });

    it("lets one host's sudo ask kf for a password through a sudoers.d file of that host", async () => {
      const user = a.ssh.sudoUser;
      ok(
        await a.sshRun(
          `printf '%s\\n' '${user} ALL=(ALL:ALL) ALL' > /etc/sudoers.d/kf-asks && chmod 0440 /etc/sudoers.d/kf-asks`,
        ),
      );
      try {
        const refused = await a.sshRun("sudo -n true", { user });
        expect(refused.stderr).toMatch(/a password is required/);
        ok(await b.sshRun("sudo -n true", { user }));
        expect(existsSync("/etc/sudoers.d/kf-asks")).toBe(false);
      } finally {
        ok(await a.sshRun("rm /etc/sudoers.d/kf-asks"));
      }
      ok(await a.sshRun("sudo -n true", { user }));
    });

    it("drops open sessions while new connections still work", async () => {
      const long = spawn(
        "ssh",
        [
          "-F",
          "/dev/null",
          "-i",
          a.ssh.privateKeyFile,
          "-o",
          `UserKnownHostsFile=${bed.knownHostsFile}`,
          "-o",
          "BatchMode=yes",
          `root@${a.address}`,
          "echo started; sleep 60",
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      const exited = new Promise<number | null>((r) => long.on("exit", (code) => r(code)));
      await new Promise<void>((r) => long.stdout.once("data", () => r()));
      const started = Date.now();
      expect(await a.dropSshSessions()).toBeGreaterThan(0);
      expect(await exited).toBe(255);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(ok(await a.sshRun("hostname")).trim()).toBe(a.name);
    });

    it("makes a host unreachable with its link down, and reachable again", async () => {
      await a.setLinkUp(false);
      try {
        expect(["TIMEOUT", "EHOSTUNREACH"]).toContain(await connectOutcome(a.address, 22, 2000));
        expect(await connectOutcome(b.address, 22)).toBe("CONNECTED");
      } finally {
        await a.setLinkUp(true);
      }
      expect(ok(await a.sshRun("hostname", { timeoutMs: 20_000 })).trim()).toBe(a.name);
    });
  });

  describe("stop", () => {
    it("ends sshd and the hosts' namespaces, and leaves the machine as it was", async () => {
      const pids = [...(await a.netnsPids()), ...(await b.netnsPids())];
      expect(pids.length).toBeGreaterThanOrEqual(4);
      const base = join(a.rootfs, "..", "..");
      await bed.stop();
      expect(pids.filter((pid) => netnsOf(pid) !== undefined)).toEqual([]);
      // (No connect attempt: with the bridge gone, the address follows the default route.)
      const route = await execFileAsync("ip", ["route", "get", a.address]);
      expect(route.stdout).not.toContain(bed.bridge);
      expect(existsSync(base)).toBe(false);
      expect(await readFile("/proc/self/mountinfo", "utf8")).not.toContain("kubeforge-testbed");
      for (const [d, before] of machineBefore) expect(await listing(d), d).toEqual(before);
    }, 60_000);
  });
});

describe("a test process that ends without stopping its SSH testbed", () => {
  it("still has its hosts removed by the exit hook", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/ssh-testbed-abandoned.ts", import.meta.url));
    const repo = fileURLToPath(new URL("../../../", import.meta.url));
    const r = await execFileAsync(process.execPath, ["--import", "tsx", fixture], {
      cwd: repo,
      // tsx keeps a cache in the temporary folder, which would outlive the test.
      env: { ...process.env, TSX_DISABLE_CACHE: "1" },
      timeout: 240_000,
    }).catch((e: { stdout?: string; stderr?: string }) => e);
    const line = (r.stdout ?? "").split("\n").find((l) => l.startsWith("{"));
    expect(line, r.stderr).toBeDefined();
    const seen = JSON.parse(line!) as {
      ns: string;
      pids: number[];
      base: string;
      hostname: string;
    };
    expect(seen.hostname).toBe("abandoned");
    expect(seen.pids.length).toBeGreaterThanOrEqual(2);
    expect(seen.pids.filter((pid) => netnsOf(pid) !== undefined)).toEqual([]);
    expect((await execFileAsync("ip", ["netns", "list"])).stdout).not.toContain(seen.ns);
    expect(existsSync(seen.base)).toBe(false);
  }, 300_000);
});
