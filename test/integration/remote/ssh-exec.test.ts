import { KeyObject, randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { cpus, release, totalmem } from "node:os";
import { Socket } from "node:net";
import { join } from "node:path";
import ssh2 from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshHost, TIMED_OUT_CODE, nodeArch } from "../../../src/remote/ssh/host.js";
import { eventually, running, waitForFile } from "../../support/processes.js";
import { startSshd, type Sshd } from "../../support/sshd.js";

// Commands over a real sshd configured with MaxSessions 3 and a umask of 077.

let sshd: Sshd;
let host: SshHost;

beforeAll(async () => {
  sshd = await startSshd({ maxSessions: 3, umask: "077" });
  host = await SshHost.connect({
    name: "w1",
    endpoint: { host: sshd.address, port: 22, user: "root" },
    credentials: { privateKey: sshd.keys.plain.privateKey },
    hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
    maxSessions: 3,
  });
});

afterAll(async () => {
  await host?.close();
  await sshd?.close();
});

describe("SshHost.exec", () => {
  it("runs argv exactly: no shell expansion of arguments", async () => {
    const args = ["two words", "it's", "$HOME `id` $(id)", "", "*", "new\nline", "; exit 3"];
    const r = await host.exec(["printf", "%s\\0", ...args]);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\0").slice(0, -1)).toEqual(args);
  });

  it("passes stdin, and returns exit code and stderr as a result", async () => {
    const r = await host.exec(["sh", "-c", "tr a-z A-Z; echo oops >&2; exit 7"], {
      stdin: "hello\n",
    });
    expect(r).toEqual({ code: 7, stdout: "HELLO\n", stderr: "oops\n" });
    const missing = await host.exec(["no-such-command-kubeforge"]);
    expect(missing.code).toBe(127);
  });

  it("reports a command killed by a signal as 128 + signal", async () => {
    const r = await host.exec(["sh", "-c", "kill -TERM $$"]);
    expect(r.code).toBe(128 + 15);
  });

  it("ends a command at its time limit, remote process included", async () => {
    const pidFile = join(sshd.dir, "sleeper.pid");
    const started = Date.now();
    const r = await host.exec(["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pidFile], {
      timeoutMs: 2000,
    });
    expect(Date.now() - started).toBeLessThan(6000);
    expect(r.code).toBe(TIMED_OUT_CODE);
    expect(r.stderr).toContain("timed out after 2000 ms");
    const pid = Number(await readFile(pidFile, "utf8"));
    expect(pid).toBeGreaterThan(1);
    // The namespace shares the machine's pid namespace: the test sees the remote process.
    expect(await eventually(() => !running(pid), 4000)).toBe(true);
  });

  it("kills a command that ignores SIGTERM (timeout -k)", async () => {
    const pidFile = join(sshd.dir, "stubborn.pid");
    const r = await host.exec(
      ["sh", "-c", `trap '' TERM; echo $$ > "$1"; exec sleep 60`, "sh", pidFile],
      { timeoutMs: 2000 },
    );
    expect(r.code).toBe(TIMED_OUT_CODE);
    const pid = Number(await readFile(pidFile, "utf8"));
    // TERM at 2 s is ignored; KILL follows 5 s later.
    expect(await eventually(() => !running(pid), 2500)).toBe(false);
    expect(await eventually(() => !running(pid), 8000)).toBe(true);
  }, 20_000);

  it("cancelled as root: ends the remote process group and rejects naming the host and command", async () => {
    // sshd refuses signal requests on root logins ("session signalling requires privilege
    // separation"); kubeforge signals the command's process group itself.
    const pidFile = join(sshd.dir, "cancelled.pid");
    const childFile = join(sshd.dir, "cancelled-child.pid");
    const controller = new AbortController();
    const argv = [
      "sh",
      "-c",
      'sleep 300 & echo $! > "$2"; echo $$ > "$1"; wait',
      "sh",
      pidFile,
      childFile,
    ];
    const started = Date.now();
    const run = host.exec(argv, { signal: controller.signal });
    const pid = Number(await waitForFile(pidFile, 10_000));
    const child = Number(await readFile(childFile, "utf8"));
    controller.abort(new Error("stopped"));
    const err = (await run.catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(`${host.label}: cancelled "${argv.join(" ")}"`);
    expect((err.cause as Error).message).toBe("stopped");
    expect(Date.now() - started).toBeLessThan(5000);
    // The command and what it started are gone (no time limit would have ended them).
    expect(running(pid)).toBe(false);
    expect(await eventually(() => !running(child), 2000)).toBe(true);
    // Already cancelled: nothing runs; and the connection still serves commands.
    await expect(
      host.exec(["touch", `${pidFile}.late`], { signal: controller.signal }),
    ).rejects.toThrow("cancelled");
    expect(await stat(`${pidFile}.late`).catch(() => undefined)).toBeUndefined();
    expect((await host.exec(["echo", "ok"])).stdout).toBe("ok\n");
  }, 30_000);

  it("cancelled as root: a command that ignores TERM is killed a few seconds later", async () => {
    const pidFile = join(sshd.dir, "cancelled-stubborn.pid");
    const controller = new AbortController();
    const argv = ["sh", "-c", `trap '' TERM; echo $$ > "$1"; while :; do sleep 1; done`];
    const run = host.exec([...argv, "sh", pidFile], { signal: controller.signal });
    const pid = Number(await waitForFile(pidFile, 10_000));
    const outcome = run.catch((e: unknown) => e);
    controller.abort();
    // TERM is ignored; KILL follows 5 s after it, and the answer once the command is gone.
    expect(await eventually(() => !running(pid), 3000)).toBe(false);
    expect(await eventually(() => !running(pid), 6000)).toBe(true);
    expect(String(await outcome)).toContain("cancelled");
  }, 30_000);

  it("cancelled as root at once: the command is ended even when the cancel comes before it ran", async () => {
    const pidFile = join(sshd.dir, "cancelled-early.pid");
    const controller = new AbortController();
    const run = host.exec(["sh", "-c", 'echo $$ > "$1"; exec sleep 300', "sh", pidFile], {
      signal: controller.signal,
    });
    controller.abort();
    await expect(run).rejects.toThrow("cancelled");
    // The shell may not have got as far as writing its pid: then nothing ran.
    const pid = Number(await readFile(pidFile, "utf8").catch(() => "0"));
    if (pid > 0) expect(await eventually(() => !running(pid), 3000)).toBe(true);
  }, 30_000);

  it("a command that could be cancelled keeps its stderr and exit code as they were", async () => {
    const r = await host.exec(["sh", "-c", "echo out; printf 'one\\ntwo' >&2; exit 3"], {
      signal: new AbortController().signal,
    });
    expect(r).toEqual({ code: 3, stdout: "out\n", stderr: "one\ntwo" });
  });

  it("runs 20 commands at once over a server allowing 3 sessions", async () => {
    // Control: without a limit, the same server refuses channels past its MaxSessions.
    const raw = new ssh2.Client();
    await new Promise<void>((resolve, reject) => {
      raw.once("ready", resolve).once("error", reject);
      raw.connect({
        host: sshd.address,
        username: "root",
        privateKey: sshd.keys.plain.privateKey,
        hostVerifier: () => true,
      });
    });
    const rawResults = await Promise.all(
      Array.from(
        { length: 6 },
        () =>
          new Promise<string>((resolve) =>
            raw.exec("sleep 1", (err, ch) => {
              if (err) return resolve(err.message);
              ch.on("close", () => resolve("ok")).resume();
            }),
          ),
      ),
    );
    raw.end();
    expect(rawResults.filter((r) => r !== "ok").length).toBeGreaterThan(0);

    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => host.exec(["sh", "-c", `sleep 0.3; echo ${i}`])),
    );
    expect(results.map((r) => r.stdout.trim())).toEqual(
      Array.from({ length: 20 }, (_, i) => String(i)),
    );
    expect(results.every((r) => r.code === 0)).toBe(true);
    // ceil(20 / 3) rounds of 0.3 s at least: never more than 3 at once.
    expect(Date.now() - started).toBeGreaterThanOrEqual(7 * 300);
  }, 40_000);
});

