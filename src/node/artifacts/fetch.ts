import { execFile } from "node:child_process";
import { chmod, copyFile, mkdir, open, readdir, rename, stat } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import {
  entryDir,
  placeEntry,
  readVerifiedEntry,
  stagingDir,
  type CacheKey,
  type CacheManifest,
} from "./cache.js";
import { INSTALL_DIRS } from "./catalog.js";
import { isSha256, parseChecksumFile, sha256File } from "./checksum.js";
import { contentProblem, elfArch } from "./content.js";
import { cancellable } from "../../remote/interruption.js";
import { downloadText, downloadToFile, type DownloadOptions } from "./download.js";
import type { Artifact, ArtifactName } from "./types.js";

export { artifactCacheDir } from "./cache.js";

export interface FetchOptions {
  /** runner-side cache root (see artifactCacheDir) */
  cacheDir: string;
  /** extra trusted CA for the download server (tests) */
  ca?: string | Buffer;
  timeoutMs?: number;
  retries?: number;
  log?: (line: string) => void;
  /** Between two progress lines of a long download (default 20 s). */
  progressIntervalMs?: number;
  /** Stops downloads and extraction (the run's interruption always does). */
  signal?: AbortSignal;
}

export interface FetchedArtifact {
  name: string;
  version: string;
  arch: string;
  /** runner path: the binary, or the folder the tarball was extracted to */
  path: string;
  /** files to install: runner path → node path and mode */
  files: { from: string; to: string; mode: number }[];
  sha256: string;
  /** URL or runner path */
  source: string;
}

/** Files an archive must contain to be the artifact it claims to be. */
const REQUIRED_IN_ARCHIVE: Partial<Record<ArtifactName, string[]>> = {
  crictl: ["crictl"],
  // loopback: every runtime's pod sandbox; bridge + host-local: kubeforge's built-in CNI.
  "cni-plugins": ["loopback", "bridge", "host-local"],
};

const ARCHES = ["amd64", "arm64"];
const CUSTOM_KUBELET_TOOL = "kubeforge-kubelet-custom";

function downloadOptions(opts: FetchOptions): DownloadOptions {
  return {
    ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.retries !== undefined ? { retries: opts.retries } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.progressIntervalMs !== undefined
      ? { progressIntervalMs: opts.progressIntervalMs }
      : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
}

function modeOf(fileMode: number): number {
  return fileMode & 0o111 ? 0o755 : 0o644;
}

async function readHead(path: string, bytes = 512): Promise<Buffer> {
  const fh = await open(path, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Regular files under `dir`, as paths relative to it (symlinks and folders skipped). */
async function regularFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}

function extract(archive: string, into: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // The system's tar, as install-kubeadm.md does (`tar -C DEST -xz`); --no-same-owner so a
    // root runner does not give the files the archive's owners. (@actions/tool-cache's
    // extractTar runs the same tar, but prints its command line on stdout and leaves tar's
    // reason for a failure out of its error.)
    execFile(
      "tar",
      ["-xzf", archive, "-C", into, "--no-same-owner"],
      { timeout: 120_000, maxBuffer: 4 * 1024 * 1024, signal: cancellable(signal) },
      (error, _stdout, stderr) => {
        if (error)
          reject(new Error((stderr || error.message).trim().split("\n").slice(-2).join(" | ")));
        else resolvePromise();
      },
    );
  });
}

/** The manifest of a staged folder's files. */
async function manifestOf(dir: string, source: string, sha256: string): Promise<CacheManifest> {
  const files: CacheManifest["files"] = {};
  for (const rel of await regularFiles(dir)) {
    const s = await stat(join(dir, rel));
    files[rel] = { sha256: await sha256File(join(dir, rel)), mode: modeOf(s.mode) };
  }
  return { source, sha256, files };
}

function fetchedFrom(
  a: { name: ArtifactName; version: string; arch: string; format: "binary" | "tar.gz" },
  dir: string,
  manifest: CacheManifest,
  source: string,
): FetchedArtifact {
  const installDir = INSTALL_DIRS[a.name];
  const rels = Object.keys(manifest.files).sort();
  const files = rels.map((rel) => ({
    from: join(dir, rel),
    to: `${installDir}/${rel}`,
    mode: a.format === "binary" ? 0o755 : manifest.files[rel]!.mode,
  }));
  return {
    name: a.name,
    version: a.version,
    arch: a.arch,
    path: a.format === "binary" ? join(dir, a.name) : dir,
    files,
    sha256: manifest.sha256,
    source,
  };
}

