import { readFile, stat } from "node:fs/promises";
import { posix } from "node:path";
import type { Host } from "../../remote/host.js";
import { goArch } from "./catalog.js";
import { sha256File } from "./checksum.js";
import type { FetchedArtifact } from "./fetch.js";

// Copies fetched artifacts onto a node. Only files whose content or mode differ are written
// (Host.writeFile: temporary file + rename, so a running kubelet is replaced, never truncated,
// and sudo is the Host's business); a re-run changes nothing.

interface Planned {
  from: string;
  to: string;
  mode: number;
  sha256: string;
  what: string;
}

/** Runner-side hashes, remembered per file state: one fetch is installed on many nodes. */
const localHashes = new Map<string, Promise<string>>();

async function localSha256(path: string): Promise<string> {
  const s = await stat(path);
  const key = `${path}\0${s.size}\0${s.mtimeMs}\0${s.ino}`;
  let hash = localHashes.get(key);
  if (!hash) {
    hash = sha256File(path);
    localHashes.set(key, hash);
    hash.catch(() => localHashes.delete(key));
  }
  return hash;
}

/**
 * The machine path a command sees for a host path: LocalHost's --rootfs maps file operations
 * but not command arguments (the same rule as phases/reset/unmount.ts rootfsOf).
 */
export function commandPath(host: Host, path: string): string {
  const rootfs = (host as { rootfs?: unknown }).rootfs;
  return typeof rootfs === "string" && rootfs !== "" ? posix.join(rootfs, path) : path;
}

interface NodeFile {
  sha256: string;
  mode: number;
}

/**
 * sha256 and mode of each node file that exists: one `sha256sum` and one `stat` for all of
 * them (as root: the node's files may be unreadable to a sudo user's own login).
 */
async function nodeFiles(host: Host, paths: string[]): Promise<Map<string, NodeFile>> {
  const byCommandPath = new Map(paths.map((p) => [commandPath(host, p), p]));
  const args = [...byCommandPath.keys()];
  const opts = { sudo: true, readOnly: true, timeoutMs: 120_000 };
  const [sums, modes] = await Promise.all([
    host.exec(["sha256sum", "--", ...args], opts),
    host.exec(["stat", "-c", "%a %n", "--", ...args], opts),
  ]);
  // Exit 1 with "No such file" lines is the normal answer for files not installed yet; a run
  // that printed nothing and complains otherwise means the tool itself is missing or failing.
  for (const [tool, r] of [
    ["sha256sum", sums],
    ["stat", modes],
  ] as const) {
    if (r.code !== 0 && r.stdout.trim() === "" && !/No such file/i.test(r.stderr)) {
      const why = r.stderr.trim().split("\n").slice(-1)[0] ?? "";
      throw new Error(`${host.name}: "${tool}" failed with code ${r.code}: ${why}`);
    }
  }
  const modeOf = new Map<string, number>();
  for (const line of modes.stdout.split("\n")) {
    const m = /^([0-7]+) (.+)$/.exec(line);
    const path = m ? byCommandPath.get(m[2]!) : undefined;
    if (path) modeOf.set(path, parseInt(m![1]!, 8));
  }
  const out = new Map<string, NodeFile>();
  for (const line of sums.stdout.split("\n")) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    const path = m ? byCommandPath.get(m[2]!) : undefined;
    const mode = path ? modeOf.get(path) : undefined;
    if (path && mode !== undefined) out.set(path, { sha256: m![1]!, mode });
  }
  return out;
}

export async function installArtifacts(
  host: Host,
  fetched: FetchedArtifact[],
  opts: { log?: (line: string) => void },
): Promise<{ installed: string[]; unchanged: string[] }> {
  const log = opts.log;
  const nodeArch = goArch((await host.facts()).arch);
  for (const f of fetched) {
    if (f.arch !== nodeArch) {
      throw new Error(
        `${host.name}: ${f.name} ${f.version} from ${f.source} is built for ${f.arch}, but the node is ${nodeArch}`,
      );
    }
  }
  // Later entries win for the same node path: [...official, customKubelet] installs the custom one.
  const plan = new Map<string, Planned>();
  for (const f of fetched) {
    for (const file of f.files) {
      plan.set(file.to, {
        ...file,
        sha256: await localSha256(file.from),
        what: `${f.name} ${f.version}`,
      });
    }
  }
  const targets = [...plan.keys()];
  if (targets.length === 0) return { installed: [], unchanged: [] };

  const current = await nodeFiles(host, targets);
  const installed: string[] = [];
  const unchanged: string[] = [];
  for (const [to, p] of plan) {
    const now = current.get(to);
    if (now && now.sha256 === p.sha256 && now.mode === p.mode) {
      unchanged.push(to);
      continue;
    }
    // One file in memory at a time: a kubelet is ~100 MB.
    await host.writeFile(to, await readFile(p.from), p.mode);
    log?.(`${host.name}: installed ${to} (${p.what}, sha256 ${p.sha256.slice(0, 12)}…)`);
    installed.push(to);
  }
  if (unchanged.length > 0) {
    log?.(`${host.name}: ${unchanged.length} file(s) already up to date`);
  }
  return { installed, unchanged };
}
