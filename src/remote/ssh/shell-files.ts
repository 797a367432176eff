import { createHash } from "node:crypto";
import { isAbsolute } from "node:path";
import type { FileStat, FileWrite } from "../host.js";

// The Host file operations as small POSIX shell scripts run through exec: the only way to
// reach root-owned paths (/etc/kubernetes, /var/lib/etcd) as a non-root user, since they go
// through sudo like any command (SFTP runs as the login user). Paths travel as positional
// arguments (never spliced into script text); file contents travel on stdin, never in argv.

export interface RawResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** Runs argv as root (through sudo when needed) with `stdin`, returning raw stdout. */
export type RootExec = (argv: string[], stdin?: Buffer) => Promise<RawResult>;

// Exit codes the scripts use to report a state rather than a failure.
const MISSING = 44;
const NOT_A_DIRECTORY = 45;

// A write checks what landed before it takes the target's place: its sha256 must be that of the
// bytes sent (and its size, named when it differs). Whatever came into the command's stdin
// ahead of them (a sudo password line sudo did not consume) or went missing is caught here, and
// the target is left as it was. Files are written one after another: each file's sha256 comes
// first on stdin, on a line of its own (`read` takes one byte at a time from a pipe), then its
// bytes (`head -c` takes exactly the size asked); its path, mode and size are in argv (a hash of
// a key is no secret, but argv is public). On a failure the index of the file it stopped at is
// the output. Each program started costs the host a process start: paths are split by the
// shell itself, and mktemp's file is already 0600 (a key's, a kubeconfig's, a manifest's mode).
const WRITE_ALL = [
  "set -e",
  "i=0 tmp=",
  `trap 'echo "$i"; [ -z "$tmp" ] || rm -f -- "$tmp"' EXIT`,
  // umask 022: parents are created 0755 whatever the login's umask is.
  "umask 022",
  'while [ "$#" -gt 0 ]; do',
  "  target=$1 mode=$2 size=$3; shift 3",
  "  IFS= read -r digest",
  // Paths are absolute: the folder is what comes before the last slash ("/" for "/name").
  "  dir=${target%/*}; dir=${dir:-/}",
  '  [ -d "$dir" ] || mkdir -p -- "$dir"',
  // A hidden name beside the target: the kubelet reads every other file in its static Pod
  // folder as a manifest, at once (inotify), a half-written one too.
  '  tmp=$(mktemp -- "$dir/.${target##*/}.kubeforge-XXXXXX")',
  '  head -c "$size" > "$tmp"',
  '  sum=$(sha256sum < "$tmp") && sum=${sum%% *}',
  '  if [ "$sum" != "$digest" ]; then',
  '    got=$(wc -c < "$tmp")',
  '    if [ "$got" -ne "$size" ]; then echo "$got bytes landed where $size were sent" >&2',
  '    else echo "what landed differs from what was sent (sha256)" >&2; fi',
  "    exit 1",
  "  fi",
  '  [ "$mode" = 0600 ] || chmod "$mode" "$tmp"',
  // -T: a directory at the target is an error, not a place to move the file into.
  '  mv -f -T -- "$tmp" "$target"',
  "  tmp= i=$((i + 1))",
  "done",
  "trap - EXIT",
].join("\n");

const READ = `[ -e "$1" ] || exit ${MISSING}\nexec cat -- "$1"`;
// Reads and stats asked for at once (the phases' Promise.all) in one command: each exec costs a
// process start on the host (and a sudo), more than the reads themselves. One line per
// operation, in order: M (missing), S <stat>, R <base64 content>, or E (failed: asked again
// alone, for the single command's error). Without base64 on the host each is asked alone.
const NO_BASE64 = 99;
const BATCH = [
  `command -v base64 >/dev/null 2>&1 || exit ${NO_BASE64}`,
  'while [ "$#" -gt 0 ]; do',
  "  kind=$1 p=$2",
  "  shift 2",
  '  if [ ! -e "$p" ]; then echo M',
  `  elif [ "$kind" = s ]; then`,
  `    if out=$(stat -L -c '%f %s' -- "$p" 2>/dev/null); then echo "S $out"; else echo E; fi`,
  '  elif out=$(base64 -w0 -- "$p" 2>/dev/null); then echo "R $out"',
  "  else echo E; fi",
  "done",
].join("\n");
/** At most this many operations share one command (argv stays far below the host's limit). */
const BATCH_MAX = 64;
const STAT = `[ -e "$1" ] || exit ${MISSING}\nexec stat -L -c '%f %s' -- "$1"`;
const READ_DIR = [
  `if [ -d "$1" ]; then cd -- "$1" && exec find . -mindepth 1 -maxdepth 1 -printf '%f\\0'`,
  `elif [ -e "$1" ]; then exit ${NOT_A_DIRECTORY}; fi`,
].join("\n");
// Every directory created gets the mode, as Go's os.MkdirAll and LocalHost give it: the umask
// (the mode's complement) for the parents, -m for the last one.
const MKDIR = 'umask "$3"\nexec mkdir -p -m "$2" -- "$1"';
const REMOVE = 'exec rm -f -- "$1"';
// The folder's content copied on the host itself (an etcd data folder is tens of MB: through the
// connection it would travel twice), modes, owners and times kept.
// -T: a directory at the target is an error, not a place to move the file into.
const RENAME = `[ -f "$1" ] || exit ${MISSING}\nexec mv -f -T -- "$1" "$2"`;
// RENAME for several pairs, in order, stopping at the first that fails: the index of the pair it
// stopped at is the output.
const RENAME_ALL = [
  "i=0",
  'while [ "$#" -gt 0 ]; do',
  `  [ -f "$1" ] || { echo "$i"; exit ${MISSING}; }`,
  '  mv -f -T -- "$1" "$2" || { echo "$i"; exit 1; }',
  "  shift 2; i=$((i + 1))",
  "done",
].join("\n");
// Runs of zeros are written as holes where cp can (GNU's --sparse=always): an etcd data folder
// holds 64 MB WAL files preallocated with zeros, which then take neither the time nor the disk
// of a full copy. The bytes read back are the same.
const COPY_TREE = [
  `[ -d "$1" ] || exit ${MISSING}`,
  'mkdir -p -- "$2"',
  'if cp --sparse=always --version >/dev/null 2>&1; then exec cp -a --sparse=always -- "$1/." "$2/"; fi',
  'exec cp -a -- "$1/." "$2/"',
].join("\n");
const REMOVE_ALL = 'exec rm -rf -- "$1"';

