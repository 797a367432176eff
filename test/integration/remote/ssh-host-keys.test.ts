import { execFile } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshError } from "../../../src/remote/ssh/errors.js";
import { SshHost } from "../../../src/remote/ssh/host.js";
import type { HostKeyPolicy, SshHostOptions } from "../../../src/remote/ssh/types.js";
import { startSshd, type Sshd } from "../../support/sshd.js";

// Host-key checking against a real sshd: pins, known_hosts lines (plain and hashed by
// ssh-keygen -H), no policy, accept-new for this run only.

const run = promisify(execFile);

let sshd: Sshd;
let work: string;
let otherFingerprint: string;

function options(hostKeys: HostKeyPolicy, extra: Partial<SshHostOptions> = {}): SshHostOptions {
  return {
    name: "cp-1",
    endpoint: { host: sshd.address, port: 22, user: "root" },
    credentials: { privateKey: sshd.keys.plain.privateKey },
    hostKeys,
    retries: 3,
    retryDelayMs: 50,
    ...extra,
  };
}

async function connects(hostKeys: HostKeyPolicy): Promise<string> {
  const host = await SshHost.connect(options(hostKeys));
  await host.close();
  return host.hostKeyFingerprint;
}

async function refused(hostKeys: HostKeyPolicy): Promise<SshError> {
  const e = await SshHost.connect(options(hostKeys)).then(
    async (h) => {
      await h.close();
      return new Error("connected");
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(SshError);
  expect((e as SshError).failure).toBe("host-key");
  return e as SshError;
}

/** ~/.ssh as it is now: every file's content and modification time. */
async function sshDirState(): Promise<Record<string, string>> {
  const dir = join(homedir(), ".ssh");
  const out: Record<string, string> = {};
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const s = await stat(join(dir, name));
    out[name] = `${s.mtimeMs} ${s.isFile() ? await readFile(join(dir, name), "base64") : "dir"}`;
  }
  return out;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "kubeforge-hostkeys-it-"));
  sshd = await startSshd({ rsaHostKey: true });
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(work, "other")]);
  otherFingerprint = (await run("ssh-keygen", ["-lf", join(work, "other.pub")])).stdout.split(
    " ",
  )[1]!;
});

afterAll(async () => {
  await sshd?.close();
  await rm(work, { recursive: true, force: true });
});

describe("host keys", () => {
  it("accepts the pinned fingerprint ssh-keygen printed, and reports it", async () => {
    expect(await connects({ fingerprints: [sshd.hostKey.fingerprint] })).toBe(
      sshd.hostKey.fingerprint,
    );
  });

  it("refuses a mismatch naming the host and both fingerprints, in one attempt", async () => {
    const before = await sshd.connectionCount();
    const e = await refused({ fingerprints: [otherFingerprint] });
    expect(e.host).toBe("cp-1");
    expect(e.message).toBe(
      `cp-1 (ssh://root@${sshd.address}:22): host key mismatch: expected ${otherFingerprint}, got ${sshd.hostKey.fingerprint} (ssh-ed25519)`,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(await sshd.connectionCount()).toBe(before + 1);
  });

  it("accepts a known_hosts line for the address, and refuses one with another key", async () => {
    expect(await connects({ knownHosts: [sshd.hostKey.knownHostsLine] })).toBe(
      sshd.hostKey.fingerprint,
    );
    const otherPub = (await readFile(join(work, "other.pub"), "utf8"))
      .split(" ")
      .slice(0, 2)
      .join(" ");
    const e = await refused({ knownHosts: [`${sshd.address} ${otherPub}`] });
    expect(e.message).toContain(`expected ${otherFingerprint}, got ${sshd.hostKey.fingerprint}`);
  });

  it("asks a server with several host keys for the one its known_hosts line is about", async () => {
    // The server prefers ed25519; with an RSA line only, the RSA key must be the one negotiated.
    const rsa = sshd.rsaHostKey!;
    expect(await connects({ knownHosts: [rsa.knownHostsLine] })).toBe(rsa.fingerprint);
    expect(await connects({ fingerprints: [sshd.hostKey.fingerprint] })).toBe(
      sshd.hostKey.fingerprint,
    );
  });

  it("accepts a line hashed by ssh-keygen -H", async () => {
    const file = join(work, "known_hosts");
    await writeFile(file, `${sshd.hostKey.knownHostsLine}\n`);
    await run("ssh-keygen", ["-q", "-H", "-f", file]);
    const line = (await readFile(file, "utf8")).trim();
    expect(line.startsWith("|1|")).toBe(true);
    expect(line).not.toContain(sshd.address);
    expect(await connects({ knownHosts: [line] })).toBe(sshd.hostKey.fingerprint);
  });

  it("with no policy, refuses and shows the fingerprint to pin", async () => {
    const e = await refused({});
    expect(e.message).toBe(
      `cp-1 (ssh://root@${sshd.address}:22): host key ${sshd.hostKey.fingerprint} (ssh-ed25519) is not trusted: ` +
        `no fingerprint pin or known_hosts line matches this host; pin it (hostKeyFingerprints: ["${sshd.hostKey.fingerprint}"]) ` +
        "after checking it out of band, or set acceptNewHostKeys: true to trust it for this run only",
    );
  });

  it("accept-new trusts the key for this run only: nothing written, a changed key refused", async () => {
    const before = await sshDirState();
    const lines: string[] = [];
    const host = await SshHost.connect(options({ acceptNew: true }, { log: (l) => lines.push(l) }));
    await host.close();
    expect(lines).toEqual([
      `cp-1 (ssh://root@${sshd.address}:22): accepted new host key ${sshd.hostKey.fingerprint} for this run only`,
    ]);
    expect(await connects({ acceptNew: true })).toBe(sshd.hostKey.fingerprint);
    expect(await sshDirState()).toEqual(before);

    // The machine is recreated with a new host key: the same run refuses it.
    const first = sshd.hostKey.fingerprint;
    await sshd.replaceHostKey();
    const e = await refused({ acceptNew: true });
    expect(e.message).toContain(
      `host key mismatch: expected ${first} (accepted earlier in this run), got ${sshd.hostKey.fingerprint}`,
    );
    expect(await sshDirState()).toEqual(before);
  });

  it("names a malformed known_hosts line before connecting", async () => {
    const before = await sshd.connectionCount();
    const e = await refused({ knownHosts: [sshd.hostKey.knownHostsLine, "garbage"] });
    expect(e.message).toBe(
      `cp-1 (ssh://root@${sshd.address}:22): knownHosts[1]: a known_hosts line needs "hosts keytype base64-key", got "garbage"`,
    );
    expect(await sshd.connectionCount()).toBe(before);
  });
});
