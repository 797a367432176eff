import { existsSync, watch, type FSWatcher } from "node:fs";
import { sleep } from "./timing.js";

// SIMULATION (test double). The kubelet's file source watches staticPodPath with inotify
// (pkg/kubelet/config/file_linux.go) besides reading it every fileCheckFrequency, so a manifest
// put in place or taken away is acted on at once. Here: fs.watch (inotify on Linux) on the
// folder, the poll the caller passes as the fallback, and a folder that does not exist yet
// watched once it does.

/** Renames kubeadm makes in one go (the old manifest out, the new one in) are seen together. */
const SETTLE_MS = 20;

export class FolderChanges {
  private watcher: FSWatcher | undefined;
  private changed = false;
  private wake: AbortController | undefined;

  constructor(private readonly folder: string) {}

  /** Resolves at the next change of the folder (or one since the last call), or after `pollMs`. */
  async next(pollMs: number, signal: AbortSignal): Promise<void> {
    this.ensureWatching();
    if (!this.changed) {
      this.wake = new AbortController();
      await sleep(pollMs, AbortSignal.any([signal, this.wake.signal]));
      this.wake = undefined;
    }
    if (this.changed) await sleep(SETTLE_MS, signal);
    this.changed = false;
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private ensureWatching(): void {
    if (this.watcher) return;
    try {
      this.watcher = watch(this.folder, { persistent: false }, (event) => {
        this.changed = true;
        this.wake?.abort();
        // The folder itself removed or moved away: inotify says "rename" and the watch goes
        // quiet (no error). The poll goes on, and the folder is watched again once it is back.
        if (event === "rename" && !existsSync(this.folder)) this.close();
      });
      this.watcher.on("error", () => this.close());
    } catch {
      // Not there yet: the poll alone until it is.
    }
  }
}