function script(body: string, ...args: string[]): string[] {
  return ["sh", "-c", body, "sh", ...args];
}

/** The bytes as a write script takes them: their sha256 on a line, then the bytes. */
function withDigest(bytes: Buffer): Buffer {
  const digest = createHash("sha256").update(bytes).digest("hex");
  return Buffer.concat([Buffer.from(`${digest}\n`), bytes]);
}

/** The item a WRITE_ALL or RENAME_ALL script stopped at: the index it printed (else the first). */
function stoppedAt<T>(r: RawResult, items: readonly T[]): T {
  const at = Number(r.stdout.toString().trim());
  return items[Number.isInteger(at) && at < items.length ? at : 0]!;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}

function fileError(host: string, what: string, path: string, r: RawResult, code?: string): Error {
  const detail = r.stderr.trim().split("\n").slice(-2).join(" | ");
  const e = new Error(
    `${host}: cannot ${what} ${path}${detail ? `: ${detail}` : ` (exit code ${r.code})`}`,
  );
  if (code) (e as NodeJS.ErrnoException).code = code;
  return e;
}

function absolute(path: string): string {
  if (!isAbsolute(path)) throw new Error(`host paths must be absolute, got "${path}"`);
  return path;
}

function parseStat(host: string, path: string, r: RawResult): FileStat | undefined {
  if (r.code === MISSING) return undefined;
  const m = /^([0-9a-f]+) (\d+)\s*$/.exec(r.stdout.toString());
  if (r.code !== 0 || !m) throw fileError(host, "stat", path, r);
  const raw = parseInt(m[1]!, 16);
  const type = raw & 0o170000;
  return {
    isFile: type === 0o100000,
    isDirectory: type === 0o040000,
    mode: raw & 0o7777,
    size: Number(m[2]),
  };
}

interface Queued {
  kind: "r" | "s";
  path: string;
  /** With the batch's line for it; undefined (or E): the operation is asked alone. */
  settle: (line: string | undefined) => void;
}

/** The Host file operations through a command runner. */
export class ShellFiles {
  constructor(
    private readonly host: string,
    private readonly exec: RootExec,
  ) {}

  private queued: Queued[] = [];

