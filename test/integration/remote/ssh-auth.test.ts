import { execFile, spawn, type ChildProcess } from "node:child_process";
import { appendFile, chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshError } from "../../../src/remote/ssh/errors.js";
import { SshHost } from "../../../src/remote/ssh/host.js";
import type { SshCredentials, SshHostOptions } from "../../../src/remote/ssh/types.js";
import { startSshd, type Sshd } from "../../support/sshd.js";

// Authentication against a real OpenSSH sshd: key, key with passphrase, password, a real
// ssh-agent; the configured key goes before agent keys; failures are never retried.

const run = promisify(execFile);

let sshd: Sshd;
let work: string;
const agents: ChildProcess[] = [];

/** A real ssh-agent on its own socket, holding `keyFiles` in that order. */
async function agentWith(keyFiles: string[]): Promise<string> {
  const sock = join(work, `agent-${agents.length}.sock`);
  const agent = spawn("ssh-agent", ["-D", "-a", sock], { stdio: "ignore" });
  agents.push(agent);
  for (let i = 0; i < 100; i++) {
    const r = await run("ssh-add", ["-l"], { env: { SSH_AUTH_SOCK: sock } }).catch(
      (e: { code?: number }) => e,
    );
    // ssh-add -l: 0 = keys listed, 1 = agent up but empty, 2 = no agent yet
    if ((r as { code?: number }).code !== 2) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const f of keyFiles) await run("ssh-add", ["-q", f], { env: { SSH_AUTH_SOCK: sock } });
  return sock;
}

function options(credentials: SshCredentials, extra: Partial<SshHostOptions> = {}): SshHostOptions {
  return {
    name: "n1",
    endpoint: { host: sshd.address, port: 22, user: "root" },
    credentials,
    hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
    retries: 3,
    retryDelayMs: 50,
    connectTimeoutMs: 10_000,
    ...extra,
  };
}

async function whoami(opts: SshHostOptions): Promise<string> {
  const host = await SshHost.connect(opts);
  try {
    return (await host.exec(["id", "-un"])).stdout.trim();
  } finally {
    await host.close();
  }
}

async function failure(opts: SshHostOptions): Promise<SshError> {
  const e = await SshHost.connect(opts).then(
    async (h) => {
      await h.close();
      return new Error("connected");
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(SshError);
  return e as SshError;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "kubeforge-ssh-auth-"));
  sshd = await startSshd({ passwordAuth: true, maxAuthTries: 2 });
});

afterAll(async () => {
  for (const a of agents) a.kill("SIGKILL");
  await sshd?.close();
  await rm(work, { recursive: true, force: true });
});

