import { spawn } from "node:child_process";
import { watch } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileIfExists, writeFiles, type Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { ShellFiles, type RawResult } from "../../../src/remote/ssh/shell-files.js";

// The shell-script file operations SshHost (and a non-root LocalHost) use, run here by the local
// sh with a hostile umask (077), and compared with LocalHost's direct file operations.

const argvSeen: string[][] = [];

function hostileExec(argv: string[], stdin?: Buffer): Promise<RawResult> {
  argvSeen.push(argv);
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", 'umask 077; exec "$@"', "sh", ...argv]);
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      resolve({ code: code ?? 1, stdout: Buffer.concat(out), stderr: err }),
    );
    child.stdin.on("error", () => {
      /* the script may exit without reading its input */
    });
    child.stdin.end(stdin ?? Buffer.alloc(0));
  });
}

let dir: string;
const files = new ShellFiles("h1", hostileExec);
const local = new LocalHost();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-shellfiles-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("ShellFiles", () => {
  it("writes atomically with the exact mode and 0755 parents, whatever the umask", async () => {
    for (const mode of [0o600, 0o644, 0o640, 0o755, 0o400]) {
      const p = join(dir, `m${mode.toString(8)}`, "sub", "file");
      await files.writeFile(p, `mode ${mode}`, mode);
      expect((await stat(p)).mode & 0o7777).toBe(mode);
      expect((await stat(join(dir, `m${mode.toString(8)}`))).mode & 0o7777).toBe(0o755);
      expect((await stat(join(dir, `m${mode.toString(8)}`, "sub"))).mode & 0o7777).toBe(0o755);
    }
  });

  it("writes several files in order in one command, each exact, atomic and with its mode; no digest in argv", async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const batch = [
      { path: join(dir, "many", "a.key"), data: all, mode: 0o600 },
      { path: join(dir, "many", "sub dir", "a.crt"), data: "cert $x `id`\n", mode: 0o644 },
      { path: join(dir, "many", "empty"), data: "", mode: 0o640 },
    ];
    // The same three through LocalHost, which writes them one by one, to compare.
    await writeFiles(
      local,
      batch.map((f) => ({ ...f, path: `${f.path}.local` })),
    );
    const before = argvSeen.length;
    await files.writeFiles(batch);
    expect(argvSeen.length - before).toBe(1);
    for (const f of batch) {
      const got = await readFile(f.path);
      expect(got.equals(Buffer.from(f.data))).toBe(true);
      expect(got.equals(await readFile(`${f.path}.local`))).toBe(true);
      expect((await stat(f.path)).mode & 0o7777).toBe(f.mode);
    }
    expect((await stat(join(dir, "many", "sub dir"))).mode & 0o7777).toBe(0o755);
    const digest = createHash("sha256").update(all).digest("hex");
    expect(argvSeen.at(-1)!.join(" ")).not.toContain(digest);
    expect((await readdir(join(dir, "many"))).filter((n) => n.includes("kubeforge"))).toEqual([]);
  });

  it("stops writing at the first file that fails, naming it; those before it stay written", async () => {
    const base = join(dir, "stops");
    await mkdir(join(base, "b.crt"), { recursive: true }); // a folder where a file should go
    await expect(
      files.writeFiles([
        { path: join(base, "a.key"), data: "key", mode: 0o600 },
        { path: join(base, "b.crt"), data: "cert", mode: 0o644 },
        { path: join(base, "c.conf"), data: "conf", mode: 0o600 },
      ]),
    ).rejects.toThrow(`h1: cannot write ${join(base, "b.crt")}: `);
    expect((await readFile(join(base, "a.key"))).toString()).toBe("key");
    expect((await readdir(base)).sort()).toEqual(["a.key", "b.crt"]);
  });

  it("replaces a file by rename (a new inode), leaving no temporary file", async () => {
    const p = join(dir, "replace", "f.conf");
    await files.writeFile(p, "one", 0o644);
    const before = await stat(p);
    await files.writeFile(p, "two", 0o600);
    const after = await stat(p);
    expect(after.ino).not.toBe(before.ino);
    expect((await files.readFile(p)).toString()).toBe("two");
    expect(await readdir(join(dir, "replace"))).toEqual(["f.conf"]);
  });

  it("writes through a hidden temporary name, which a kubelet watching its static Pod folder ignores", async () => {
    // pkg/kubelet/config/file_linux.go: every file but those starting with "." is a manifest,
    // read at its inotify event. Seen here the same way, for the shell's write and LocalHost's.
    for (const [name, host] of [
      ["shell", files],
      ["local", local],
    ] as const) {
      const folder = join(dir, `static-pods-${name}`);
      await mkdir(folder, { recursive: true });
      const seen = new Set<string>();
      const watcher = watch(folder, (_event, file) => {
        if (file) seen.add(file);
      });
      try {
        await host.writeFile(join(folder, "kube-apiserver.yaml"), "kind: Pod\n", 0o600);
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        watcher.close();
      }
      const others = [...seen].filter((f) => f !== "kube-apiserver.yaml");
      expect(others.length, name).toBeGreaterThan(0);
      for (const f of others) expect(f, name).toMatch(/^\.kube-apiserver\.yaml\.kubeforge-/);
      expect(await readdir(folder)).toEqual(["kube-apiserver.yaml"]);
    }
  });

  it("keeps the old file and removes its temporary file when the write fails", async () => {
    const p = join(dir, "keep", "f");
    await files.writeFile(p, "old", 0o644);
    // A directory where the file should go makes the final rename fail.
    const blocked = join(dir, "keep", "blocked");
    await files.mkdirp(join(blocked, "inside"));
    await expect(files.writeFile(blocked, "x", 0o644)).rejects.toThrow(
      `h1: cannot write ${blocked}`,
    );
    expect((await readdir(join(dir, "keep"))).sort()).toEqual(["blocked", "f"]);
  });

  it("round-trips every byte value and a large binary file", async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const big = randomBytes(3 * 1024 * 1024 + 7);
    for (const data of [all, big, Buffer.alloc(0), Buffer.from("no newline at end")]) {
      const p = join(dir, "bin", `f${data.length}`);
      await files.writeFile(p, data, 0o600);
      expect((await files.readFile(p)).equals(data)).toBe(true);
    }
  });

  it("never puts file contents in argv", async () => {
    argvSeen.length = 0;
    const secret = `-----BEGIN PRIVATE KEY-----\n${randomBytes(32).toString("base64")}\n`;
    await files.writeFile(join(dir, "secret", "key"), secret, 0o600);
    expect(argvSeen.length).toBe(1);
    expect(argvSeen.flat().join("\n")).not.toContain(secret.split("\n")[1]);
  });

  it("takes paths as data: names with spaces, quotes and $ are not interpreted", async () => {
    const p = join(dir, "odd names", `it's $HOME; "x"`, "f `id`");
    await files.writeFile(p, "ok", 0o644);
    expect(await files.readDir(join(dir, "odd names"))).toEqual([`it's $HOME; "x"`]);
    expect((await files.readFile(p)).toString()).toBe("ok");
  });

  it("copies a folder's content onto another on the host: files replaced, others kept, modes kept", async () => {
    const src = join(dir, "etcd data $x");
    const dst = join(dir, "restore 'here'");
    await files.writeFile(join(src, "member", "snap", "db"), "new db", 0o600);
    await files.writeFile(join(src, "member", "wal", "0.wal"), "wal", 0o600);
    await chmod(join(src, "member"), 0o700);
    await files.writeFile(join(dst, "member", "snap", "db"), "old db", 0o644);
    await files.writeFile(join(dst, "kept"), "kept", 0o644);
    await files.copyTree(src, dst);
    expect((await files.readFile(join(dst, "member", "snap", "db"))).toString()).toBe("new db");
    expect((await stat(join(dst, "member", "snap", "db"))).mode & 0o7777).toBe(0o600);
    expect((await stat(join(dst, "member"))).mode & 0o7777).toBe(0o700);
    expect((await files.readFile(join(dst, "member", "wal", "0.wal"))).toString()).toBe("wal");
    expect((await files.readFile(join(dst, "kept"))).toString()).toBe("kept");
    // Into a folder that does not exist yet: made.
    await files.copyTree(src, join(dir, "fresh", "copy"));
    expect(await files.readDir(join(dir, "fresh", "copy"))).toEqual(["member"]);
    await expect(files.copyTree(join(dir, "no such"), dst)).rejects.toThrow(
      `h1: cannot copy ${join(dir, "no such")}: not a folder`,
    );
  });

  it("copies runs of zeros as holes (an etcd WAL's preallocation), the bytes unchanged", async () => {
    const src = join(dir, "wal src");
    const wal = Buffer.alloc(8 * 1024 * 1024);
    randomBytes(4096).copy(wal, 0);
    await files.writeFile(join(src, "0.wal"), wal, 0o600);
    const dst = join(dir, "wal copy");
    await files.copyTree(src, dst);
    expect((await files.readFile(join(dst, "0.wal"))).equals(wal)).toBe(true);
    expect((await stat(join(src, "0.wal"))).blocks * 512).toBeGreaterThanOrEqual(wal.length);
    expect((await stat(join(dst, "0.wal"))).blocks * 512).toBeLessThan(1024 * 1024);
  });

  it("moves several files in order in one command, stopping at the first missing source, named", async () => {
    const current = join(dir, "manifests", "etcd.yaml");
    const backup = join(dir, "backup", "etcd.yaml");
    const fresh = join(dir, "tmp $x", "etcd.yaml");
    await files.writeFile(current, "old", 0o600);
    await files.writeFile(fresh, "new", 0o600);
    await mkdir(join(dir, "backup"));
    const ino = (await stat(fresh)).ino;
    const before = argvSeen.length;
    await files.renameAll([
      [current, backup],
      [fresh, current],
    ]);
    expect(argvSeen.length - before).toBe(1);
    expect((await readFile(backup)).toString()).toBe("old");
    expect((await stat(current)).ino).toBe(ino);
    expect(await files.exists(fresh)).toBe(false);
    // The second source is missing: the first move is done, the error names the second.
    const again = join(dir, "backup", "again.yaml");
    await expect(
      files.renameAll([
        [current, again],
        [fresh, current],
      ]),
    ).rejects.toMatchObject({
      code: "ENOENT",
      path: fresh,
      message: `h1: cannot move ${fresh}: no such file`,
    });
    expect((await readFile(again)).toString()).toBe("new");
    expect(await files.exists(current)).toBe(false);
  });

  it("moves a file on the host: the same inode and mode, and a missing source named", async () => {
    const from = join(dir, "move me");
    const to = join(dir, "moved $x");
    await files.writeFile(from, "manifest", 0o600);
    const ino = (await stat(from)).ino;
    await files.rename(from, to);
    expect((await stat(to)).ino).toBe(ino);
    expect((await stat(to)).mode & 0o7777).toBe(0o600);
    expect(await files.exists(from)).toBe(false);
    await expect(files.rename(from, to)).rejects.toMatchObject({
      code: "ENOENT",
      message: `h1: cannot move ${from}: no such file`,
    });
  });

  it("rejects relative paths", async () => {
    await expect(files.readFile("etc/passwd")).rejects.toThrow(
      'host paths must be absolute, got "etc/passwd"',
    );
  });

  it("behaves like LocalHost's direct file operations", async () => {
    const base = join(dir, "parity");
    await writeFile(join(dir, "parity-probe"), "x");
    const ops = async (
      h: Pick<
        LocalHost,
        "mkdirp" | "writeFile" | "stat" | "exists" | "readDir" | "remove" | "readFile"
      >,
      root: string,
    ) => {
      const errorOf = (p: Promise<unknown>) =>
        p.then(
          () => "no error",
          (e: NodeJS.ErrnoException) => e.code ?? "error",
        );
      await h.mkdirp(join(root, "d", "e"), 0o700);
      await h.writeFile(join(root, "d", "b.txt"), "bee", 0o640);
      await h.writeFile(join(root, "d", "a.txt"), "a", 0o644);
      return {
        dirMode: (await h.stat(join(root, "d", "e")))?.mode,
        file: await h.stat(join(root, "d", "b.txt")),
        dir: await h.stat(join(root, "d")),
        missing: await h.stat(join(root, "nope")),
        exists: [await h.exists(join(root, "d", "a.txt")), await h.exists(join(root, "zz"))],
        list: await h.readDir(join(root, "d")),
        listMissing: await h.readDir(join(root, "nope")),
        listFile: await errorOf(h.readDir(join(root, "d", "a.txt"))),
        readMissing: await errorOf(h.readFile(join(root, "nope"))),
        removeDirPlain: await errorOf(h.remove(join(root, "d", "e"))),
        removeMissing: await errorOf(h.remove(join(root, "nope"))),
        removeAll: await errorOf(h.remove(join(root, "d"), { recursive: true })),
        gone: await h.exists(join(root, "d")),
      };
    };
    const viaShell = await ops(files, join(base, "shell"));
    const direct = await ops(local, join(base, "local"));
    // LocalHost's rm says ERR_FS_EISDIR for a directory without `recursive`; the shell says "error".
    expect({ ...viaShell, removeDirPlain: "failed" }).toEqual({
      ...direct,
      removeDirPlain: "failed",
    });
    expect(direct.removeDirPlain).not.toBe("no error");
    expect(viaShell.removeDirPlain).not.toBe("no error");
    expect(viaShell.readMissing).toBe("ENOENT");
    expect(viaShell.listFile).toBe("ENOTDIR");
  });

  it("refuses a write whose input was corrupted on the way, leaving the target as it was", async () => {
    // What `sudo -S` left of a password with a new line ("pw\nrest"): the rest comes first.
    const corrupted = new ShellFiles("h1", (argv, stdin) =>
      hostileExec(argv, stdin && Buffer.concat([Buffer.from("rest\n"), stdin])),
    );
    // A byte lost on the way: as many bytes land, but not the ones sent.
    const swapped = new ShellFiles("h1", (argv, stdin) =>
      hostileExec(argv, stdin && Buffer.concat([stdin.subarray(0, -1), Buffer.from("X")])),
    );
    // The end lost on the way.
    const truncated = new ShellFiles("h1", (argv, stdin) =>
      hostileExec(argv, stdin?.subarray(0, -3)),
    );
    const p = join(dir, "verified", "ca.key");
    await files.writeFile(p, "the key as it was\n", 0o600);
    // The stray line is read as the digest, and the digest line as the content's start.
    await expect(corrupted.writeFile(p, "new key\n", 0o600)).rejects.toThrow(
      /^h1: cannot write .*ca\.key: what landed differs from what was sent \(sha256\)$/,
    );
    await expect(swapped.writeFile(p, "new key\n", 0o600)).rejects.toThrow(
      /^h1: cannot write .*ca\.key: what landed differs from what was sent \(sha256\)$/,
    );
    await expect(truncated.writeFile(p, "new key\n", 0o600)).rejects.toThrow(
      /^h1: cannot write .*ca\.key: 5 bytes landed where 8 were sent$/,
    );
    expect(await local.readFile(p)).toEqual(Buffer.from("the key as it was\n"));
    expect(await readdir(join(dir, "verified"))).toEqual(["ca.key"]);
    // Binaries too: every byte value, a megabyte of them.
    const binary = randomBytes(1 << 20);
    await files.writeFile(join(dir, "verified", "kubelet"), binary, 0o755);
    expect((await local.readFile(join(dir, "verified", "kubelet"))).equals(binary)).toBe(true);
  });
});

