// TEST DOUBLE. A Host that answers from a real Host (usually a LocalHost with a rootfs) except
// where a test overrides it: facts (1 CPU, 1 GiB, a non-root uid, an old kernel), files (a
// /proc/swaps with entries, a cgroup v1 /proc/mounts) and commands (a kubelet of a chosen
// version). It exists for what cannot be arranged on the test machine for real.
import type { ExecOptions, ExecResult, FileStat, Host, HostFacts } from "../../src/remote/host.js";
import { presentPathsLoop, type PathTest } from "../../src/remote/present-paths.js";

/** Content of an overridden file, or null for "does not exist". */
export type FileOverride = string | Buffer | null;

export interface CommandStub {
  /** Matches when the argv starts with these words, or when the predicate says so. */
  match: readonly string[] | ((argv: readonly string[]) => boolean);
  result: Partial<ExecResult> | ((argv: readonly string[]) => Partial<ExecResult>);
}

export interface HostDoubleOptions {
  facts?: Partial<HostFacts>;
  /** Absolute host paths. Directories are not overridden; parents of files need not exist. */
  files?: Record<string, FileOverride>;
  /** First match wins; unmatched commands run on the real host. */
  commands?: CommandStub[];
}

function matches(stub: CommandStub, argv: readonly string[]): boolean {
  if (typeof stub.match === "function") return stub.match(argv);
  return stub.match.every((word, i) => argv[i] === word);
}

function enoent(path: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`ENOENT: no such file or directory, open '${path}'`);
  e.code = "ENOENT";
  return e;
}

export class HostDouble implements Host {
  readonly name: string;
  /** Every command asked of the double, stubbed or not, in order. */
  readonly calls: { argv: string[]; opts: ExecOptions }[] = [];
  private readonly files: Map<string, FileOverride>;

  constructor(
    private readonly real: Host,
    private readonly opts: HostDoubleOptions = {},
  ) {
    this.name = real.name;
    this.files = new Map(Object.entries(opts.files ?? {}));
  }

  async exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    this.calls.push({ argv, opts });
    const stub = this.opts.commands?.find((s) => matches(s, argv));
    if (!stub) return this.real.exec(argv, opts);
    const r = typeof stub.result === "function" ? stub.result(argv) : stub.result;
    return { code: r.code ?? 0, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
  }

  async readFile(path: string): Promise<Buffer> {
    if (!this.files.has(path)) return this.real.readFile(path);
    const f = this.files.get(path);
    if (f === null || f === undefined) throw enoent(path);
    return Buffer.from(f);
  }

  writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    return this.real.writeFile(path, data, mode);
  }

  mkdirp(path: string, mode?: number): Promise<void> {
    return this.real.mkdirp(path, mode);
  }

  async exists(path: string): Promise<boolean> {
    if (this.files.has(path)) return this.files.get(path) !== null;
    return this.real.exists(path);
  }

  async stat(path: string): Promise<FileStat | undefined> {
    if (!this.files.has(path)) return this.real.stat(path);
    const f = this.files.get(path);
    if (f === null || f === undefined) return undefined;
    return { isFile: true, isDirectory: false, mode: 0o644, size: Buffer.from(f).length };
  }

  readDir(path: string): Promise<string[]> {
    return this.real.readDir(path);
  }

  remove(path: string, opts?: { recursive?: boolean }): Promise<void> {
    return this.real.remove(path, opts);
  }

  hostname(): Promise<string> {
    return this.opts.facts?.hostname !== undefined
      ? Promise.resolve(this.opts.facts.hostname)
      : this.real.hostname();
  }

  async facts(): Promise<HostFacts> {
    return { ...(await this.real.facts()), ...this.opts.facts };
  }
}

/**
 * Stub for kubeforge's executable lookup (`sh -c 'command -v "$1"' sh <name>`, see
 * src/node/preflight/binaries.ts lookPath): answers `path`, or "not found" when undefined.
 */
export function onPath(name: string, path: string | undefined): CommandStub {
  return {
    match: (argv) => argv[0] === "sh" && (argv[2] ?? "").includes("command -v") && argv[4] === name,
    result: path === undefined ? { code: 1 } : { stdout: `${path}\n` },
  };
}

/**
 * Stub for "which of these paths pass `test`" (src/remote/present-paths.ts: one `sh -c` loop
 * over the paths, naming those that pass): only `existing` pass on the imaginary node.
 */
export function presentPathsAre(test: PathTest, existing: ReadonlySet<string>): CommandStub {
  return {
    match: asksPresentPaths(test),
    result: (argv) => ({
      stdout: argv
        .slice(4)
        .filter((p) => existing.has(p))
        .map((p) => `${p}\n`)
        .join(""),
    }),
  };
}

/** Whether argv asks which paths pass `test` (presentPaths). */
export const asksPresentPaths = (test: PathTest) => (argv: readonly string[]) =>
  argv[0] === "sh" && argv[2] === presentPathsLoop(test);

/** The CA trust directories' check (existingCATrustDirs): only `existing` exist. */
export const caTrustDirs = (existing: ReadonlySet<string>) => presentPathsAre("-e", existing);

/** Whether argv is the CA trust directories' check. */
export const asksCATrustDirs = asksPresentPaths("-e");