describe("SshHost's connection", () => {
  it("sends the packets of commands started together in shared writes", async () => {
    // Every socket's writes, counted where they reach the system (one call per _write or
    // _writev): ssh2 alone writes each packet in a call of its own.
    const proto = Socket.prototype as unknown as {
      _write: (...a: unknown[]) => unknown;
      _writev: (chunks: unknown[], ...a: unknown[]) => unknown;
    };
    const { _write, _writev } = proto;
    let calls = 0;
    let packets = 0;
    proto._write = function (this: Socket, ...a: unknown[]) {
      calls++;
      packets++;
      return _write.apply(this, a);
    };
    proto._writev = function (this: Socket, chunks: unknown[], ...a: unknown[]) {
      calls++;
      packets += chunks.length;
      return _writev.call(this, chunks, ...a);
    };
    try {
      const results = await Promise.all([1, 2, 3].map((i) => host.exec(["echo", String(i)])));
      expect(results.map((r) => r.stdout)).toEqual(["1\n", "2\n", "3\n"]);
    } finally {
      proto._write = _write;
      proto._writev = _writev;
    }
    expect(packets).toBeGreaterThan(calls);
  });
});

describe("SshHost's ciphers", () => {
  it("keep their per-packet keys as key objects after the handshake and after a rekeying", async () => {
    const client = (host as unknown as { client: ssh2.Client }).client;
    const protocol = (client as unknown as { _protocol: { rekey(): void } })._protocol;
    const ciphers = protocol as unknown as Record<string, Record<string, unknown>>;
    const keyOf = (c: Record<string, unknown>) => c._encKey ?? c._decipherKey ?? c._macKey;
    const before = ciphers._cipher!;
    expect(keyOf(before)).toBeInstanceOf(KeyObject);
    expect(keyOf(ciphers._decipher!)).toBeInstanceOf(KeyObject);
    // A key exchange of its own (ssh2 rekeys after 2^32 packets, or when the server asks).
    const rekeyed = new Promise((resolve) => client.once("handshake", resolve));
    protocol.rekey();
    await rekeyed;
    expect((await host.exec(["echo", "after rekeying"])).stdout).toBe("after rekeying\n");
    expect(ciphers._cipher).not.toBe(before);
    expect(keyOf(ciphers._cipher!)).toBeInstanceOf(KeyObject);
    expect(keyOf(ciphers._decipher!)).toBeInstanceOf(KeyObject);
  });
});

