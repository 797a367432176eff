import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FolderChanges } from "../../support/sim/kubelet/folder-changes.js";

// The simulated kubelet's view of staticPodPath: like the kubelet's file source
// (pkg/kubelet/config/file_linux.go) it is told of a change by inotify, not only by its poll.
// Each wait below polls every 60 s, past the test's own timeout: one that ends was ended by
// the change.

const NEVER = 60_000;

let dir: string;
let changes: FolderChanges | undefined;
let stop: AbortController;
let signal: AbortSignal;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-folder-changes-"));
  stop = new AbortController();
  signal = stop.signal;
});
afterEach(async () => {
  stop.abort(); // ends the waits a test left running
  changes?.close();
  changes = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** Resolves to "changed" when `wait` ends first, "still waiting" after `ms`. */
const within = (wait: Promise<void>, ms: number) =>
  Promise.race([
    wait.then(() => "changed"),
    new Promise<string>((r) => setTimeout(() => r("still waiting"), ms)),
  ]);

describe("the simulated kubelet's static pod folder watch", () => {
  it("ends the wait when a manifest is moved in, as kubeadm's upgrade does it", async () => {
    const manifests = join(dir, "manifests");
    await mkdir(manifests);
    await writeFile(join(dir, "etcd.yaml"), "kind: Pod\n");
    changes = new FolderChanges(manifests);
    // The first call starts watching; nothing has changed yet, so it waits.
    const first = changes.next(NEVER, signal);
    expect(await within(first, 300)).toBe("still waiting");
    await rename(join(dir, "etcd.yaml"), join(manifests, "etcd.yaml"));
    expect(await within(first, 10_000)).toBe("changed");
  });

  it("keeps a change made while the kubelet was busy between two waits", async () => {
    changes = new FolderChanges(dir);
    await changes.next(10, signal); // watching from here on
    await writeFile(join(dir, "kube-apiserver.yaml"), "kind: Pod\n");
    await new Promise((r) => setTimeout(r, 100)); // the event arrives before the next wait
    expect(await within(changes.next(NEVER, signal), 10_000)).toBe("changed");
    // Taken once: the wait after it waits again.
    expect(await within(changes.next(NEVER, signal), 300)).toBe("still waiting");
  });

  it("watches the folder again after it was removed and made anew", async () => {
    const manifests = join(dir, "manifests");
    await mkdir(manifests);
    changes = new FolderChanges(manifests);
    const removed = changes.next(NEVER, signal);
    await rm(manifests, { recursive: true });
    expect(await within(removed, 10_000)).toBe("changed");
    await mkdir(manifests);
    await changes.next(10, signal); // watching the new folder from here on
    const waiting = changes.next(NEVER, signal);
    await writeFile(join(manifests, "etcd.yaml"), "kind: Pod\n");
    expect(await within(waiting, 10_000)).toBe("changed");
  });

  it("polls a folder that is not there yet, and watches it once it is", async () => {
    const manifests = join(dir, "manifests");
    changes = new FolderChanges(manifests);
    await changes.next(10, signal); // ends by its poll
    await mkdir(manifests);
    await changes.next(10, signal); // watching it now
    const waiting = changes.next(NEVER, signal);
    await writeFile(join(manifests, "kube-scheduler.yaml"), "kind: Pod\n");
    expect(await within(waiting, 10_000)).toBe("changed");
  });
});
