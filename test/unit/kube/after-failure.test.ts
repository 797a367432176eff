import { describe, expect, it } from "vitest";
import { whenApiAnswers } from "../../../src/kube/after-failure.js";
import { apiErrorFromResponse } from "../../../src/kube/errors.js";
import { interrupt } from "../../../src/remote/interruption.js";

// After a failed control-plane step the API server restarts under the kubelet: the run's last
// calls (uncordon, the addons' read) wait for it, at kubeadm's 500 ms retry interval.

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:6443"), { code: "ECONNREFUSED" });
const notFound = apiErrorFromResponse(
  { verb: "get", kind: "Deployment", name: "coredns" },
  404,
  JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    code: 404,
    reason: "NotFound",
    message: "no",
  }),
  "https://lb:6443",
);

describe("whenApiAnswers", () => {
  it("tries again while the API server refuses connections and returns its first answer", async () => {
    let calls = 0;
    const started = Date.now();
    const got = await whenApiAnswers("the API server to read the addons", () =>
      ++calls < 3 ? Promise.reject(refused()) : Promise.resolve("v1.13.1"),
    );
    expect([got, calls]).toEqual(["v1.13.1", 3]);
    // Two waits of kubeadm's API call retry interval.
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it("returns NotFound at once: it is an answer", async () => {
    let calls = 0;
    await expect(
      whenApiAnswers("the API server to read the addons", () => {
        calls++;
        return Promise.reject(notFound);
      }),
    ).rejects.toBe(notFound);
    expect(calls).toBe(1);
  });

  // Last: the interruption is process-wide and cannot be undone.
  it("tries once in an interrupted run", async () => {
    interrupt(new Error("interrupted"));
    let calls = 0;
    await expect(
      whenApiAnswers("the API server to uncordon w-1", () => {
        calls++;
        return Promise.reject(refused());
      }),
    ).rejects.toThrow("ECONNREFUSED");
    expect(calls).toBe(1);
  });
});