const inFlight = new Map<string, Promise<FetchedArtifact>>();

/** Fetches concurrently asked for the same entry share one download. */
function once(key: string, run: () => Promise<FetchedArtifact>): Promise<FetchedArtifact> {
  const running = inFlight.get(key);
  if (running) return running;
  const p = run().finally(() => inFlight.delete(key));
  inFlight.set(key, p);
  return p;
}

/**
 * Downloads an artifact and its published checksum, checks the content is what it claims (ELF
 * for the artifact's arch, gzip) and the SHA-256, and places it in the cache; a verified cache
 * entry is reused without any request. Errors are one sentence naming the URL, and leave
 * nothing in the cache.
 */
export function fetchArtifact(a: Artifact, opts: FetchOptions): Promise<FetchedArtifact> {
  const key: CacheKey = { tool: `kubeforge-${a.name}`, version: a.version, arch: a.arch };
  return once(entryDir(opts.cacheDir, key), () => fetchUncached(a, key, opts));
}

async function fetchUncached(
  a: Artifact,
  key: CacheKey,
  opts: FetchOptions,
): Promise<FetchedArtifact> {
  const log = opts.log;
  const cached = await readVerifiedEntry(opts.cacheDir, key, log);
  if (cached && cached.source === a.url) {
    log?.(`using cached ${a.name} ${a.version} (${a.arch}) from ${entryDir(opts.cacheDir, key)}`);
    return fetchedFrom(a, entryDir(opts.cacheDir, key), cached, a.url);
  }
  const dl = downloadOptions(opts);
  const fileName = basename(new URL(a.url).pathname);
  const checksumText = await downloadText(a.checksumUrl, dl);
  const expected = parseChecksumFile(checksumText, fileName, a.checksumUrl);

  const staging = await stagingDir(opts.cacheDir);
  try {
    const download = join(staging.dir, "download");
    log?.(`downloading ${a.url}`);
    const got = await downloadToFile(a.url, download, dl);
    const problem = contentProblem(got.head, a.format, a.format === "binary" ? a.arch : undefined);
    if (problem) {
      const type = got.contentType ? `, Content-Type ${got.contentType}` : "";
      throw new Error(
        `${a.url} ${problem}, not the ${a.name} ${a.version} ${a.format === "binary" ? "binary" : "archive"} (HTTP 200${type})`,
      );
    }
    if (got.sha256 !== expected) {
      throw new Error(
        `${a.url} does not match its published checksum ${a.checksumUrl}: expected sha256 ${expected}, got ${got.sha256}`,
      );
    }
    const out = join(staging.dir, "entry");
    await mkdir(out);
    if (a.format === "binary") {
      await rename(download, join(out, a.name));
      await chmod(join(out, a.name), 0o755);
    } else {
      await extract(download, out, opts.signal).catch((e: Error) => {
        throw new Error(`${a.url} could not be extracted with tar: ${e.message}`, { cause: e });
      });
      const files = await regularFiles(out);
      const missing = (REQUIRED_IN_ARCHIVE[a.name] ?? []).filter((f) => !files.includes(f));
      if (missing.length > 0) {
        throw new Error(`${a.url} has no ${missing.join(", ")}: it is not the ${a.name} archive`);
      }
    }
    const manifest = await manifestOf(out, a.url, got.sha256);
    const dir = await placeEntry(opts.cacheDir, key, out, manifest);
    log?.(`${a.name} ${a.version} (${a.arch}): sha256 ${got.sha256} verified, cached in ${dir}`);
    return fetchedFrom(a, dir, manifest, a.url);
  } finally {
    await staging.dispose();
  }
}

