import { spawn, type ChildProcess } from "node:child_process";
import { connect as tcpConnect } from "node:net";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshError } from "../../../src/remote/ssh/errors.js";
import { SshHost } from "../../../src/remote/ssh/host.js";
import type { SshHostOptions } from "../../../src/remote/ssh/types.js";
import { startSshd, type Sshd } from "../../support/sshd.js";
import { testDir } from "../../support/temp-dir.js";

// Port forwards and jump hosts over a real sshd. The namespace has an HTTP server on its own
// 127.0.0.1 and a second sshd on 127.0.0.1:2222 (its own host key): neither is reachable from
// the test process except through the outer sshd.

const HTTP_PORT = 18080;
let sshd: Sshd;
let http: ChildProcess;

function outer(extra: Partial<SshHostOptions> = {}): SshHostOptions {
  return {
    name: "cp-1",
    endpoint: { host: sshd.address, port: 22, user: "root" },
    credentials: { privateKey: sshd.keys.plain.privateKey },
    hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
    ...extra,
  };
}

function throughJump(extra: Partial<SshHostOptions> = {}): SshHostOptions {
  return {
    name: "inner",
    endpoint: { host: "127.0.0.1", port: 2222, user: "root" },
    credentials: {
      privateKey: sshd.keys.encrypted.privateKey,
      passphrase: sshd.keys.encrypted.passphrase!,
    },
    hostKeys: { knownHosts: [sshd.inner!.knownHostsLine] },
    jump: {
      endpoint: { host: sshd.address, port: 22, user: "root" },
      credentials: { privateKey: sshd.keys.plain.privateKey },
      hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
    },
    ...extra,
  };
}

async function get(port: number, path: string): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
  return r.text();
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", () => resolve(true));
  });
}

beforeAll(async () => {
  sshd = await startSshd({ inner: true });
  http = sshd.spawn([
    process.execPath,
    "-e",
    `require("http").createServer((q, s) => s.end("inside " + q.url)).listen(${HTTP_PORT}, "127.0.0.1", () => console.log("listening"))`,
  ]);
  await new Promise<void>((resolve, reject) => {
    http.stdout!.once("data", () => resolve());
    http.once("exit", (code) => reject(new Error(`http server exited (${code})`)));
  });
});

afterAll(async () => {
  http?.kill("SIGKILL");
  await sshd?.close();
});

describe("forward()", () => {
  it("reaches a server on the host's own loopback, for many connections at once", async () => {
    const host = await SshHost.connect(outer());
    try {
      const f = await host.forward("127.0.0.1", HTTP_PORT);
      const bodies = await Promise.all(Array.from({ length: 5 }, (_, i) => get(f.port, `/r${i}`)));
      expect(bodies).toEqual(Array.from({ length: 5 }, (_, i) => `inside /r${i}`));
      await f.close();
    } finally {
      await host.close();
    }
  });

  it("close() stops the listener and ends open connections; the host's close() ends the rest", async () => {
    const lines: string[] = [];
    const host = await SshHost.connect(outer({ log: (l) => lines.push(l) }));
    const f1 = await host.forward("127.0.0.1", HTTP_PORT);
    const f2 = await host.forward("127.0.0.1", HTTP_PORT);
    expect(f1.port).not.toBe(f2.port);

    const open = tcpConnect(f1.port, "127.0.0.1");
    const ended = new Promise<void>((r) => open.once("close", () => r()));
    open.on("error", () => {});
    await new Promise<void>((r) => open.once("connect", () => r()));
    await new Promise((r) => setTimeout(r, 300)); // the tunnel is up
    await f1.close();
    await ended;
    expect(await refuses(f1.port)).toBe(true);
    expect(await get(f2.port, "/still")).toBe("inside /still");

    // Nothing listens there on the host: the connection is accepted, then ended, and logged.
    const dead = await host.forward("127.0.0.1", 1);
    await expect(get(dead.port, "/")).rejects.toThrow();
    expect(
      lines.some((l) =>
        /^cp-1 \(ssh:\/\/[^)]+\): forward to 127\.0\.0\.1:1: forwarded connection failed:/.test(l),
      ),
    ).toBe(true);

    await host.close();
    expect(await refuses(f2.port)).toBe(true);
    expect(await refuses(dead.port)).toBe(true);
  });
});

