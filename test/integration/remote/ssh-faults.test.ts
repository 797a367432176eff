import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshError } from "../../../src/remote/ssh/errors.js";
import { SshHost } from "../../../src/remote/ssh/host.js";
import type { SshHostOptions } from "../../../src/remote/ssh/types.js";
import { startSshd, type Sshd } from "../../support/sshd.js";

// Network faults against a real sshd: processes killed under a running command, packets
// silently dropped (iptables in the host's namespace), a server that is not up yet.

let sshd: Sshd;

function options(extra: Partial<SshHostOptions> = {}): SshHostOptions {
  return {
    name: "w1",
    endpoint: { host: sshd.address, port: 22, user: "root" },
    credentials: { privateKey: sshd.keys.plain.privateKey },
    hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
    ...extra,
  };
}

/** Resolves once the remote command has written its pid file. */
async function started(pidFile: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await readFile(pidFile, "utf8").catch(() => "")).trim()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${pidFile} never appeared`);
}

function settleTime<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; at: number }> {
  return p.then(
    (value) => ({ value, at: Date.now() }),
    (error: unknown) => ({ error, at: Date.now() }),
  );
}

beforeAll(async () => {
  sshd = await startSshd();
});

afterAll(async () => {
  await sshd?.close();
});

describe("SSH faults", () => {
  it("a connection dropped mid-command ends that command promptly; later calls fail fast", async () => {
    const host = await SshHost.connect(options());
    try {
      const pidFile = join(sshd.dir, "drop.pid");
      const running = settleTime(
        host.exec(["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pidFile]),
      );
      await started(pidFile);
      const dropped = Date.now();
      await sshd.dropConnections();
      const { error, at } = await running;
      expect(at - dropped).toBeLessThan(3000);
      expect(error).toBeInstanceOf(SshError);
      const e = error as SshError;
      expect(e.failure).toBe("dropped");
      expect(e.host).toBe("w1");
      expect(e.message).toMatch(
        new RegExp(
          `^w1 \\(ssh://root@${sshd.address.replace(/\./g, "\\.")}:22\\): the connection dropped while running "sh -c echo \\$\\$ > "\\$1"; exec sleep 30 sh ${pidFile.replace(/[.$]/g, "\\$&")}"`,
        ),
      );

      const t = Date.now();
      const later = (await host.exec(["true"]).catch((x: unknown) => x)) as SshError;
      const laterRead = (await host.readFile("/etc/hostname").catch((x: unknown) => x)) as SshError;
      expect(Date.now() - t).toBeLessThan(200);
      expect([later.failure, laterRead.failure]).toEqual(["dropped", "dropped"]);
      expect(later.message).toMatch(
        /^w1 \(ssh:\/\/root@.*:22\): the connection dropped earlier \(.+\); cannot run "true"$/,
      );
    } finally {
      await host.close();
    }
  });

  it("a command asked for after the socket went, before its close is seen, names the dropped connection", async () => {
    const host = await SshHost.connect(options());
    try {
      // The socket is destroyed; its close event comes a tick later.
      (host as unknown as { client: { _sock: { destroy(): void } } }).client._sock.destroy();
      const error = (await host.exec(["true"]).catch((e: unknown) => e)) as SshError;
      expect(error).toBeInstanceOf(SshError);
      expect(error.failure).toBe("dropped");
      expect(error.message).toBe(
        `w1 (ssh://root@${sshd.address}:22): the connection dropped; cannot run "true"`,
      );
    } finally {
      await host.close();
    }
  });

  it("keep-alives notice a peer that went silent", async () => {
    const host = await SshHost.connect(options({ keepaliveIntervalMs: 300, keepaliveCountMax: 2 }));
    try {
      const pidFile = join(sshd.dir, "silent.pid");
      const running = settleTime(
        host.exec(["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pidFile]),
      );
      await started(pidFile);
      const silent = Date.now();
      await sshd.blackhole(true);
      const { error, at } = await running;
      expect(at - silent).toBeLessThan(4000);
      expect((error as SshError).failure).toBe("dropped");
      expect((error as SshError).message).toContain("(Keepalive timeout)");
    } finally {
      await sshd.blackhole(false);
      await host.close();
    }
  });

  it("gives up at the connect timeout, retrying it as a transient failure", async () => {
    await sshd.blackhole(true);
    try {
      const lines: string[] = [];
      const t = Date.now();
      const e = (await SshHost.connect(
        options({
          connectTimeoutMs: 700,
          retries: 1,
          retryDelayMs: 100,
          log: (l) => lines.push(l),
        }),
      ).catch((x: unknown) => x)) as SshError;
      expect(Date.now() - t).toBeLessThan(4000);
      expect(e.failure).toBe("timeout");
      expect(e.message).toBe(
        `w1 (ssh://root@${sshd.address}:22): no SSH handshake within 700 ms (after 2 attempts)`,
      );
      expect(lines).toEqual([
        `w1 (ssh://root@${sshd.address}:22): no SSH handshake within 700 ms; retrying in 100 ms (attempt 2 of 2)`,
      ]);
    } finally {
      await sshd.blackhole(false);
    }
  });

  it("retries a refused connection with back-off until sshd is up (a booting VM)", async () => {
    await sshd.stop();
    const lines: string[] = [];
    const up = new Promise((r) => setTimeout(r, 800)).then(() => sshd.start());
    const host = await SshHost.connect(
      options({ retries: 8, retryDelayMs: 100, log: (l) => lines.push(l) }),
    );
    await up;
    try {
      expect((await host.exec(["echo", "up"])).stdout).toBe("up\n");
      expect(lines.length).toBeGreaterThan(0);
      expect(lines[0]).toBe(
        `w1 (ssh://root@${sshd.address}:22): cannot connect: connection refused (ECONNREFUSED); retrying in 100 ms (attempt 2 of 9)`,
      );
      // Exponential: 100, 200, 400 ms...
      expect(lines.map((l) => Number(/retrying in (\d+) ms/.exec(l)![1]))).toEqual(
        [100, 200, 400, 800, 1600, 3200, 6400, 10000].slice(0, lines.length),
      );
    } finally {
      await host.close();
    }
  });

  it("reports an unreachable host after the last retry", async () => {
    await sshd.stop();
    try {
      const e = (await SshHost.connect(options({ retries: 2, retryDelayMs: 20 })).catch(
        (x: unknown) => x,
      )) as SshError;
      expect(e.failure).toBe("unreachable");
      expect(e.message).toBe(
        `w1 (ssh://root@${sshd.address}:22): cannot connect: connection refused (ECONNREFUSED) (after 3 attempts)`,
      );
    } finally {
      await sshd.start();
    }
  });

  it("a cancel ends the connection attempts at once: between retries and mid-handshake", async () => {
    const label = `w1 (ssh://root@${sshd.address}:22)`;
    const reason = new Error("interrupted by SIGINT");
    const cancelled = async (fault: () => Promise<void>, firstLog: RegExp | undefined) => {
      const cancel = new AbortController();
      const lines: string[] = [];
      const connecting = settleTime(
        SshHost.connect(
          options({
            connectTimeoutMs: 20_000,
            retries: 5,
            retryDelayMs: 5_000,
            log: (l) => lines.push(l),
            signal: cancel.signal,
          }),
        ),
      );
      await fault();
      if (firstLog)
        await expect.poll(() => lines.join("\n"), { timeout: 10_000 }).toMatch(firstLog);
      else await new Promise((r) => setTimeout(r, 500));
      const at = Date.now();
      cancel.abort(reason);
      const { error } = await connecting;
      expect((error as SshError).failure).toBe("cancelled");
      expect((error as SshError).message).toBe(`${label}: cancelled while connecting`);
      expect((error as SshError).cause).toBe(reason);
      return (await connecting).at - at;
    };
    // Refused, waiting 5 s before the next attempt.
    await sshd.stop();
    try {
      expect(await cancelled(() => Promise.resolve(), /retrying in 5000 ms/)).toBeLessThan(500);
    } finally {
      await sshd.start();
    }
    // Packets dropped: the attempt waits for a handshake that does not come.
    await sshd.blackhole(true);
    try {
      expect(await cancelled(() => Promise.resolve(), undefined)).toBeLessThan(500);
    } finally {
      await sshd.blackhole(false);
    }
  });

  it("close() ends running commands and is idempotent", async () => {
    const host = await SshHost.connect(options());
    const running = settleTime(host.exec(["sleep", "30"]));
    await new Promise((r) => setTimeout(r, 300));
    await Promise.all([host.close(), host.close()]);
    const { error } = await running;
    expect((error as SshError).failure).toBe("dropped");
    expect((error as SshError).message).toContain(
      'the connection was closed while running "sleep 30"',
    );
    await host.close();
    await expect(host.exec(["true"])).rejects.toThrow(
      /the connection is closed; cannot run "true"/,
    );
  });
});