describe("ShellFiles: reads and stats asked for at once", () => {
  const all = (h: Pick<LocalHost, "readFile" | "stat">, root: string) => {
    const outcome = (p: Promise<unknown>) =>
      p.then(
        (v) => (Buffer.isBuffer(v) ? v.toString("hex") : v),
        (e: NodeJS.ErrnoException) => e.code ?? "error",
      );
    return Promise.all([
      outcome(h.readFile(join(root, "bytes"))),
      outcome(h.readFile(join(root, "empty"))),
      outcome(h.readFile(join(root, "absent"))),
      outcome(h.stat(join(root, "bytes"))),
      outcome(h.stat(join(root, "absent"))),
      outcome(h.stat(join(root, "a dir $x"))),
      outcome(h.readFile(join(root, "a dir $x", "it's"))),
    ]);
  };
  let root: string;
  beforeAll(async () => {
    root = join(dir, "batch");
    await local.mkdirp(join(root, "a dir $x"), 0o755);
    await writeFile(join(root, "bytes"), Buffer.from([...Array(256).keys()]));
    await writeFile(join(root, "empty"), "");
    await writeFile(join(root, "file"), "f");
    await writeFile(join(root, "a dir $x", "it's"), "quoted\n");
  });

  it("answers as each would alone, in one command", async () => {
    const before = argvSeen.length;
    const viaShell = await all(files, root);
    expect(argvSeen.length - before).toBe(1);
    expect(viaShell).toEqual(await all(local, root));
    expect(viaShell[0]).toBe(Buffer.from([...Array(256).keys()]).toString("hex"));
    expect(viaShell[2]).toBe("ENOENT");
  });

  it("asks an operation the batch could not answer alone, for its own error", async () => {
    const before = argvSeen.length;
    const [folder, file] = await Promise.allSettled([
      files.readFile(root),
      files.readFile(join(root, "file")),
    ]);
    expect(argvSeen.length - before).toBe(2);
    expect(folder.status === "rejected" && (folder.reason as Error).message).toMatch(
      /^h1: cannot read .*batch: cat: .*: Is a directory$/,
    );
    expect(file.status === "fulfilled" && file.value.toString()).toBe("f");
  });

  it("asks each alone on a host without base64", async () => {
    const seen: string[][] = [];
    const noBase64 = new ShellFiles("h1", (argv, stdin) => {
      seen.push(argv);
      return hostileExec(["env", "PATH=/nonexistent", "/bin/sh", ...argv.slice(1)], stdin).then(
        (r) => (argv[2]!.includes("base64") ? r : hostileExec(argv, stdin)),
      );
    });
    expect(await all(noBase64, root)).toEqual(await all(local, root));
    expect(seen.length).toBe(8);
  });
});

describe("readFileIfExists", () => {
  it("reads once: the missing file's ENOENT is the answer, through the shell and directly", async () => {
    const present = join(dir, "present");
    await writeFile(present, "here");
    for (const host of [shellHost(), local]) {
      expect((await readFileIfExists(host, present))?.toString()).toBe("here");
      const before = argvSeen.length;
      expect(await readFileIfExists(host, join(dir, "absent"))).toBeUndefined();
      if (host !== local) expect(argvSeen.length - before).toBe(1);
    }
  });

  it("a path under a file is missing (undefined); reading a folder is an error, passed on", async () => {
    const sub = join(dir, "not-a-dir");
    await writeFile(sub, "");
    await expect(readFileIfExists(shellHost(), sub + "/x")).resolves.toBeUndefined();
    await expect(readFileIfExists(shellHost(), dir)).rejects.toThrow(/cannot read/);
  });
});

/** A Host whose file reads go through ShellFiles (as SshHost's). */
function shellHost(): Host {
  return Object.assign(Object.create(local) as Host, {
    readFile: (p: string) => files.readFile(p),
    exists: (p: string) => files.exists(p),
  });
}
