import { readFileSync, readdirSync } from "node:fs";
import { chmod, copyFile, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshError } from "../../../src/remote/ssh/errors.js";
import { SshHost } from "../../../src/remote/ssh/host.js";
import type { SshHostOptions } from "../../../src/remote/ssh/types.js";
import { eventually, running, waitForFile } from "../../support/processes.js";
import { startSshd, type Sshd } from "../../support/sshd.js";

// Non-root logins and sudo, on a real sshd and Debian's sudo 1.9 with private account files:
// alice has password-less sudo, bob's sudo wants his password, carol has no sudo at all.
// sudo's own log (Defaults logfile) shows what it ran.

let sshd: Sshd;
let rootDir: string; // root-owned 0755: a non-root user cannot write in it
const hosts: SshHost[] = [];
const logLines: string[] = [];

function options(
  user: "alice" | "bob" | "carol",
  extra: Partial<SshHostOptions> = {},
): SshHostOptions {
  return {
    name: `node-${user}`,
    endpoint: { host: sshd.address, port: 22, user },
    credentials: { privateKey: sshd.keys.plain.privateKey },
    hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
    log: (l) => logLines.push(l),
    ...extra,
  };
}

async function connect(user: "alice" | "bob" | "carol", extra: Partial<SshHostOptions> = {}) {
  const h = await SshHost.connect(options(user, extra));
  hosts.push(h);
  return h;
}

/** Every process's argv on the machine right now. */
function allCommandLines(): string {
  const out: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      /* gone */
    }
  }
  return out.join("\n");
}

beforeAll(async () => {
  sshd = await startSshd({ umask: "077" });
  rootDir = join(sshd.dir, "root-owned");
  await mkdir(rootDir, { mode: 0o755 });
  await chmod(rootDir, 0o755);
});

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  await sshd?.close();
});

