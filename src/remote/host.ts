import type { Duplex } from "node:stream";
import { displayCommand } from "./command-limits.js";

// The Host port: the only way phases touch a machine (DESIGN.md "Core contracts").

export interface ExecOptions {
  /** Run as root (sudo -n when the connection is not root already). */
  sudo?: boolean;
  /** Bytes written to the command's stdin; the way secrets travel (never in argv). */
  stdin?: string | Buffer;
  /** Kill the command (and its children) after this long. */
  timeoutMs?: number;
  /**
   * The command only reads state. A dry-run host runs read-only commands and records the
   * others as "would run" without running them.
   */
  readOnly?: boolean;
  /**
   * Cancels the command: it is ended (and what it started, through sudo too) and exec rejects
   * with "<host>: cancelled \"<command>\"" once it is gone.
   */
  signal?: AbortSignal;
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface HostFacts {
  hostname: string;
  /** Node's `process.arch` names: x64, arm64... */
  arch: string;
  kernelRelease: string;
  cpuCount: number;
  memoryBytes: number;
  /** Effective uid of the connection (0 = root). */
  uid: number;
  /**
   * Commands run with `sudo: true` run as root: the user is root, or sudo works for it
   * (without a password, or with the one configured). kubeadm, run with sudo, is root.
   */
  rootAccess: boolean;
}

export interface FileStat {
  isFile: boolean;
  isDirectory: boolean;
  mode: number;
  size: number;
}

/** One file of writeFiles. */
export interface FileWrite {
  path: string;
  data: string | Buffer;
  mode: number;
}

export interface Host {
  /** Short name used to prefix log lines ("local", "cp-1"). */
  readonly name: string;
  /** Runs argv without a shell. A non-zero exit is a result, not an error. */
  exec(argv: string[], opts?: ExecOptions): Promise<ExecResult>;
  readFile(path: string): Promise<Buffer>;
  /** Atomic (temporary file + rename); creates missing parent directories with mode 0755. */
  writeFile(path: string, data: string | Buffer, mode: number): Promise<void>;
  /**
   * Each file written as writeFile does, in order, stopping at the first that fails (those
   * before it stay written), in one command on the host. Absent: writeFiles below writes them
   * one by one.
   */
  writeFiles?(files: readonly FileWrite[]): Promise<void>;
  mkdirp(path: string, mode?: number): Promise<void>;
  exists(path: string): Promise<boolean>;
  stat(path: string): Promise<FileStat | undefined>;
  /** Entry names of a directory; [] when it does not exist. */
  readDir(path: string): Promise<string[]>;
  remove(path: string, opts?: { recursive?: boolean }): Promise<void>;
  /**
   * The content of folder `src` copied onto `dst` on the host itself (`cp -a src/. dst/`: files
   * replaced, others kept; modes, owners and times kept). Absent where the file operations are
   * local anyway (LocalHost, dry runs): copyTree in phases/upgrade/paths.ts goes file by file.
   */
  copyTree?(src: string, dst: string): Promise<void>;
  /** Moves a file on the host itself (`mv`): its bytes, mode and owner kept. Absent: as copyTree. */
  rename?(from: string, to: string): Promise<void>;
  /**
   * rename for several files, in order, in one command, stopping at the first that fails; its
   * error's `path` is the source of the move that failed.
   */
  renameAll?(moves: readonly (readonly [string, string])[]): Promise<void>;
  hostname(): Promise<string>;
  facts(): Promise<HostFacts>;
  /** Ends the host's connections (SshHost); LocalHost: no-op. Idempotent. */
  close?(): Promise<void>;
  /**
   * A TCP port on this machine (127.0.0.1) that reaches `targetHost:targetPort` as seen FROM the
   * host (SSH direct-tcpip). Used to reach node-local endpoints (127.0.0.1:10248 kubelet healthz,
   * 127.0.0.1:10257/10259) and API/etcd addresses the runner cannot reach directly.
   * Absent on LocalHost (the machine itself: no forwarding needed).
   */
  forward?(targetHost: string, targetPort: number): Promise<Forward>;
  /**
   * One TCP connection to `targetHost:targetPort` made FROM the host (SSH direct-tcpip, a process
   * in a container); rejects when the host cannot connect (the reason in the message) or the
   * connection to the host is gone. Absent on LocalHost.
   */
  connectTo?(targetHost: string, targetPort: number): Promise<Duplex>;
}

/** A local port forward opened by `Host.forward`. */
export interface Forward {
  readonly port: number;
  close(): Promise<void>;
}

/** Thrown by `exec`-based helpers when a command that must succeed does not. */
export class CommandError extends Error {
  constructor(
    readonly host: string,
    readonly argv: string[],
    readonly result: ExecResult,
  ) {
    const detail = (result.stderr || result.stdout).trim().split("\n").slice(-3).join(" | ");
    super(
      `${host}: "${displayCommand(argv)}" exited with code ${result.code}${detail ? `: ${detail}` : ""}`,
    );
    this.name = "CommandError";
  }
}

/** Runs a command and throws a CommandError naming host and command when it fails. */
export async function run(host: Host, argv: string[], opts?: ExecOptions): Promise<ExecResult> {
  const result = await host.exec(argv, opts);
  if (result.code !== 0) throw new CommandError(host.name, argv, result);
  return result;
}

/**
 * Reads a file, or undefined when it does not exist: one read, whose ENOENT (every Host's
 * readFile sets it for a missing file) is the answer, instead of a look and then a read.
 */
export async function readFileIfExists(host: Host, path: string): Promise<Buffer | undefined> {
  try {
    return await host.readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

/** Writes the files in order, stopping at the first that fails: in one command where it can. */
export async function writeFiles(host: Host, files: readonly FileWrite[]): Promise<void> {
  if (host.writeFiles && files.length > 1) return host.writeFiles(files);
  for (const f of files) await host.writeFile(f.path, f.data, f.mode);
}

/** Closes every host's connections; a failure to close one never hides the run's own result. */
export async function closeHosts(hosts: Iterable<Host>): Promise<void> {
  await Promise.all(
    [...hosts].map(async (h) => {
      try {
        await h.close?.();
      } catch {
        /* the connection is gone either way */
      }
    }),
  );
}