/** "<source>#sha256=<hex>" → the source and the pin. */
function splitPin(source: string): { location: string; pin: string | undefined } {
  const at = source.lastIndexOf("#sha256=");
  if (at < 0) return { location: source.trim(), pin: undefined };
  const pin = source.slice(at + "#sha256=".length).trim();
  if (!isSha256(pin)) {
    throw new Error(
      `the custom kubelet "${source}" has a pin that is not a SHA-256 (expected #sha256= and 64 hex digits)`,
    );
  }
  return { location: source.slice(0, at).trim(), pin: pin.toLowerCase() };
}

function overrideFetched(
  dir: string,
  arch: string,
  sha256: string,
  source: string,
): FetchedArtifact {
  return {
    name: "kubelet",
    version: "custom",
    arch,
    path: join(dir, "kubelet"),
    files: [{ from: join(dir, "kubelet"), to: `${INSTALL_DIRS.kubelet}/kubelet`, mode: 0o755 }],
    sha256,
    source,
  };
}

/** The arch of a custom kubelet from its ELF header; throws naming `what` for anything else. */
function customArch(head: Buffer, what: string): string {
  const problem = contentProblem(head, "binary", undefined);
  if (problem) throw new Error(`the custom kubelet ${what} ${problem}`);
  const arch = elfArch(head)!;
  if (!ARCHES.includes(arch)) {
    throw new Error(
      `the custom kubelet ${what} is an ELF executable for ${arch}: kubeforge installs amd64 and arm64 binaries only`,
    );
  }
  return arch;
}

/** A user's kubelet: a runner path or an https/http URL (optional "#sha256=<hex>" suffix pins it). */
export async function fetchKubeletOverride(
  source: string,
  opts: FetchOptions,
): Promise<FetchedArtifact> {
  const { location, pin } = splitPin(source);
  const isUrl = /^[a-z][a-z0-9+.-]*:/i.test(location) && !location.startsWith("/");
  if (isUrl && !/^https?:\/\//i.test(location)) {
    throw new Error(`the custom kubelet "${location}" is neither a path nor an http(s) URL`);
  }
  const log = opts.log;
  const report = (sha: string, where: string) => {
    if (!pin) log?.(`custom kubelet ${where}: sha256 ${sha} (append #sha256=${sha} to pin it)`);
  };

  // A pinned kubelet already in the cache needs no request and no copy.
  if (pin) {
    for (const arch of ARCHES) {
      const key = { tool: CUSTOM_KUBELET_TOOL, version: pin, arch };
      const cached = await readVerifiedEntry(opts.cacheDir, key, log);
      if (cached && cached.sha256 === pin) {
        log?.(`using cached custom kubelet sha256 ${pin} (${arch})`);
        return overrideFetched(entryDir(opts.cacheDir, key), arch, pin, location);
      }
    }
  }

  const staging = await stagingDir(opts.cacheDir);
  try {
    const out = join(staging.dir, "entry");
    await mkdir(out);
    const file = join(out, "kubelet");
    let sha: string;
    let arch: string;
    let where: string;
    if (isUrl) {
      where = location;
      log?.(`downloading the custom kubelet ${location}`);
      const got = await downloadToFile(location, file, downloadOptions(opts));
      arch = customArch(got.head, location);
      sha = got.sha256;
    } else {
      where = resolve(location);
      const s = await stat(where).catch(() => undefined);
      if (!s) throw new Error(`the custom kubelet ${where} does not exist`);
      if (!s.isFile()) throw new Error(`the custom kubelet ${where} is not a file`);
      arch = customArch(await readHead(where), where);
      // Copied before hashing: the cache entry is exactly the bytes that were checked.
      await copyFile(where, file);
      sha = await sha256File(file);
    }
    if (pin && sha !== pin) {
      throw new Error(
        `the custom kubelet ${where} does not match its pin: expected sha256 ${pin}, got ${sha}`,
      );
    }
    await chmod(file, 0o755);
    const key = { tool: CUSTOM_KUBELET_TOOL, version: sha, arch };
    const dir = await placeEntry(opts.cacheDir, key, out, {
      source: where,
      sha256: sha,
      files: { kubelet: { sha256: sha, mode: 0o755 } },
    });
    report(sha, where);
    return overrideFetched(dir, arch, sha, where);
  } finally {
    await staging.dispose();
  }
}