describe("jump host", () => {
  it("connects to a host only the jump host can reach, checking both host keys", async () => {
    const host = await SshHost.connect(throughJump());
    try {
      expect(host.hostKeyFingerprint).toBe(sshd.inner!.fingerprint);
      expect(host.hostKeyFingerprint).not.toBe(sshd.hostKey.fingerprint);
      expect((await host.exec(["echo", "via jump"])).stdout).toBe("via jump\n");
      const f = await host.forward("127.0.0.1", HTTP_PORT);
      expect(await get(f.port, "/jumped")).toBe("inside /jumped");
    } finally {
      await host.close();
    }
  });

  it("refuses a jump host with the wrong key, naming it", async () => {
    const opts = throughJump();
    opts.jump!.hostKeys = { fingerprints: [sshd.inner!.fingerprint] };
    const e = (await SshHost.connect(opts).catch((x: unknown) => x)) as SshError;
    expect(e).toBeInstanceOf(SshError);
    expect(e.failure).toBe("host-key");
    expect(e.message).toBe(
      `inner (ssh://root@127.0.0.1:2222): jump host ssh://root@${sshd.address}:22: host key mismatch: ` +
        `expected ${sshd.inner!.fingerprint}, got ${sshd.hostKey.fingerprint} (ssh-ed25519)`,
    );
  });

  it("refuses the target's wrong key given as a [host]:port known_hosts line", async () => {
    const wrong = `[127.0.0.1]:2222 ${sshd.hostKey.publicKey}`;
    const e = (await SshHost.connect(throughJump({ hostKeys: { knownHosts: [wrong] } })).catch(
      (x: unknown) => x,
    )) as SshError;
    expect(e.failure).toBe("host-key");
    expect(e.message).toBe(
      `inner (ssh://root@127.0.0.1:2222): host key mismatch: expected ${sshd.hostKey.fingerprint}, ` +
        `got ${sshd.inner!.fingerprint} (ssh-ed25519)`,
    );
  });

  it("says the jump host cannot reach the target", async () => {
    const e = (await SshHost.connect(
      throughJump({
        endpoint: { host: "127.0.0.1", port: 2223, user: "root" },
        retries: 1,
        retryDelayMs: 50,
      }),
    ).catch((x: unknown) => x)) as SshError;
    expect(e.failure).toBe("unreachable");
    expect(e.message).toMatch(
      /^inner \(ssh:\/\/root@127\.0\.0\.1:2223\): the jump host cannot reach it: .*Connection refused.* \(after 2 attempts\)$/i,
    );
  });
});

describe("lifetime", () => {
  it("leaves nothing that keeps the process alive after close()", async () => {
    // A separate Node process: it must exit on its own once the host is closed.
    const script = join(sshd.dir, "exit-check.mts");
    await writeFile(
      script,
      `
import { SshHost } from ${JSON.stringify(join(process.cwd(), "src/remote/ssh/host.ts"))};
const before = process.getActiveResourcesInfo();
const opts = JSON.parse(process.argv[2]);
const host = await SshHost.connect(opts);
await host.exec(["true"]);
const f = await host.forward("127.0.0.1", ${HTTP_PORT});
const body = await (await fetch("http://127.0.0.1:" + f.port + "/x", { headers: { connection: "close" } })).text();
await host.close();
// Whatever was there before connecting (stdio pipes) may stay; nothing else.
const handles = process.getActiveResourcesInfo().filter((r) => !before.includes(r));
console.log(JSON.stringify({ body, handles }));
`,
    );
    const child = spawn(
      join(process.cwd(), "node_modules/.bin/node"),
      [join(process.cwd(), "node_modules/tsx/dist/cli.mjs"), script, JSON.stringify(throughJump())],
      // tsx keeps a cache (and a folder even without one) in the temporary folder: the test's own.
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TSX_DISABLE_CACHE: "1", TMPDIR: await testDir("kubeforge-tsx-") },
      },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const code = await new Promise<number | string>((resolve) => {
      const t = setTimeout(() => {
        child.kill("SIGKILL");
        resolve("still running after 30 s");
      }, 30_000);
      child.once("exit", (c) => {
        clearTimeout(t);
        resolve(c ?? -1);
      });
    });
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const result = JSON.parse(out.trim().split("\n").at(-1)!) as {
      body: string;
      handles: string[];
    };
    expect(result.body).toBe("inside /x");
    expect(result.handles).toEqual([]);
  }, 45_000);
});
