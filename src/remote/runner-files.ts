import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { chmod, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { MAX_YAML_LENGTH } from "../config/yaml.js";

// Files on the runner. Configuration files kubeforge reads (a Cluster file, a kubeadm --config,
// the files a Cluster names) are regular files of a bounded size only: a FIFO or a device given
// by mistake would otherwise block the run forever or feed it without end. The file is opened
// without blocking and checked through its descriptor, so what is checked is what is read.
// Files kubeforge writes never go through a link someone planted.

/** The largest configuration file read (bytes): the bound on YAML texts (config/yaml.ts). */
export const MAX_INPUT_FILE_BYTES = MAX_YAML_LENGTH;

/** A file that could not be read; `code` is the system's (ENOENT...) when there is one. */
export class InputFileError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "InputFileError";
  }
}

/**
 * The text of a configuration file. `what` names it in errors ("the Cluster file"): one
 * sentence naming the file, never quoting its content.
 */
export function readInputFileSync(path: string, what: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new InputFileError(`cannot read ${what} ${path}: ${err.message}`, err.code, { cause: e });
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile()) {
      const kind = s.isDirectory() ? "a directory" : s.isFIFO() ? "a FIFO" : "not a regular file";
      throw new InputFileError(`${what} ${path} is ${kind}; give a regular file`);
    }
    if (s.size > MAX_INPUT_FILE_BYTES) {
      throw new InputFileError(
        `${what} ${path} is ${s.size} bytes; kubeforge reads configuration files of at most ${MAX_INPUT_FILE_BYTES}`,
      );
    }
    const buffer = Buffer.alloc(s.size);
    let read = 0;
    while (read < s.size) {
      const n = readSync(fd, buffer, read, s.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** readInputFileSync for async callers (the files are small; the read is bounded). */
export function readInputFile(path: string, what: string): Promise<string> {
  return new Promise((resolve) => resolve(readInputFileSync(path, what)));
}

/**
 * Writes a file on the runner whole or not at all, with `mode` whatever the umask: through a
 * temporary name nobody can predict, created exclusively (a link planted there is never
 * followed), then renamed over `path` — which replaces a link at `path` instead of writing
 * through it. Folders kubeforge owns (its state folder, dry-run and diagnostics folders) are
 * written only this way.
 */
export async function writeRunnerFile(
  path: string,
  data: string | Buffer,
  mode: number,
): Promise<void> {
  // Hidden: the kubelet takes every other file in its static Pod folder for a manifest, at once.
  const tmp = join(dirname(path), `.${basename(path)}.kubeforge-${randomBytes(8).toString("hex")}`);
  try {
    await writeFile(tmp, data, { mode, flag: "wx" });
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
