import type { ExecOptions, ExecResult, FileStat, Host, HostFacts } from "./host.js";
import { LocalHost } from "./local.js";

/** Called for every command a dry run does not run. */
export type WouldRun = (host: string, argv: string[]) => void;

/**
 * A host seen through a dry run: node files live under a local folder, read-only commands
 * and facts come from the real host, and every other command is reported, not run.
 * Phases cannot tell it from a real host — dry-run is a property of the data.
 */
export class DryRunHost implements Host {
  readonly name: string;
  private readonly files: LocalHost;

  constructor(
    private readonly real: Host,
    readonly dryRunDir: string,
    private readonly wouldRun: WouldRun,
  ) {
    this.name = real.name;
    this.files = new LocalHost({ rootfs: dryRunDir, name: real.name });
  }

  exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (opts.readOnly) return this.real.exec(argv, opts);
    this.wouldRun(this.name, argv);
    return Promise.resolve({ code: 0, stdout: "", stderr: "" });
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
  hostname(): Promise<string> {
    return this.real.hostname();
  }
  facts(): Promise<HostFacts> {
    return this.real.facts();
  }
}
