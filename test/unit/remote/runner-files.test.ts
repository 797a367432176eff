import { lstat, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeRunnerKubeConfig } from "../../../src/cluster/admin-kubeconfig.js";
import type { KubeConfig } from "../../../src/kubeconfig/types.js";
import { writeRunnerFile } from "../../../src/remote/runner-files.js";

// Files kubeforge writes on the runner never go through a link planted in its folders: a link
// at the file's own path is replaced, and no fixed temporary name can be prepared in advance.

let dir: string;
let victim: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-runner-files-"));
  victim = join(dir, "victim");
  await writeFile(victim, "someone else's file\n", { mode: 0o644 });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const CONFIG: KubeConfig = {
  apiVersion: "v1",
  kind: "Config",
  clusters: [{ name: "c", cluster: { server: "https://10.0.0.10:6443" } }],
  contexts: [{ name: "a@c", context: { cluster: "c", user: "a" } }],
  "current-context": "a@c",
  users: [{ name: "a", user: { token: "abcdef.0123456789abcdef" } }],
};

describe("writeRunnerFile", () => {
  it("replaces a link at the path instead of writing through it, with the mode asked", async () => {
    const path = join(dir, "kubeforge.log");
    await symlink(victim, path);
    const umask = process.umask(0o077);
    try {
      await writeRunnerFile(path, "mine\n", 0o644);
    } finally {
      process.umask(umask);
    }
    expect(await readFile(victim, "utf8")).toBe("someone else's file\n");
    expect((await lstat(path)).isFile()).toBe(true);
    expect((await stat(path)).mode & 0o777).toBe(0o644);
    expect(await readFile(path, "utf8")).toBe("mine\n");
    expect((await readdir(dir)).sort()).toEqual(["kubeforge.log", "victim"]);
  });

  it("leaves nothing behind when the write fails", async () => {
    await expect(writeRunnerFile(join(dir, "absent", "f"), "x", 0o600)).rejects.toThrow(/ENOENT/);
    expect(await readdir(dir)).toEqual(["victim"]);
  });
});

describe("writeRunnerKubeConfig", () => {
  it("a link planted at the old fixed temporary name is not followed", async () => {
    const path = join(dir, "admin.conf");
    await symlink(victim, `${path}.kubeforge-tmp`);
    await writeRunnerKubeConfig(path, CONFIG);
    expect(await readFile(victim, "utf8")).toBe("someone else's file\n");
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, "utf8")).toContain("server: https://10.0.0.10:6443");
  });
});
