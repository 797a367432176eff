import { describe, expect, it } from "vitest";
import { waitForCluster } from "../../../src/cluster/readiness.js";
import type { KubeClient, KubeObject } from "../../../src/kube/types.js";

// The readiness gate's heartbeat: while nodes or CoreDNS are not ready, a line every so often
// says which, so a wait of minutes never looks hung.

const node = (name: string, ready: boolean): KubeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name },
  status: {
    conditions: [
      ready
        ? { type: "Ready", status: "True" }
        : {
            type: "Ready",
            status: "False",
            reason: "KubeletNotReady",
            message: "PLEG is not healthy",
          },
    ],
  },
});

describe("waitForCluster", () => {
  it("says every so often what is still not ready, and stops once all is", async () => {
    let lists = 0;
    const client = {
      list: () => Promise.resolve([node("cp-1", true), node("w-1", ++lists > 8)]),
      get: () =>
        Promise.resolve({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "coredns", namespace: "kube-system" },
          status: { conditions: [{ type: "Available", status: "True" }] },
        }),
    } as unknown as KubeClient;
    const lines: string[] = [];
    await waitForCluster(client, ["cp-1", "w-1"], {
      timeoutMs: 10_000,
      intervalMs: 10,
      dnsDisabled: false,
      log: (l) => lines.push(l),
      heartbeat: { everyMs: 25 },
    });
    const beats = lines.filter((l) => l.includes("Still waiting"));
    expect(beats.length).toBeGreaterThan(0);
    for (const b of beats) {
      expect(b).toMatch(
        /^\[wait\] Still waiting after \d+s: node w-1: Ready=False \(KubeletNotReady: PLEG is not healthy\)$/,
      );
    }
    expect(lines.at(-1)).toMatch(/^\[wait\] The cluster is ready after /);
    const count = lines.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(lines).toHaveLength(count);
  });
});
