import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fingerprintProblem,
  knownHostsEntries,
  knownHostsLineProblem,
  mergeSsh,
  privateKeyProblem,
  sshTargetOf,
} from "../../../../src/config/cluster/ssh.js";
import { defaultClusterSpec } from "../../../../src/config/cluster/defaults.js";
import type { ClusterSpec } from "../../../../src/config/cluster/types.js";

// The formats are checked against what OpenSSH's own ssh-keygen prints.

interface Key {
  type: string;
  privateKey: string;
  publicLine: string;
  fingerprint: string;
}

let dir: string;
const keys: Record<string, Key> = {};

function keygen(name: string, args: string[]): Key {
  const file = join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-N", "", "-C", "test", "-f", file, ...args]);
  const publicLine = readFileSync(`${file}.pub`, "utf8").trim();
  const listed = execFileSync("ssh-keygen", ["-l", "-E", "sha256", "-f", `${file}.pub`], {
    encoding: "utf8",
  });
  return {
    type: publicLine.split(" ")[0]!,
    privateKey: readFileSync(file, "utf8"),
    publicLine,
    fingerprint: listed.split(" ")[1]!,
  };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kubeforge-ssh-format-"));
  keys.ed25519 = keygen("ed25519", ["-t", "ed25519"]);
  keys.ecdsa = keygen("ecdsa", ["-t", "ecdsa", "-b", "384"]);
  keys.rsa = keygen("rsa", ["-t", "rsa", "-b", "2048", "-m", "PEM"]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("host-key pins", () => {
  it.each(["ed25519", "ecdsa", "rsa"])(
    "accepts the SHA256 fingerprint ssh-keygen prints (%s)",
    (k) => {
      const { fingerprint } = keys[k]!;
      expect(fingerprint).toMatch(/^SHA256:/);
      expect(fingerprintProblem(fingerprint)).toBeUndefined();
    },
  );

  it("refuses the MD5 form ssh-keygen -E md5 prints, pointing at SHA256", () => {
    const md5 = execFileSync("ssh-keygen", ["-l", "-E", "md5", "-f", join(dir, "ed25519.pub")], {
      encoding: "utf8",
    }).split(" ")[1]!;
    expect(fingerprintProblem(md5)).toContain("MD5");
    expect(fingerprintProblem(md5.replace(/^MD5:/, ""))).toContain("MD5");
  });

  it.each([
    ["SHA256:...", "43 base64 characters"],
    ["sha256:ohD8VZEXGWo6Ez8GSEJQ9WpafgLFsOfLOtGGQCQo6Og", "43 base64 characters"],
    ["SHA256:ohD8VZEXGWo6Ez8GSEJQ9WpafgLFsOfLOtGGQCQo6Og=", "padding"],
    ["SHA256:ohD8VZEXGWo6Ez8GSEJQ9WpafgLFsOfLOtGGQCQo6O", "43 base64 characters"],
  ])("refuses %s", (text, problem) => {
    expect(fingerprintProblem(text)).toContain(problem);
  });
});

describe("known_hosts lines", () => {
  it.each(["ed25519", "ecdsa", "rsa"])("accepts ssh-keyscan style lines (%s)", (k) => {
    const [type, blob] = keys[k]!.publicLine.split(" ");
    expect(knownHostsLineProblem(`203.0.113.10 ${type} ${blob}`)).toBeUndefined();
    expect(
      knownHostsLineProblem(`[203.0.113.10]:2222,cp-1 ${type} ${blob} comment`),
    ).toBeUndefined();
    expect(knownHostsLineProblem(`@cert-authority *.example.com ${type} ${blob}`)).toBeUndefined();
  });

  it("accepts a line hashed by ssh-keygen -H", () => {
    const file = join(dir, "known_hosts");
    writeFileSync(file, `203.0.113.10 ${keys.ed25519!.publicLine}\n`);
    execFileSync("ssh-keygen", ["-q", "-H", "-f", file]);
    const hashed = readFileSync(file, "utf8").trim();
    expect(hashed).toMatch(/^\|1\|/);
    expect(knownHostsLineProblem(hashed)).toBeUndefined();
  });

  it.each([
    ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5", "at least three fields"],
    ["host ssh-foo AAAA", "is not one of"],
    ["@trusted host ssh-ed25519 AAAA", "marker"],
    ["host ssh-ed25519 not-base64!", "not a base64 ssh-ed25519 public key"],
  ])("refuses %s", (line, problem) => {
    expect(knownHostsLineProblem(line)).toContain(problem);
  });

  it("refuses a key blob whose own type differs from the line's", () => {
    const blob = keys.ed25519!.publicLine.split(" ")[1]!;
    expect(knownHostsLineProblem(`host ssh-rsa ${blob}`)).toContain("not a base64 ssh-rsa");
  });

  it("splits pasted multi-line text into entries, skipping blanks and comments", () => {
    const text = `# ssh-keyscan output\nh1 ${keys.ed25519!.publicLine}\n\n  h2 ${keys.rsa!.publicLine}  \n`;
    expect(knownHostsEntries(["a b c", text]).map((e) => [e.item, e.line.split(" ")[0]])).toEqual([
      [0, "a"],
      [1, "h1"],
      [1, "h2"],
    ]);
  });
});

describe("inline private keys", () => {
  it.each(["ed25519", "ecdsa", "rsa"])("accepts what ssh-keygen writes (%s)", (k) => {
    expect(privateKeyProblem(keys[k]!.privateKey)).toBeUndefined();
  });

  it.each([
    ["~/.ssh/id_ed25519", "not a path; to name a key file use privateKeyFile"],
    ["/home/u/.ssh/id_rsa", "not a path"],
    ["ssh-ed25519 AAAAC3Nza test", "public key"],
    ["not a key", "is not a private key"],
  ])("refuses %s", (text, problem) => {
    expect(privateKeyProblem(text)).toContain(problem);
  });

  it("never repeats the key in its problem", () => {
    const broken = keys.ed25519!.privateKey.replace(/-----END[^\n]*/, "");
    const problem = privateKeyProblem(broken)!;
    const body = broken.split("\n")[1]!;
    expect(problem).toBeDefined();
    expect(problem).not.toContain(body.slice(0, 20));
  });
});

describe("mergeSsh", () => {
  const cluster = {
    user: "ubuntu",
    port: 22,
    privateKeyFile: "/k",
    passphrase: "p",
    hostKeyFingerprints: ["SHA256:a"],
    acceptNewHostKeys: false,
    jumpHost: "ssh://bastion",
  };
  it.each([
    ["no override", undefined, cluster],
    ["scalar fields win", { user: "admin", port: 2222 }, { ...cluster, user: "admin", port: 2222 }],
    [
      "a node's key replaces the cluster's key and passphrase",
      { privateKey: "K" },
      {
        user: "ubuntu",
        port: 22,
        privateKey: "K",
        hostKeyFingerprints: ["SHA256:a"],
        acceptNewHostKeys: false,
        jumpHost: "ssh://bastion",
      },
    ],
    [
      "a node's host-key policy replaces the cluster's whole policy",
      { acceptNewHostKeys: true },
      {
        user: "ubuntu",
        port: 22,
        privateKeyFile: "/k",
        passphrase: "p",
        acceptNewHostKeys: true,
        jumpHost: "ssh://bastion",
      },
    ],
    [
      "a node's pins replace the cluster's",
      { knownHosts: ["h ssh-ed25519 AAAA"] },
      {
        user: "ubuntu",
        port: 22,
        privateKeyFile: "/k",
        passphrase: "p",
        knownHosts: ["h ssh-ed25519 AAAA"],
        jumpHost: "ssh://bastion",
      },
    ],
  ])("%s", (_name, node, expected) => {
    expect(mergeSsh(cluster, node)).toEqual(expected);
  });

  it("is idempotent: merging the merged settings again changes nothing", () => {
    const once = mergeSsh(cluster, { privateKey: "K", acceptNewHostKeys: true });
    expect(mergeSsh(cluster, once)).toEqual(once);
  });
});

describe("sshTargetOf", () => {
  const spec: ClusterSpec = {
    ...defaultClusterSpec(),
    ssh: {
      user: "ubuntu",
      port: 2200,
      privateKeyFile: "/k",
      acceptNewHostKeys: true,
      jumpHost: "ssh://jump.example.com:2022",
    },
    nodes: [
      { name: "cp-1", role: "control-plane", host: "local" },
      { name: "w-1", role: "worker", host: "ssh://admin@[fd00::5]" },
      {
        name: "w-2",
        role: "worker",
        host: "ssh://203.0.113.12:22",
        ssh: { password: "pw", privateKeyFile: undefined },
      },
    ],
  };

  it("is undefined for the local node", () => {
    expect(sshTargetOf(spec, spec.nodes[0]!)).toBeUndefined();
  });

  it("takes user and port from the URL first, then the ssh settings", () => {
    expect(sshTargetOf(spec, spec.nodes[1]!)).toEqual({
      endpoint: { host: "fd00::5", port: 2200, user: "admin" },
      auth: { privateKeyFile: "/k", agent: false },
      hostKeys: { acceptNew: true },
      jump: { host: "jump.example.com", port: 2022, user: "admin" },
    });
    expect(sshTargetOf(spec, spec.nodes[2]!)).toMatchObject({
      endpoint: { host: "203.0.113.12", port: 22, user: "ubuntu" },
      auth: { privateKeyFile: "/k", password: "pw", agent: false },
    });
  });
});
