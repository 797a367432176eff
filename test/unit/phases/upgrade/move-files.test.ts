import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { moveFiles } from "../../../../src/phases/upgrade/paths.js";
import type { Host } from "../../../../src/remote/host.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { ShellFiles } from "../../../../src/remote/ssh/shell-files.js";

// kubeadm's MoveFile for a manifest's two moves (the old one to the backup folder, the new one
// in its place): in one command on a host that can (SSH, Docker), one by one elsewhere; either
// way in order, stopping at the first failure, which reads as Go's os.Rename error.

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "kubeforge-move-"));
  await mkdir(join(root, "manifests"));
  await mkdir(join(root, "backup"));
  await mkdir(join(root, "tmp"));
  await writeFile(join(root, "manifests/etcd.yaml"), "old");
  await writeFile(join(root, "tmp/etcd.yaml"), "new");
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** A host whose file operations are ShellFiles run by this machine's sh (as SshHost's are). */
function shellHost(): { host: Host; commands: number } {
  const out = { commands: 0 } as { host: Host; commands: number };
  const files = new ShellFiles("h1", (argv) => {
    out.commands++;
    const r = spawnSync(argv[0]!, argv.slice(1));
    return Promise.resolve({ code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr.toString() });
  });
  out.host = Object.assign(Object.create(new LocalHost()) as Host, {
    renameAll: (moves: [string, string][]) => files.renameAll(moves),
  });
  return out;
}

const p = (rel: string) => join(root, rel);
const manifestMoves = (): [string, string][] => [
  [p("manifests/etcd.yaml"), p("backup/etcd.yaml")],
  [p("tmp/etcd.yaml"), p("manifests/etcd.yaml")],
];

describe("moveFiles", () => {
  for (const [kind, make] of [
    ["in one command", () => shellHost()],
    ["one by one", () => ({ host: new LocalHost() as Host, commands: 0 })],
  ] as const) {
    it(`moves the old manifest out and the new one in, ${kind}: renamed, each keeping its inode`, async () => {
      const h = make();
      const inodes = [
        (await stat(p("manifests/etcd.yaml"))).ino,
        (await stat(p("tmp/etcd.yaml"))).ino,
      ];
      await moveFiles(h.host, manifestMoves());
      expect([
        (await stat(p("backup/etcd.yaml"))).ino,
        (await stat(p("manifests/etcd.yaml"))).ino,
      ]).toEqual(inodes);
      expect(await readFile(p("backup/etcd.yaml"), "utf8")).toBe("old");
      expect(await readFile(p("manifests/etcd.yaml"), "utf8")).toBe("new");
      expect(h.commands).toBe(kind === "in one command" ? 1 : 0);
    });

    it(`stops at a missing source and says so as os.Rename, ${kind}`, async () => {
      const h = make();
      await rm(p("tmp/etcd.yaml"));
      await expect(moveFiles(h.host, manifestMoves())).rejects.toThrow(
        `rename ${p("tmp/etcd.yaml")} ${p("manifests/etcd.yaml")}: no such file or directory`,
      );
      // The first move was done: the rollback puts the backup back.
      expect(await readFile(p("backup/etcd.yaml"), "utf8")).toBe("old");
    });
  }
});
