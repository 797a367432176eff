import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { MAX_YAML_LENGTH } from "../config/yaml.js";

// Configuration files kubeforge reads on the runner (a Cluster file, a kubeadm --config, the
// files a Cluster names): regular files of a bounded size only. A FIFO or a device given by
// mistake would otherwise block the run forever or feed it without end. The file is opened
// without blocking and checked through its descriptor, so what is checked is what is read.

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