describe("SshHost files (root, sshd umask 077)", () => {
  it("round-trips a large binary file with the exact mode and 0755 parents", async () => {
    const data = randomBytes(2 * 1024 * 1024 + 3);
    const file = join(sshd.dir, "files/a/b/blob.bin");
    await host.writeFile(file, data, 0o644);
    expect((await readFile(file)).equals(data)).toBe(true);
    expect((await host.readFile(file)).equals(data)).toBe(true);
    expect((await stat(file)).mode & 0o7777).toBe(0o644);
    expect((await stat(join(sshd.dir, "files/a"))).mode & 0o7777).toBe(0o755);
    expect(await host.stat(file)).toEqual({
      isFile: true,
      isDirectory: false,
      mode: 0o644,
      size: data.length,
    });
  });

  it("replaces a file atomically: a reader sees the old or the new content, never a mix", async () => {
    const file = join(sshd.dir, "files/atomic.conf");
    const a = Buffer.alloc(1024 * 1024, "a");
    const b = Buffer.alloc(1024 * 1024, "b");
    await host.writeFile(file, a, 0o600);
    let done = false;
    const seen = new Set<string>();
    const reader = (async () => {
      while (!done) {
        const content = await readFile(file);
        seen.add(content.equals(a) ? "a" : content.equals(b) ? "b" : "mixed");
      }
    })();
    await host.writeFile(file, b, 0o600);
    done = true;
    await reader;
    expect(seen.has("mixed")).toBe(false);
    expect((await readFile(file)).equals(b)).toBe(true);
  });

  it("says which file is missing", async () => {
    const missing = join(sshd.dir, "files/nope");
    const e = (await host.readFile(missing).catch((x: unknown) => x)) as NodeJS.ErrnoException;
    expect(e.code).toBe("ENOENT");
    expect(e.message).toBe(
      `w1 (ssh://root@${sshd.address}:22): cannot read ${missing}: no such file or directory`,
    );
  });
});

describe("SshHost facts", () => {
  it("reads hostname, arch, kernel, cpus, memory and uid in one go", async () => {
    // The namespace shares this machine's kernel and hardware.
    const facts = await host.facts();
    const uname = await sshd.run(["uname", "-n"]);
    expect(facts).toEqual({
      hostname: uname.stdout.trim(),
      arch: process.arch,
      kernelRelease: release(),
      cpuCount: cpus().length,
      memoryBytes: totalmem(),
      uid: 0,
      rootAccess: true,
    });
    expect(await host.hostname()).toBe(facts.hostname);
  });

  it.each([
    ["x86_64", "x64"],
    ["aarch64", "arm64"],
    ["armv7l", "arm"],
    ["i686", "ia32"],
    ["ppc64le", "ppc64"],
    ["s390x", "s390x"],
    ["riscv64", "riscv64"],
    ["sparc64", "sparc64"],
  ])("maps uname -m %s to %s", (machine, arch) => {
    expect(nodeArch(machine)).toBe(arch);
  });
});