describe("sudo over SSH", () => {
  it("runs `sudo -n -- …` for a user with password-less sudo, and nothing extra for root", async () => {
    const alice = await connect("alice");
    expect(alice.uid).toBe(sshd.users.alice.uid);
    expect(alice.sudo).toEqual({ kind: "nopasswd" });
    expect((await alice.facts()).rootAccess).toBe(true);
    expect((await alice.exec(["id", "-u"])).stdout.trim()).toBe(String(sshd.users.alice.uid));
    const r = await alice.exec(["id", "-u"], { sudo: true });
    expect(r).toEqual({ code: 0, stdout: "0\n", stderr: "" });
    expect(await sshd.sudoLog()).toMatch(
      / : alice : PWD=[^;]+ ; USER=root ; COMMAND=\/usr\/bin\/timeout -k 5 0 id -u\n/,
    );
  });

  it("writes, reads and lists root-owned paths as alice, with exact modes under umask 077", async () => {
    const alice = await connect("alice");
    const file = join(rootDir, "etc/kubernetes/pki/ca.key");
    await alice.writeFile(file, "key material\n", 0o600);
    await alice.writeFile(join(rootDir, "etc/kubernetes/admin.conf"), "conf", 0o644);
    const s = await stat(file);
    expect([s.uid, s.mode & 0o7777]).toEqual([0, 0o600]);
    expect((await stat(join(rootDir, "etc/kubernetes/pki"))).mode & 0o7777).toBe(0o755);
    expect((await stat(join(rootDir, "etc/kubernetes/admin.conf"))).mode & 0o7777).toBe(0o644);
    expect((await alice.readFile(file)).toString()).toBe("key material\n");
    expect(await alice.readDir(join(rootDir, "etc/kubernetes"))).toEqual(["admin.conf", "pki"]);
    await alice.mkdirp(join(rootDir, "var/lib/etcd"), 0o700);
    expect((await stat(join(rootDir, "var/lib/etcd"))).mode & 0o7777).toBe(0o700);
    expect(await alice.stat(join(rootDir, "var/lib/etcd"))).toMatchObject({
      isDirectory: true,
      mode: 0o700,
    });
    await alice.remove(join(rootDir, "etc"), { recursive: true });
    expect(await alice.exists(join(rootDir, "etc"))).toBe(false);
  });

  it("uses `sudo -S` with the password on stdin once, ahead of the command's own input", async () => {
    const pw = sshd.users.bob.password;
    const bob = await connect("bob", { sudoPassword: pw });
    expect(bob.sudo).toEqual({ kind: "password" });
    expect((await bob.facts()).rootAccess).toBe(true);
    const input = Buffer.from([0, 1, 2, 255, 10, 13, 10]);
    const r = await bob.exec(["sh", "-c", "id -u; od -An -tx1"], { sudo: true, stdin: input });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(""); // no prompt, no echo: no PTY
    expect(r.stdout.split("\n")[0]).toBe("0");
    expect(r.stdout.split("\n").slice(1).join(" ").trim().split(/\s+/)).toEqual([
      "00",
      "01",
      "02",
      "ff",
      "0a",
      "0d",
      "0a",
    ]);
    expect(await sshd.sudoLog()).toMatch(
      / : bob : PWD=[^;]+ ; USER=root ; COMMAND=\/usr\/bin\/timeout -k 5 0 sh -c 'id -u; od -An -tx1'\n/,
    );

    // Files through the password sudo too.
    await bob.writeFile(join(rootDir, "bob/f"), "x", 0o640);
    expect((await stat(join(rootDir, "bob/f"))).uid).toBe(0);

    // While a sudo command runs, the password is in no process's argv.
    const running = bob.exec(["sleep", "2"], { sudo: true });
    await new Promise((r) => setTimeout(r, 1200));
    const commandLines = allCommandLines();
    await running;
    expect(commandLines).toContain("sleep 2");
    expect(commandLines).not.toContain(pw);
    expect(logLines.join("\n")).not.toContain(pw);
  });

  it("ends a sudo command at its time limit: the root process is gone too", async () => {
    const alice = await connect("alice");
    const pidFile = join(sshd.dir, "root-sleeper.pid");
    const r = await alice.exec(["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pidFile], {
      sudo: true,
      timeoutMs: 1500,
    });
    expect(r.code).toBe(124);
    const pid = Number(readFileSync(pidFile, "utf8"));
    // The time limit runs inside sudo, as root: it can end a root process.
    expect(await sshd.sudoLog()).toContain(`COMMAND=/usr/bin/timeout -k 5 2 sh -c`);
    expect(await eventually(() => !running(pid), 5000)).toBe(true);
  });

  it("cancelling a sudo command ends the root process: sudo relays the TERM it is sent", async () => {
    const alice = await connect("alice");
    const pidFile = join(sshd.dir, "root-cancelled.pid");
    const controller = new AbortController();
    const run = alice.exec(["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pidFile], {
      sudo: true,
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    const pid = Number(await waitForFile(pidFile, 10_000));
    expect(readFileSync(`/proc/${pid}/status`, "utf8")).toMatch(/^Uid:\s+0\s/m);
    controller.abort();
    await expect(run).rejects.toThrow(/: cancelled "sh -c /);
    expect(await eventually(() => !running(pid), 5000)).toBe(true);
  });

  // A root command that ignores TERM and has no time limit: only the KILL that `timeout`
  // (always there under sudo) sends after the relayed TERM can end it.
  const stubborn = (pidFile: string) => [
    "sh",
    "-c",
    'trap "" TERM; echo $$ > "$1"; exec sleep 60',
    "sh",
    pidFile,
  ];

  it.each(["alice", "bob"] as const)(
    "cancelling a root command that ignores TERM ends it too (%s: sudo -n / sudo -S)",
    async (user) => {
      const host = await connect(
        user,
        user === "bob" ? { sudoPassword: sshd.users.bob.password } : {},
      );
      expect(host.sudo.kind).toBe(user === "bob" ? "password" : "nopasswd");
      const pidFile = join(sshd.dir, `stubborn-${user}.pid`);
      const controller = new AbortController();
      const run = host.exec(stubborn(pidFile), { sudo: true, signal: controller.signal });
      const pid = Number(await waitForFile(pidFile, 10_000));
      expect(readFileSync(`/proc/${pid}/status`, "utf8")).toMatch(/^Uid:\s+0\s/m);
      controller.abort();
      await expect(run).rejects.toThrow(/: cancelled "sh -c trap/);
      expect(await eventually(() => !running(pid), 10_000)).toBe(true);
    },
    30_000,
  );

  it("ends a `sudo -S` command at its time limit, the root process too", async () => {
    const bob = await connect("bob", { sudoPassword: sshd.users.bob.password });
    const pidFile = join(sshd.dir, "stubborn-bob-limit.pid");
    const r = await bob.exec(stubborn(pidFile), { sudo: true, timeoutMs: 1500 });
    expect(r.code).toBe(124);
    expect(r.stderr).toBe("timed out after 1500 ms");
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(await eventually(() => !running(pid), 10_000)).toBe(true);
  }, 30_000);

  it("without sudoPassword, a sudo that wants one fails clearly; plain commands still work", async () => {
    const bob = await connect("bob");
    expect((await bob.exec(["id", "-un"])).stdout.trim()).toBe("bob");
    expect((await bob.facts()).rootAccess).toBe(false);
    const e = (await bob.exec(["id", "-u"], { sudo: true }).catch((x: unknown) => x)) as SshError;
    expect(e).toBeInstanceOf(SshError);
    expect(e.failure).toBe("sudo");
    expect(e.host).toBe("node-bob");
    expect(e.message).toBe(
      `node-bob (ssh://bob@${sshd.address}:22): sudo needs a password for user "bob": ` +
        'allow password-less sudo (NOPASSWD) for this user or give sudoPassword; cannot run "id -u" as root',
    );
    await expect(bob.writeFile(join(rootDir, "nope"), "x", 0o644)).rejects.toThrow(
      /sudo needs a password/,
    );
  });

  it("a wrong sudoPassword is refused once, never shown", async () => {
    const bob = await connect("bob", { sudoPassword: "not-bobs-password" });
    const e = (await bob.exec(["true"], { sudo: true }).catch((x: unknown) => x)) as SshError;
    expect(e.failure).toBe("sudo");
    expect(e.message).toBe(
      `node-bob (ssh://bob@${sshd.address}:22): sudo refused user "bob" with the sudoPassword given ` +
        '(sudo: 1 incorrect password attempt); cannot run "true" as root',
    );
    expect(e.message).not.toContain("not-bobs-password");
  });

  it("a user without sudo gets a message naming the user", async () => {
    const carol = await connect("carol", { sudoPassword: sshd.users.carol.password });
    const e = (await carol.exec(["true"], { sudo: true }).catch((x: unknown) => x)) as SshError;
    expect(e.failure).toBe("sudo");
    expect(e.message).toMatch(
      new RegExp(
        `\\(ssh://carol@${sshd.address}:22\\): sudo refused user "carol" with the sudoPassword given \\(.*carol is not in the sudoers file`,
      ),
    );
  });
});

describe("LocalHost as a non-root user", () => {
  // The same machine seen by a runner user: a script run as alice (password-less sudo) or
  // carol (no sudo), inside the fixture's mount namespace where those accounts exist.
  const script = (root: string) => `
import { LocalHost } from ${JSON.stringify(join(process.cwd(), "src/remote/local.ts"))};
const h = new LocalHost();
const out = {};
const step = async (name, fn) => {
  try { out[name] = await fn(); } catch (e) { out[name] = "error: " + e.message; }
};
await step("write", () => h.writeFile(${JSON.stringify(`${root}/etc/kubernetes/pki/sa.key`)}, "secret-key-data\\n", 0o600).then(() => "ok"));
await step("read", async () => (await h.readFile(${JSON.stringify(`${root}/etc/kubernetes/pki/sa.key`)})).toString());
await step("stat", () => h.stat(${JSON.stringify(`${root}/etc/kubernetes/pki/sa.key`)}));
await step("list", () => h.readDir(${JSON.stringify(`${root}/etc/kubernetes/pki`)}));
await step("mkdir", () => h.mkdirp(${JSON.stringify(`${root}/var/lib/etcd`)}, 0o700).then(() => "ok"));
await step("own", () => h.writeFile(${JSON.stringify(`${root}/../user-owned/file`)}, "mine", 0o644).then(() => "ok"));
await step("remove", () => h.remove(${JSON.stringify(`${root}/etc`)}, { recursive: true }).then(() => "ok"));
await step("gone", () => h.exists(${JSON.stringify(`${root}/etc`)}));
await step("sudo", async () => (await h.exec(["id", "-u"], { sudo: true })).stdout.trim());
await step("rootAccess", async () => (await h.facts()).rootAccess);
// A root command at its time limit, and one cancelled: this user cannot signal what sudo runs.
const sleeper = (pidFile) => ["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pidFile];
await step("timeout", async () => {
  const r = await h.exec(sleeper(${JSON.stringify(`${root}/../timeout.pid`)}), { sudo: true, timeoutMs: 1500 });
  return r.code + " " + r.stderr.trim();
});
await step("cancel", async () => {
  const c = new AbortController();
  setTimeout(() => c.abort(), 1500);
  await h.exec(sleeper(${JSON.stringify(`${root}/../cancel.pid`)}), { sudo: true, signal: c.signal });
  return "finished";
});
// One that ignores TERM and has no time limit: the KILL must come from inside sudo.
await step("cancelStubborn", async () => {
  const c = new AbortController();
  setTimeout(() => c.abort(), 1500);
  const argv = ["sh", "-c", 'trap "" TERM; echo $$ > "$1"; exec sleep 60', "sh", ${JSON.stringify(`${root}/../stubborn.pid`)}];
  await h.exec(argv, { sudo: true, signal: c.signal });
  return "finished";
});
process.stdout.write(JSON.stringify(out));
`;

  // The user may not be able to enter the checkout (a fresh clone in a 0700 temporary folder),
  // so the script is bundled and run with a copy of this Node, both in the fixture's folder.
  async function runAs(user: "alice" | "carol", root: string): Promise<Record<string, unknown>> {
    const file = join(sshd.dir, `local-${user}.mjs`);
    await build({
      stdin: { contents: script(root), resolveDir: process.cwd(), loader: "ts" },
      bundle: true,
      platform: "node",
      format: "esm",
      outfile: file,
      logLevel: "silent",
    });
    await chmod(file, 0o644);
    const node = join(sshd.dir, "node");
    if (!(await stat(node).catch(() => undefined))) {
      await copyFile(process.execPath, node);
      await chmod(node, 0o755);
    }
    const r = await sshd.run([node, file], { user, timeoutMs: 50_000 });
    if (r.code !== 0) throw new Error(`script as ${user} failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  }

  it("does root-owned file work through sudo -n, and its own files directly", async () => {
    const root = join(sshd.dir, "local-alice", "root");
    await mkdir(root, { recursive: true, mode: 0o755 });
    const userDir = join(sshd.dir, "local-alice", "user-owned");
    await mkdir(userDir, { mode: 0o755 });
    const { chown } = await import("node:fs/promises");
    await chown(userDir, sshd.users.alice.uid, sshd.users.alice.uid);

    const out = await runAs("alice", root);
    expect(out).toEqual({
      write: "ok",
      read: "secret-key-data\n",
      stat: { isFile: true, isDirectory: false, mode: 0o600, size: 16 },
      list: ["sa.key"],
      mkdir: "ok",
      own: "ok",
      remove: "ok",
      gone: false,
      sudo: "0",
      rootAccess: true,
      timeout: "124 timed out after 1500 ms",
      cancel:
        'error: local: cancelled "sh -c echo $$ > "$1"; exec sleep 30 sh ' +
        `${root}/../cancel.pid"`,
      cancelStubborn:
        'error: local: cancelled "sh -c trap "" TERM; echo $$ > "$1"; exec sleep 60 sh ' +
        `${root}/../stubborn.pid"`,
    });
    // Every root process is gone (before, a time limit ended sudo and left its command).
    for (const f of ["timeout.pid", "cancel.pid", "stubborn.pid"]) {
      const pid = Number(readFileSync(join(root, "..", f), "utf8"));
      expect(await eventually(() => !running(pid), 5000)).toBe(true);
    }
    expect((await stat(join(root, "var/lib/etcd"))).mode & 0o7777).toBe(0o700);
    expect((await stat(join(root, "var/lib/etcd"))).uid).toBe(0);
    expect((await stat(join(userDir, "file"))).uid).toBe(sshd.users.alice.uid); // no sudo needed there
    expect(await sshd.sudoLog()).toMatch(
      / : alice : PWD=\/ ; USER=root ; COMMAND=\/usr\/bin\/timeout -k 5 0 sh -c 'set -e#012/,
    );
    expect(await sshd.sudoLog()).not.toContain("secret-key-data");
  }, 90_000);

  it("without sudo, says what could not be done", async () => {
    const root = join(sshd.dir, "local-carol", "root");
    await mkdir(root, { recursive: true, mode: 0o755 });
    const out = await runAs("carol", root);
    expect(out.write).toMatch(
      new RegExp(`^error: local: cannot write ${root}/etc/kubernetes/pki/sa.key: .*sudo`),
    );
    expect(out.gone).toBe(false);
    expect(out.rootAccess).toBe(false); // preflight's IsPrivilegedUser fails for carol
  }, 60_000);
});
