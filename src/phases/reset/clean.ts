import { posix } from "node:path";
import type { Host } from "../../remote/host.js";

// kubeadm's CleanDir (cmd/phases/reset/cleanupnode.go): everything inside a directory goes, the
// directory itself stays (with its owner and mode); a directory that does not exist is already
// clean. Entries are removed without following symbolic links out of the directory.

/** Removes every entry of `dir`; returns how many there were. */
export async function cleanDir(host: Host, dir: string): Promise<number> {
  const entries = await host.readDir(dir);
  for (const name of entries) await host.remove(posix.join(dir, name), { recursive: true });
  return entries.length;
}

/** Whether `dir` has no entries (a missing directory counts as empty). */
export async function isDirEmpty(host: Host, dir: string): Promise<boolean> {
  return (await host.readDir(dir)).length === 0;
}

/** Go's %v of a []string, as kubeadm prints its lists: "[/a /b]". */
export function goList(items: readonly string[]): string {
  return `[${items.join(" ")}]`;
}

/** The message of an unknown thrown value. */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
