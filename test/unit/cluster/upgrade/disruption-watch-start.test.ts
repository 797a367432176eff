import { describe, expect, it } from "vitest";
import { DisruptionWatcher } from "../../../../src/cluster/upgrade/disruptions.js";
import type { CollectionWatch, KubeClient } from "../../../../src/kube/types.js";

// The disruption watch's start: Pods, Deployments and DaemonSets each listed and watched
// (KubeClient.watch resolves once its first list arrived). The three lists go at once; a watch
// that started is stopped with the watcher even when another could not start.

function fakeWatches(fail?: string) {
  const asked: string[] = [];
  const stopped: string[] = [];
  const answers = new Map<string, () => void>();
  const client = {
    description: "fake",
    watch: (_apiVersion: string, kind: string) => {
      asked.push(kind);
      return new Promise<CollectionWatch>((resolve, reject) => {
        answers.set(kind, () =>
          kind === fail
            ? reject(new Error(`listing ${kind}s: 403 Forbidden`))
            : resolve({ stop: () => stopped.push(kind) }),
        );
      });
    },
  } as unknown as KubeClient;
  return { client, asked, stopped, answer: (kind: string) => answers.get(kind)!() };
}

describe("DisruptionWatcher.start", () => {
  it("asks for the three watches before any first list arrived", async () => {
    const api = fakeWatches();
    const watcher = new DisruptionWatcher({ client: api.client, during: () => [] });
    const started = watcher.start();
    await new Promise((r) => setTimeout(r, 5));
    expect(api.asked).toEqual(["Pod", "Deployment", "DaemonSet"]);
    for (const kind of ["DaemonSet", "Pod", "Deployment"]) api.answer(kind);
    await started;
    watcher.stop();
    expect(api.stopped.sort()).toEqual(["DaemonSet", "Deployment", "Pod"]);
  });

  it("fails with the watch that could not start, and stops the ones that did", async () => {
    const api = fakeWatches("Deployment");
    const watcher = new DisruptionWatcher({ client: api.client, during: () => [] });
    const started = watcher.start();
    await new Promise((r) => setTimeout(r, 5));
    for (const kind of ["Pod", "Deployment", "DaemonSet"]) api.answer(kind);
    await expect(started).rejects.toThrow("listing Deployments: 403 Forbidden");
    watcher.stop();
    expect(api.stopped.sort()).toEqual(["DaemonSet", "Pod"]);
  });
});