  /** Queues a read or stat for the batch sent once the current turn's calls are all in. */
  private enqueue<T>(
    kind: "r" | "s",
    path: string,
    alone: () => Promise<T>,
    fromLine: (line: string) => T,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const settle = (line: string | undefined) => {
        const answer =
          line === undefined || line === "E" ? alone() : Promise.resolve(line).then(fromLine);
        answer.then(resolve, reject);
      };
      if (this.queued.length === 0) setImmediate(() => this.flush());
      this.queued.push({ kind, path, settle });
    });
  }

  private flush(): void {
    const all = this.queued;
    this.queued = [];
    for (let i = 0; i < all.length; i += BATCH_MAX) {
      const batch = all.slice(i, i + BATCH_MAX);
      if (batch.length === 1) {
        batch[0]!.settle(undefined);
        continue;
      }
      void this.runBatch(batch);
    }
  }

  private async runBatch(batch: Queued[]): Promise<void> {
    let lines: string[] | undefined;
    try {
      const r = await this.exec(script(BATCH, ...batch.flatMap((q) => [q.kind, q.path])));
      const out = r.stdout.toString().split("\n").slice(0, -1);
      if (r.code === 0 && out.length === batch.length) lines = out;
    } catch {
      // Each asked alone: each gets its own error.
    }
    batch.forEach((q, i) => q.settle(lines?.[i]));
  }

  async readFile(path: string): Promise<Buffer> {
    absolute(path);
    return this.enqueue(
      "r",
      path,
      () => this.readAlone(path),
      (line) => {
        if (line === "M") throw this.missing(path);
        if (!line.startsWith("R ")) throw new Error(`${this.host}: cannot read ${path}: ${line}`);
        return Buffer.from(line.slice(2), "base64");
      },
    );
  }

  private missing(path: string): Error {
    return fileError(
      this.host,
      "read",
      path,
      { code: MISSING, stdout: Buffer.alloc(0), stderr: "no such file or directory" },
      "ENOENT",
    );
  }

  private async readAlone(path: string): Promise<Buffer> {
    const r = await this.exec(script(READ, absolute(path)));
    if (r.code === MISSING) throw this.missing(path);
    if (r.code !== 0) throw fileError(this.host, "read", path, r);
    return r.stdout;
  }

  writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    return this.writeFiles([{ path, data, mode }]);
  }

  /** Host.writeFiles: the files written in order by one command, stopping at the first failure. */
  async writeFiles(files: readonly FileWrite[]): Promise<void> {
    const bytes = files.map((f) => (typeof f.data === "string" ? Buffer.from(f.data) : f.data));
    const args = files.flatMap((f, i) => [
      absolute(f.path),
      octal(f.mode),
      String(bytes[i]!.length),
    ]);
    const r = await this.exec(script(WRITE_ALL, ...args), Buffer.concat(bytes.map(withDigest)));
    if (r.code !== 0) throw fileError(this.host, "write", stoppedAt(r, files).path, r);
  }

  async mkdirp(path: string, mode = 0o755): Promise<void> {
    const umask = (~mode & 0o777).toString(8).padStart(3, "0");
    const r = await this.exec(script(MKDIR, absolute(path), octal(mode), umask));
    if (r.code !== 0) throw fileError(this.host, "create directory", path, r);
  }

  async exists(path: string): Promise<boolean> {
    return (await this.stat(path)) !== undefined;
  }

  async stat(path: string): Promise<FileStat | undefined> {
    absolute(path);
    const alone = async () => parseStat(this.host, path, await this.exec(script(STAT, path)));
    return this.enqueue("s", path, alone, (line) =>
      line === "M"
        ? undefined
        : parseStat(this.host, path, {
            code: line.startsWith("S ") ? 0 : 1,
            stdout: Buffer.from(line.slice(2)),
            stderr: line,
          }),
    );
  }

  async readDir(path: string): Promise<string[]> {
    const r = await this.exec(script(READ_DIR, absolute(path)));
    if (r.code === NOT_A_DIRECTORY) {
      throw fileError(this.host, "list", path, { ...r, stderr: "not a directory" }, "ENOTDIR");
    }
    if (r.code !== 0) throw fileError(this.host, "list", path, r);
    return r.stdout
      .toString()
      .split("\0")
      .filter((n) => n !== "")
      .sort();
  }

  /** Moves the file `from` to `to` on the host (a rename within a file system: Go's os.Rename). */
  async rename(from: string, to: string): Promise<void> {
    const r = await this.exec(script(RENAME, absolute(from), absolute(to)));
    if (r.code === MISSING) {
      throw fileError(this.host, "move", from, { ...r, stderr: "no such file" }, "ENOENT");
    }
    if (r.code !== 0) throw fileError(this.host, "move", from, r);
  }

  /** Host.renameAll: the files moved in order by one command, stopping at the first failure. */
  async renameAll(moves: readonly (readonly [string, string])[]): Promise<void> {
    const args = moves.flatMap(([from, to]) => [absolute(from), absolute(to)]);
    const r = await this.exec(script(RENAME_ALL, ...args));
    if (r.code === 0) return;
    const [from] = stoppedAt(r, moves);
    const e =
      r.code === MISSING
        ? fileError(this.host, "move", from, { ...r, stderr: "no such file" }, "ENOENT")
        : fileError(this.host, "move", from, r);
    (e as NodeJS.ErrnoException).path = from; // which move failed
    throw e;
  }

  /** The content of folder `src` copied onto `dst` (made when missing), as `cp -a src/. dst/`. */
  async copyTree(src: string, dst: string): Promise<void> {
    const r = await this.exec(script(COPY_TREE, absolute(src), absolute(dst)));
    if (r.code === MISSING) {
      throw fileError(this.host, "copy", src, { ...r, stderr: "not a folder" }, "ENOTDIR");
    }
    if (r.code !== 0) throw fileError(this.host, "copy", src, r);
  }

  async remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    const r = await this.exec(script(opts.recursive ? REMOVE_ALL : REMOVE, absolute(path)));
    if (r.code !== 0) throw fileError(this.host, "remove", path, r);
  }
}
