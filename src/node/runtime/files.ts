import type { Host } from "../../remote/host.js";

// Node files kubeforge owns: written only when their content differs, so that a second run
// changes nothing (and restarts nothing).

export interface WriteIfChangedOptions {
  mode: number;
  /**
   * Keep a file that was not written by kubeforge (its first line lacks this marker) at this
   * path before replacing it, once: a later run never overwrites that backup.
   */
  backup?: { path: string; marker: string };
}

/** Writes `content` at `path` unless it is already there; true when it wrote. */
export async function writeIfChanged(
  host: Host,
  path: string,
  content: string,
  opts: WriteIfChangedOptions,
): Promise<boolean> {
  const current = (await host.exists(path)) ? (await host.readFile(path)).toString() : undefined;
  if (current === content) return false;
  if (
    current !== undefined &&
    opts.backup !== undefined &&
    !current.startsWith(opts.backup.marker) &&
    !(await host.exists(opts.backup.path))
  ) {
    await host.writeFile(opts.backup.path, current, opts.mode);
  }
  await host.writeFile(path, content, opts.mode);
  return true;
}
