import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { arch, cpus, hostname, release, totalmem } from "node:os";
import { dirname } from "node:path";
import type { ExecOptions, ExecResult, FileStat, Host, HostFacts } from "./host.js";
import { mapPath } from "./paths.js";

export interface LocalHostOptions {
  /** Every absolute host path is placed under this folder (`--rootfs`). */
  rootfs?: string;
  name?: string;
  /** Environment commands run with (default: kubeforge's own); tests put shims on its PATH. */
  env?: NodeJS.ProcessEnv;
}

/** The machine kubeforge runs on: child processes and the local file system. */
export class LocalHost implements Host {
  readonly name: string;
  readonly rootfs: string | undefined;
  private readonly env: NodeJS.ProcessEnv | undefined;

  constructor(opts: LocalHostOptions = {}) {
    this.rootfs = opts.rootfs;
    this.name = opts.name ?? "local";
    this.env = opts.env;
  }

  private path(p: string): string {
    return mapPath(this.rootfs, p);
  }

  exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const [cmd, ...args] =
      opts.sudo && process.getuid?.() !== 0 ? ["sudo", "-n", "--", ...argv] : argv;
    if (!cmd) return Promise.reject(new Error("exec needs a command"));
    return new Promise((resolve, reject) => {
      // Own process group, so a timeout ends the command and everything it started.
      const child = spawn(cmd, args, {
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        env: this.env ?? process.env,
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on("data", (b: Buffer) => out.push(b));
      child.stderr.on("data", (b: Buffer) => err.push(b));
      let timedOut = false;
      const timer =
        opts.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              try {
                process.kill(-child.pid!, "SIGKILL");
              } catch {
                /* already gone */
              }
            }, opts.timeoutMs);
      child.on("error", (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (e.code === "ENOENT") resolve({ code: 127, stdout: "", stderr: `${cmd}: not found` });
        else
          reject(
            new Error(`${this.name}: cannot run "${argv.join(" ")}": ${e.message}`, { cause: e }),
          );
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        const stderr = Buffer.concat(err).toString();
        resolve({
          code: code ?? 128 + (signal === "SIGKILL" ? 9 : 15),
          stdout: Buffer.concat(out).toString(),
          stderr: timedOut ? `${stderr}timed out after ${opts.timeoutMs} ms` : stderr,
        });
      });
      child.stdin.on("error", () => {
        /* the command may exit without reading its input */
      });
      child.stdin.end(opts.stdin ?? "");
    });
  }

  readFile(path: string): Promise<Buffer> {
    return readFile(this.path(path));
  }

  async writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    const target = this.path(path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    const tmp = `${target}.kubeforge-${randomBytes(6).toString("hex")}`;
    try {
      await writeFile(tmp, data, { mode });
      await chmod(tmp, mode); // the umask must not weaken or widen kubeadm's modes
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  async mkdirp(path: string, mode = 0o755): Promise<void> {
    await mkdir(this.path(path), { recursive: true, mode });
  }

  async exists(path: string): Promise<boolean> {
    return (await this.stat(path)) !== undefined;
  }

  async stat(path: string): Promise<FileStat | undefined> {
    try {
      const s = await stat(this.path(path));
      return {
        isFile: s.isFile(),
        isDirectory: s.isDirectory(),
        mode: s.mode & 0o7777,
        size: s.size,
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
  }

  async readDir(path: string): Promise<string[]> {
    try {
      return (await readdir(this.path(path))).sort();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw e;
    }
  }

  async remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    await rm(this.path(path), { force: true, recursive: opts.recursive ?? false });
  }

  hostname(): Promise<string> {
    return Promise.resolve(hostname());
  }

  facts(): Promise<HostFacts> {
    return Promise.resolve({
      hostname: hostname(),
      arch: arch(),
      kernelRelease: release(),
      cpuCount: cpus().length,
      memoryBytes: totalmem(),
      uid: process.getuid?.() ?? -1,
    });
  }
}
