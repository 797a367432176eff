import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SshHost } from "../../../src/remote/ssh/host.js";
import type { SshHostOptions } from "../../../src/remote/ssh/types.js";

// Options refused before any connection is attempted (203.0.113.0/24 is TEST-NET-3: nothing
// would answer there anyway).

const base: SshHostOptions = {
  name: "cp-1",
  endpoint: { host: "203.0.113.10", port: 22, user: "ubuntu" },
  credentials: { password: "x" },
  hostKeys: { acceptNew: true },
  retries: 0,
  connectTimeoutMs: 200,
};

describe("SshHost options", () => {
  it.each([
    [
      { endpoint: { host: "203.0.113.10", port: 0, user: "u" } },
      "endpoint.port must be a port number (1-65535), got 0",
    ],
    [{ endpoint: { host: "", port: 22, user: "u" } }, 'endpoint.host must not be empty, got ""'],
    [
      {
        jump: { endpoint: { host: "bastion", port: 22, user: "" }, credentials: {}, hostKeys: {} },
      },
      'jump.endpoint.user must not be empty, got ""',
    ],
    [{ maxSessions: 0 }, "maxSessions must be a whole number ≥ 1, got 0"],
    [{ retries: 1.5 }, "retries must be a whole number ≥ 0, got 1.5"],
  ] as [Partial<SshHostOptions>, string][])("refuses %j", async (extra, message) => {
    await expect(SshHost.connect({ ...base, ...extra })).rejects.toThrow(
      `cp-1: SSH option ${message}`,
    );
  });

  it.each(["pw\n", "pw\nrest", "pw\r"])(
    "refuses a sudo password with a new line (%j), never quoting it",
    async (sudoPassword) => {
      const e = (await SshHost.connect({ ...base, sudoPassword }).catch(
        (x: unknown) => x,
      )) as Error;
      expect(e.message).toBe("cp-1: SSH option sudoPassword must be one line; it holds a new line");
    },
  );

  it("refuses a private key that is really a public key, naming the host", async () => {
    const pub =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHbM6kBqm9eF1Gd2ucEUY5SyrJ8zG3T3M7fbf3h2bO7s x";
    await expect(SshHost.connect({ ...base, credentials: { privateKey: pub } })).rejects.toThrow(
      "cp-1 (ssh://ubuntu@203.0.113.10:22): the private key given is a public key",
    );
  });

  it("refuses a malformed fingerprint pin, naming it", async () => {
    await expect(
      SshHost.connect({ ...base, hostKeys: { fingerprints: ["MD5:12:34"] } }),
    ).rejects.toThrow(
      'cp-1 (ssh://ubuntu@203.0.113.10:22): host key fingerprint "MD5:12:34" is not of the form',
    );
  });

  it("says why a corrupted key cannot be used without quoting what was decoded from it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubeforge-corrupt-key-"));
    try {
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "k")]);
      const lines = readFileSync(join(dir, "k"), "utf8").split("\n");
      // Four base64 characters replaced in the header line, then in the key type's line: ssh2
      // then names what it decoded there ("Unsupported OpenSSH key magic: openssh \t-v1").
      for (const line of [1, 3]) {
        const corrupted = [...lines];
        corrupted[line] = `${lines[line]!.slice(0, 10)}AAAA${lines[line]!.slice(14)}`;
        const e = (await SshHost.connect({
          ...base,
          credentials: { privateKey: corrupted.join("\n") },
        }).catch((x: unknown) => x)) as Error;
        expect(e.message).toMatch(
          /^cp-1 \(ssh:\/\/ubuntu@203\.0\.113\.10:22\): cannot use the private key: [A-Za-z ]+$/,
        );
        expect(e.cause).toBeUndefined();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