describe("SshHost authentication", () => {
  it("logs in with a private key", async () => {
    expect(await whoami(options({ privateKey: sshd.keys.plain.privateKey }))).toBe("root");
  });

  it("logs in with a passphrase-protected key (given as a Buffer)", async () => {
    const { privateKey, passphrase } = sshd.keys.encrypted;
    expect(
      await whoami(options({ privateKey: Buffer.from(privateKey), passphrase: passphrase! })),
    ).toBe("root");
  });

  it("refuses a wrong passphrase before dialling, without showing key or passphrase", async () => {
    const before = await sshd.connectionCount();
    const { privateKey } = sshd.keys.encrypted;
    const e = await failure(options({ privateKey, passphrase: "not-the-passphrase" }));
    expect(e.failure).toBe("authentication");
    expect(e.message).toMatch(
      new RegExp(
        `^n1 \\(ssh://root@${sshd.address.replace(/\./g, "\\.")}:22\\): cannot use the private key: `,
      ),
    );
    expect(e.message).not.toContain("not-the-passphrase");
    expect(e.message).not.toContain(privateKey.split("\n")[1]!);
    expect(await sshd.connectionCount()).toBe(before);
  });

  it("logs in with a password", async () => {
    const alice = sshd.users.alice;
    expect(
      await whoami(
        options(
          { password: alice.password },
          { endpoint: { host: sshd.address, port: 22, user: "alice" } },
        ),
      ),
    ).toBe("alice");
  });

  it("logs in with the keys of a real ssh-agent", async () => {
    const sock = await agentWith([sshd.keys.plain.file]);
    expect(await whoami(options({ agent: sock }))).toBe("root");
  });

  it("offers the configured key before the agent's keys (MaxAuthTries 2, three wrong agent keys)", async () => {
    const strangers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const f = join(work, `stranger${i}`);
      await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", f]);
      strangers.push(f);
    }
    const sock = await agentWith([...strangers, sshd.keys.plain.file]);
    // The agent alone runs out of tries before its right key: the server allows 2.
    const agentOnly = await failure(options({ agent: sock }));
    expect(agentOnly.failure).toBe("authentication");
    // The configured key first: in.
    expect(await whoami(options({ agent: sock, privateKey: sshd.keys.plain.privateKey }))).toBe(
      "root",
    );
  });

  it("makes exactly one attempt when authentication fails, whatever the retries", async () => {
    const before = await sshd.connectionCount();
    const e = await failure(options({ privateKey: sshd.keys.stranger.privateKey }, { retries: 5 }));
    expect(e.failure).toBe("authentication");
    expect(e.host).toBe("n1");
    expect(e.message).toBe(
      `n1 (ssh://root@${sshd.address}:22): authentication failed for user "root" (tried private key)`,
    );
    // sshd logs each connection once it has read it; give the log a moment.
    await new Promise((r) => setTimeout(r, 200));
    expect(await sshd.connectionCount()).toBe(before + 1);
  });

  it("reports a wrong password without showing it, and a missing agent socket", async () => {
    const e = await failure(
      options(
        { password: "wrong-password-123", agent: join(work, "no-such-agent.sock") },
        { endpoint: { host: sshd.address, port: 22, user: "alice" } },
      ),
    );
    expect(e.failure).toBe("authentication");
    expect(e.message).toMatch(
      /authentication failed for user "alice" \(tried agent keys \(the agent failed: .+\), password\)/,
    );
    expect(e.message).not.toContain("wrong-password-123");
  });

  describe("PKCS#8 keys (openssl genpkey's format), which OpenSSH reads and ssh2 does not", () => {
    /** A PKCS#8 key made by openssl, its public half (from ssh-keygen) authorized for root. */
    async function pkcs8Key(name: string, algorithm: string[], passphrase?: string) {
      const file = join(work, name);
      const cipher =
        passphrase !== undefined ? ["-aes-256-cbc", "-pass", `pass:${passphrase}`] : [];
      await run("openssl", ["genpkey", ...algorithm, ...cipher, "-out", file]);
      await chmod(file, 0o600);
      const privateKey = await readFile(file, "utf8");
      if (algorithm[1] !== "ed25519") {
        const pub = await run("ssh-keygen", ["-y", "-P", passphrase ?? "", "-f", file]);
        await appendFile(join(sshd.dir, "authorized_keys"), pub.stdout);
      }
      return privateKey;
    }

    it("logs in with an RSA and an ECDSA key, plain and encrypted", async () => {
      const rsa = await pkcs8Key("rsa.p8", [
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
      ]);
      expect(rsa).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      expect(await whoami(options({ privateKey: rsa }))).toBe("root");
      const ec = await pkcs8Key("ec.p8", [
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
      ]);
      expect(await whoami(options({ privateKey: ec }))).toBe("root");
      const sealed = await pkcs8Key("rsa-enc.p8", ["-algorithm", "RSA"], "pkcs8-pass");
      expect(sealed).toMatch(/^-----BEGIN ENCRYPTED PRIVATE KEY-----/);
      expect(await whoami(options({ privateKey: sealed, passphrase: "pkcs8-pass" }))).toBe("root");

      // A wrong or missing passphrase: said plainly, before dialling, nothing shown.
      const before = await sshd.connectionCount();
      const wrong = await failure(options({ privateKey: sealed, passphrase: "not-it" }));
      expect(wrong.message).toMatch(
        /: cannot use the private key: cannot decrypt the PKCS#8 key with the passphrase given$/,
      );
      expect(wrong.message).not.toContain("not-it");
      const none = await failure(options({ privateKey: sealed }));
      expect(none.message).toMatch(
        /: cannot use the private key: the PKCS#8 key is encrypted and no passphrase was given$/,
      );
      expect(await sshd.connectionCount()).toBe(before);
    });

    it("refuses an Ed25519 key in PKCS#8 form, saying which form to give", async () => {
      const ed = await pkcs8Key("ed.p8", ["-algorithm", "ed25519"]);
      const e = await failure(options({ privateKey: ed }));
      expect(e.failure).toBe("authentication");
      expect(e.message).toMatch(
        /: cannot use the private key: ed25519 keys in PKCS#8 form cannot be used \(OpenSSH cannot load them either\): give the key in OpenSSH's format, as ssh-keygen writes it$/,
      );
      expect(e.message).not.toContain(ed.split("\n")[1]!);
    });
  });

  it("needs some credentials", async () => {
    const e = await failure(options({}));
    expect(e.failure).toBe("authentication");
    expect(e.message).toBe(
      `n1 (ssh://root@${sshd.address}:22): no credentials: give a private key, a password or an SSH agent`,
    );
  });
});
