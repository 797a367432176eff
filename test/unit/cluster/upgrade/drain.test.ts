import { describe, expect, it } from "vitest";
import { DisruptionWatcher } from "../../../../src/cluster/upgrade/disruptions.js";
import { cordon, drain, podsToEvict, uncordon } from "../../../../src/cluster/upgrade/drain.js";
import { ApiError } from "../../../../src/kube/errors.js";
import type { KubeClient, KubeObject, ObjectRef } from "../../../../src/kube/types.js";

// Drains as `kubectl drain --ignore-daemonsets --delete-emptydir-data --force`
// (k8s.io/kubectl/pkg/drain): mirror and DaemonSet Pods stay, the rest go through the eviction
// subresource; a 429 (pkg/registry/core/pod/storage/eviction.go: "Cannot evict pod as it would
// violate the pod's disruption budget.") is retried until the timeout, then the drain fails
// naming the Pod and its PodDisruptionBudget. A fake API: only what a drain asks.

const TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget.";

function pod(name: string, extra: Partial<KubeObject["metadata"]> & Record<string, unknown> = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", uid: `uid-${name}`, labels: { app: name }, ...extra },
  } as KubeObject;
}

function fakeAPI(pods: KubeObject[], blocked: Set<string>, conflictOnce = new Set<string>()) {
  const calls: string[] = [];
  let unschedulable: boolean | null = null;
  const client = {
    description: "fake",
    get: (ref: ObjectRef) => {
      if (ref.kind === "Node") {
        return Promise.resolve({ ...ref, metadata: { name: ref.name }, spec: { unschedulable } });
      }
      const found = pods.find((p) => p.metadata.name === ref.name);
      return found
        ? Promise.resolve(found)
        : Promise.reject(
            new ApiError({
              operation: { verb: "get", kind: "Pod", name: ref.name },
              code: 404,
              reason: "NotFound",
              statusMessage: "not found",
            }),
          );
    },
    list: (_v: string, kind: string) =>
      Promise.resolve(
        kind === "Pod"
          ? pods
          : [
              {
                apiVersion: "policy/v1",
                kind: "PodDisruptionBudget",
                metadata: { name: "web-pdb", namespace: "default" },
                spec: { selector: { matchLabels: { app: "web" } } },
              },
            ],
      ),
    patch: (ref: ObjectRef, body: { spec: { unschedulable: boolean | null } }) => {
      calls.push(`patch ${ref.name} ${JSON.stringify(body)}`);
      unschedulable = body.spec.unschedulable;
      return Promise.resolve({});
    },
    createSubresource: (ref: ObjectRef, sub: string) => {
      calls.push(`${sub} ${ref.namespace}/${ref.name}`);
      if (conflictOnce.delete(ref.name)) {
        return Promise.reject(
          evictionError(
            ref.name,
            409,
            "Conflict",
            `Operation cannot be fulfilled on poddisruptionbudgets.policy "web-pdb": the object has been modified; please apply your changes to the latest version and try again`,
          ),
        );
      }
      if (blocked.has(ref.name)) {
        return Promise.reject(evictionError(ref.name, 429, "TooManyRequests", TOO_MANY));
      }
      pods = pods.filter((p) => p.metadata.name !== ref.name);
      return Promise.resolve({});
    },
  } as unknown as KubeClient;
  return { client, calls };
}

/** The API's answer to an eviction of `pod` that it did not carry out. */
const evictionError = (pod: string, code: number, reason: string, statusMessage: string) =>
  new ApiError({
    operation: { verb: "create", kind: "Pod", name: pod, namespace: "default" },
    code,
    reason,
    statusMessage,
  });

describe("drain", () => {
  it("evicts every Pod but mirror and DaemonSet Pods, and waits until they are gone", async () => {
    const pods = [
      pod("web"),
      pod("kube-proxy-x", {
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "DaemonSet", name: "kube-proxy", uid: "u1" },
        ],
      }),
      pod("etcd-w-1", { annotations: { "kubernetes.io/config.mirror": "abc" } }),
      pod("job-1"),
    ];
    const api = fakeAPI(pods, new Set());
    expect((await podsToEvict(api.client, "w-1")).map((p) => p.metadata.name)).toEqual([
      "web",
      "job-1",
    ]);
    expect(await drain(api.client, "w-1", 10_000)).toBe(2);
    expect(api.calls).toEqual(["eviction default/web", "eviction default/job-1"]);
  });

  it("asks again for an eviction whose budget update conflicted with another eviction's", async () => {
    const api = fakeAPI([pod("web"), pod("web-2")], new Set(), new Set(["web-2"]));
    expect(await drain(api.client, "w-1", 10_000)).toBe(2);
    expect(api.calls).toEqual([
      "eviction default/web",
      "eviction default/web-2",
      "eviction default/web-2",
    ]);
  });

  it("fails at the timeout naming the Pod and the PodDisruptionBudget that keeps it", async () => {
    const api = fakeAPI([pod("web")], new Set(["web"]));
    await expect(drain(api.client, "w-1", 1_000)).rejects.toThrow(
      `drain of w-1 failed: pod default/web could not be evicted within 1s: PodDisruptionBudget default/web-pdb allows no disruption (creating Pod default/web: 429 Too Many Requests: ${TOO_MANY})`,
    );
  });

  it("tells of each refused eviction, and the disruption accounting counts them per Pod and step", async () => {
    const api = fakeAPI([pod("web")], new Set(["web"]));
    let during = ["w-1 drain"];
    const watcher = new DisruptionWatcher({
      client: api.client,
      during: () => during,
      now: () => Date.parse("2026-09-01T02:00:00Z"),
    });
    const refusals: string[] = [];
    await expect(
      drain(api.client, "w-1", 1_000, (p, reason) => {
        refusals.push(`${p}: ${reason}`);
        watcher.evictionRefused(p, "w-1", reason);
      }),
    ).rejects.toThrow(/could not be evicted/);
    expect(refusals).toEqual([
      `default/web: creating Pod default/web: 429 Too Many Requests: ${TOO_MANY}`,
    ]);
    // kubectl's retry in the same step, then another step's drain.
    watcher.evictionRefused("default/web", "w-1", "429 again");
    during = ["w-2 drain"];
    watcher.evictionRefused("default/web", "w-1", "429 later");
    const report = watcher.stop();
    expect(report.counts["eviction-refused"]).toBe(2);
    expect(report.disruptions.map((d) => [d.kind, d.object, d.during, d.detail])).toEqual([
      ["eviction-refused", "Pod default/web", ["w-1 drain"], "refused 2 time(s): 429 again"],
      ["eviction-refused", "Pod default/web", ["w-2 drain"], "refused 1 time(s): 429 later"],
    ]);
  });

  it("uncordons only what it cordoned: a Node cordoned already is left to whoever did it", async () => {
    const api = fakeAPI([], new Set());
    expect(await cordon(api.client, "w-1")).toBe(true);
    expect(await cordon(api.client, "w-1")).toBe(false);
    await uncordon(api.client, "w-1");
    expect(api.calls).toEqual([
      'patch w-1 {"spec":{"unschedulable":true}}',
      'patch w-1 {"spec":{"unschedulable":null}}',
    ]);
  });
});
