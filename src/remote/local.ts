import { spawn } from "node:child_process";
import { lstat, mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { arch, cpus, hostname, constants as osConstants, release, totalmem } from "node:os";
import { dirname } from "node:path";
import {
  KILL_AFTER_SECONDS,
  TIMED_OUT_CODE,
  cancelledError,
  displayCommand,
  endableAsRoot,
} from "./command-limits.js";
import type { ExecOptions, ExecResult, FileStat, Host, HostFacts } from "./host.js";
import { cancellable } from "./interruption.js";
import { mapReadPath, mapWritePath } from "./paths.js";
import { writeRunnerFile } from "./runner-files.js";
import { ShellFiles, type RawResult } from "./ssh/shell-files.js";

export interface LocalHostOptions {
  /** Every absolute host path is placed under this folder (`--rootfs`). */
  rootfs?: string;
  name?: string;
  /** Environment commands run with (default: kubeforge's own); tests put shims on its PATH. */
  env?: NodeJS.ProcessEnv;
}

function isPermissionError(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === "EACCES" || code === "EPERM";
}

/**
 * The machine kubeforge runs on: child processes and the local file system.
 * Not root (a hosted runner's user with password-less sudo) and no rootfs: a file operation
 * the user may not do (root-owned /etc/kubernetes, /var/lib/etcd...) is redone through
 * `sudo -n` shell commands, with contents on stdin (never in argv).
 */
export class LocalHost implements Host {
  readonly name: string;
  readonly rootfs: string | undefined;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly asRoot: ShellFiles | undefined;

  constructor(opts: LocalHostOptions = {}) {
    this.rootfs = opts.rootfs;
    this.name = opts.name ?? "local";
    this.env = opts.env;
    this.asRoot =
      this.rootfs === undefined && process.getuid?.() !== 0
        ? new ShellFiles(this.name, (argv, stdin) =>
            this.spawnRaw(argv, { sudo: true, ...(stdin ? { stdin } : {}) }),
          )
        : undefined;
  }

  /** Where a read of `p` goes (the machine's /proc, /sys and /dev even under a rootfs). */
  private path(p: string): string {
    return mapReadPath(this.rootfs, p);
  }

  /** Where a write or delete of `p` goes: never outside the rootfs. */
  private writePath(p: string): string {
    return mapWritePath(this.rootfs, p);
  }

  /** Runs `direct`; when the user lacks permission and sudo is the way, `viaSudo`. */
  private async withSudo<T>(direct: () => Promise<T>, viaSudo: (f: ShellFiles) => Promise<T>) {
    try {
      return await direct();
    } catch (e) {
      if (this.asRoot && isPermissionError(e)) return viaSudo(this.asRoot);
      throw e;
    }
  }

  async exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const r = await this.spawnRaw(argv, opts);
    return { code: r.code, stdout: r.stdout.toString(), stderr: r.stderr };
  }

  private spawnRaw(argv: string[], opts: ExecOptions): Promise<RawResult> {
    const viaSudo = opts.sudo === true && process.getuid?.() !== 0;
    // Through sudo the limit, and the KILL after a cancel's TERM, must come from inside it:
    // this user could end sudo, not the root command sudo started (command-limits.ts).
    const [cmd, ...args] = viaSudo
      ? ["sudo", "-n", "--", ...endableAsRoot(argv, opts.timeoutMs)]
      : argv;
    const display = displayCommand(argv);
    if (!cmd) return Promise.reject(new Error("exec needs a command"));
    // Every command can be cancelled: by the caller, or when the run is interrupted.
    const signal = cancellable(opts.signal);
    if (signal.aborted) return Promise.reject(cancelledError(this.name, display, signal));
    return new Promise((resolve, reject) => {
      const startedAt = Date.now(); // before the command, and its `timeout`, can start
      // Own process group, so that ending it ends the command and everything it started.
      const child = spawn(cmd, args, {
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        env: this.env ?? process.env,
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on("data", (b: Buffer) => out.push(b));
      child.stderr.on("data", (b: Buffer) => err.push(b));
      const signalGroup = (name: NodeJS.Signals) => {
        try {
          process.kill(-child.pid!, name);
        } catch {
          /* already gone */
        }
      };
      // TERM first: sudo relays it to its command (a KILL would end sudo alone); KILL for
      // whatever is still there a few seconds later.
      let killTimer: NodeJS.Timeout | undefined;
      const end = () => {
        if (killTimer) return;
        signalGroup("SIGTERM");
        killTimer = setTimeout(() => signalGroup("SIGKILL"), KILL_AFTER_SECONDS * 1000);
      };
      let timedOut = false;
      const timer =
        opts.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              end();
            }, opts.timeoutMs);
      let aborted = false;
      const onAbort = () => {
        aborted = true;
        end();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const settle = () => {
        clearTimeout(timer);
        clearTimeout(killTimer);
        signal.removeEventListener("abort", onAbort);
      };
      child.on("error", (e: NodeJS.ErrnoException) => {
        settle();
        if (e.code === "ENOENT") {
          resolve({ code: 127, stdout: Buffer.alloc(0), stderr: `${cmd}: not found` });
        } else
          reject(new Error(`${this.name}: cannot run "${display}": ${e.message}`, { cause: e }));
      });
      child.on("close", (code, exitSignal) => {
        settle();
        if (aborted) return reject(cancelledError(this.name, display, signal));
        const stderr = Buffer.concat(err).toString();
        // Through sudo, the `timeout` inside may end the command before this side's timer fires.
        if (viaSudo && code === TIMED_OUT_CODE && opts.timeoutMs !== undefined) {
          timedOut ||= Date.now() - startedAt >= opts.timeoutMs;
        }
        resolve({
          code: timedOut
            ? TIMED_OUT_CODE
            : (code ?? 128 + (exitSignal ? (osConstants.signals[exitSignal] ?? 15) : 15)),
          stdout: Buffer.concat(out),
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
    return this.withSudo(
      () => readFile(this.path(path)),
      (f) => f.readFile(path),
    );
  }

  writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    return this.withSudo(
      () => this.writeDirect(path, data, mode),
      (f) => f.writeFile(path, data, mode),
    );
  }

  private async writeDirect(path: string, data: string | Buffer, mode: number): Promise<void> {
    const target = this.writePath(path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await writeRunnerFile(target, data, mode);
  }

  /** kubeadm's MoveFile is os.Rename: the file keeps its inode and no copy of it appears. */
  rename(from: string, to: string): Promise<void> {
    return this.withSudo(
      () => rename(this.writePath(from), this.writePath(to)),
      (f) => f.rename(from, to),
    );
  }

  async mkdirp(path: string, mode = 0o755): Promise<void> {
    await this.withSudo(
      async () => {
        await mkdir(this.writePath(path), { recursive: true, mode });
      },
      (f) => f.mkdirp(path, mode),
    );
  }

  async exists(path: string): Promise<boolean> {
    return (await this.stat(path)) !== undefined;
  }

  stat(path: string): Promise<FileStat | undefined> {
    return this.withSudo(
      () => this.statDirect(path),
      (f) => f.stat(path),
    );
  }

  private async statDirect(path: string): Promise<FileStat | undefined> {
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

  /** Whether the entry itself is a symbolic link (the patch walk does not follow linked folders). */
  async isSymbolicLink(path: string): Promise<boolean> {
    const s = await lstat(this.path(path)).catch(() => undefined);
    return s?.isSymbolicLink() ?? false;
  }

  readDir(path: string): Promise<string[]> {
    return this.withSudo(
      async () => {
        try {
          return (await readdir(this.path(path))).sort();
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
          throw e;
        }
      },
      (f) => f.readDir(path),
    );
  }

  async remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    await this.withSudo(
      () => rm(this.writePath(path), { force: true, recursive: opts.recursive ?? false }),
      (f) => f.remove(path, opts),
    );
  }

  hostname(): Promise<string> {
    return Promise.resolve(hostname());
  }

  /** Nothing to end: the machine itself has no connection. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  async facts(): Promise<HostFacts> {
    const uid = process.getuid?.() ?? -1;
    return {
      hostname: hostname(),
      arch: arch(),
      kernelRelease: release(),
      cpuCount: cpus().length,
      memoryBytes: totalmem(),
      uid,
      rootAccess: uid === 0 || (await this.sudoWorks()),
    };
  }

  private sudoProbe: Promise<boolean> | undefined;

  /** Whether `sudo -n` runs commands for this user (asked once; never with a rootfs). */
  private sudoWorks(): Promise<boolean> {
    if (this.asRoot === undefined) return Promise.resolve(false);
    this.sudoProbe ??= this.spawnRaw(["true"], { sudo: true, timeoutMs: 10_000 }).then(
      (r) => r.code === 0,
      () => false,
    );
    return this.sudoProbe;
  }
}
