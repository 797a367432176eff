import { posix } from "node:path";
import type { ExecOptions, ExecResult, FileStat, Host, HostFacts } from "./host.js";
import { LocalHost } from "./local.js";

// The machine seen through a dry run. Phases cannot tell these hosts from a real one: dry run is
// a property of the data. What every dry run shares: read-only commands, the host's name and
// facts come from the real host, and every other command is reported, not run. Where file
// changes go is each workflow's own:
// - init and join render the node's files into a folder of their own (DryRunHost);
// - upgrade starts from the node's real files and keeps its changes in a folder laid over them
//   (OverlayDryRunHost), as kubeadm's upgrade dry run starts from the real manifests;
// - reset has nothing to render: it reads the real machine and reports each change it would
//   make (ReportingDryRunHost), as kubeadm's reset prints "[dryrun] Would ..." lines.

/** Called for every command a dry run does not run. */
export type WouldRun = (host: string, argv: string[]) => void;

/** The line a dry run prints for a command it does not run. */
export function wouldRunLine(host: string, argv: readonly string[]): string {
  return `[dryrun] Would run on ${host}: ${argv.join(" ")}`;
}

/** Commands, name and facts of a dry run; file operations are the subclass's. */
abstract class DryRunHostBase implements Host {
  readonly name: string;

  constructor(
    protected readonly real: Host,
    private readonly wouldRun: WouldRun,
  ) {
    this.name = real.name;
  }

  exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (opts.readOnly) return this.real.exec(argv, opts);
    this.wouldRun(this.name, argv);
    return Promise.resolve({ code: 0, stdout: "", stderr: "" });
  }
  hostname(): Promise<string> {
    return this.real.hostname();
  }
  facts(): Promise<HostFacts> {
    return this.real.facts();
  }

  abstract readFile(path: string): Promise<Buffer>;
  abstract writeFile(path: string, data: string | Buffer, mode: number): Promise<void>;
  abstract mkdirp(path: string, mode?: number): Promise<void>;
  abstract exists(path: string): Promise<boolean>;
  abstract stat(path: string): Promise<FileStat | undefined>;
  abstract readDir(path: string): Promise<string[]>;
  abstract remove(path: string, opts?: { recursive?: boolean }): Promise<void>;
}

/** Paths a dry run removed: hidden from later reads, as a real removal would leave them. */
class RemovedPaths {
  private readonly paths = new Set<string>();

  add(path: string): void {
    this.paths.add(posix.normalize(path));
  }
  delete(path: string): void {
    this.paths.delete(posix.normalize(path));
  }
  hides(path: string): boolean {
    const p = posix.normalize(path);
    for (const r of this.paths) if (p === r || p.startsWith(`${r}/`)) return true;
    return false;
  }
}

/**
 * A host seen through an init or join dry run: node files live under a local folder, read-only
 * commands and facts come from the real host, and every other command is reported, not run.
 */
export class DryRunHost extends DryRunHostBase {
  private readonly files: LocalHost;

  constructor(
    real: Host,
    readonly dryRunDir: string,
    wouldRun: WouldRun,
  ) {
    super(real, wouldRun);
    this.files = new LocalHost({ rootfs: dryRunDir, name: real.name });
  }

  readFile(path: string): Promise<Buffer> {
    return this.files.readFile(path);
  }
  async writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    await this.mirrorExistingParents(path);
    return this.files.writeFile(path, data, mode);
  }
  async mkdirp(path: string, mode?: number): Promise<void> {
    await this.mirrorExistingParents(path);
    return this.files.mkdirp(path, mode);
  }

  /**
   * Creates in the folder the parents of `path` the real host already has, with the host's
   * modes: a real run finds /var and /var/lib there (0755) and creates only what is missing,
   * so the folder must not show them with the mode of the directory asked for (0700).
   */
  private async mirrorExistingParents(path: string): Promise<void> {
    const parts = path.split("/").filter(Boolean).slice(0, -1);
    let dir = "";
    for (const part of parts) {
      dir += `/${part}`;
      if (await this.files.exists(dir)) continue;
      const real = await this.real.stat(dir);
      if (!real?.isDirectory) return;
      await this.files.mkdirp(dir, real.mode & 0o7777);
    }
  }
  exists(path: string): Promise<boolean> {
    return this.files.exists(path);
  }
  stat(path: string): Promise<FileStat | undefined> {
    return this.files.stat(path);
  }
  readDir(path: string): Promise<string[]> {
    return this.files.readDir(path);
  }
  remove(path: string, opts?: { recursive?: boolean }): Promise<void> {
    return this.files.remove(path, opts);
  }
}

/**
 * A host seen through an upgrade dry run: reads come from the dry-run folder when the run wrote
 * the file there, else from the real host; writes and removals stay in the dry-run folder (a
 * removal hides the real file); commands that change the machine are reported, not run.
 */
export class OverlayDryRunHost extends DryRunHostBase {
  private readonly overlay: LocalHost;
  private readonly removed = new RemovedPaths();

  constructor(
    real: Host,
    readonly dryRunDir: string,
    wouldRun: WouldRun,
  ) {
    super(real, wouldRun);
    this.overlay = new LocalHost({ rootfs: dryRunDir, name: real.name });
  }

  async readFile(path: string): Promise<Buffer> {
    if (await this.overlay.exists(path)) return this.overlay.readFile(path);
    if (this.removed.hides(path)) return this.overlay.readFile(path); // ENOENT, as a real read
    return this.real.readFile(path);
  }
  writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    this.removed.delete(path);
    return this.overlay.writeFile(path, data, mode);
  }
  mkdirp(path: string, mode?: number): Promise<void> {
    return this.overlay.mkdirp(path, mode);
  }
  async exists(path: string): Promise<boolean> {
    if (await this.overlay.exists(path)) return true;
    return !this.removed.hides(path) && this.real.exists(path);
  }
  async stat(path: string): Promise<FileStat | undefined> {
    const own = await this.overlay.stat(path);
    if (own) return own;
    return this.removed.hides(path) ? undefined : this.real.stat(path);
  }
  async readDir(path: string): Promise<string[]> {
    const names = new Set(await this.overlay.readDir(path));
    if (!this.removed.hides(path)) {
      for (const n of await this.real.readDir(path)) {
        if (!this.removed.hides(posix.join(path, n))) names.add(n);
      }
    }
    return [...names].sort();
  }
  async remove(path: string, opts?: { recursive?: boolean }): Promise<void> {
    this.removed.add(path);
    await this.overlay.remove(path, opts);
  }
}

/**
 * A host seen through a reset dry run: everything is read from the real host, every change —
 * command, file or directory written or removed — is reported and not made, and what it
 * reported removed is gone for later reads, as after a real removal. Commands marked read-only
 * run for real.
 */
export class ReportingDryRunHost extends DryRunHostBase {
  private readonly removed = new RemovedPaths();

  constructor(
    real: Host,
    private readonly report: (line: string) => void,
  ) {
    super(real, (name, argv) => report(wouldRunLine(name, argv)));
  }

  /** The real host's --rootfs: command arguments name machine paths, which are the real ones. */
  get rootfs(): string | undefined {
    const r = (this.real as { rootfs?: unknown }).rootfs;
    return typeof r === "string" ? r : undefined;
  }

  readFile(path: string): Promise<Buffer> {
    if (this.removed.hides(path)) return Promise.reject(notFound(path));
    return this.real.readFile(path);
  }
  writeFile(path: string, _data: string | Buffer, mode: number): Promise<void> {
    this.report(`[dryrun] Would write ${path} (mode ${mode.toString(8).padStart(4, "0")})`);
    return Promise.resolve();
  }
  mkdirp(path: string): Promise<void> {
    this.report(`[dryrun] Would create the directory ${path}`);
    return Promise.resolve();
  }
  async exists(path: string): Promise<boolean> {
    return !this.removed.hides(path) && this.real.exists(path);
  }
  async stat(path: string): Promise<FileStat | undefined> {
    return this.removed.hides(path) ? undefined : this.real.stat(path);
  }
  async readDir(path: string): Promise<string[]> {
    if (this.removed.hides(path)) return [];
    const names = await this.real.readDir(path);
    return names.filter((n) => !this.removed.hides(posix.join(path, n)));
  }
  async remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    const s = await this.stat(path);
    if (!s) return;
    this.report(
      `[dryrun] Would remove ${path}${s.isDirectory && opts.recursive ? " and everything in it" : ""}`,
    );
    this.removed.add(path);
  }
}

/** The error a read of a removed file gets: Node's own ENOENT shape. */
function notFound(path: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`ENOENT: no such file or directory, open '${path}'`);
  e.code = "ENOENT";
  e.path = path;
  return e;
}
