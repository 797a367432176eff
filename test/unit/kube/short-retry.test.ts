import { describe, expect, it } from "vitest";
import { apiErrorFromResponse } from "../../../src/kube/errors.js";
import { SHORT_RETRY_TIMEOUT_MS, withShortRetry } from "../../../src/kube/short-retry.js";

// kubeadm's GetConfigMapWithShortRetry (util/apiclient/idempotency.go): every 50 ms for 350 ms,
// the last error returned; NotFound and Forbidden are answers here, returned at once.

const op = { verb: "get" as const, kind: "ConfigMap", name: "kubeadm-config" };
const status = (code: number, reason: string, message: string) =>
  apiErrorFromResponse(
    op,
    code,
    JSON.stringify({ kind: "Status", apiVersion: "v1", code, reason, message }),
    "https://lb:6443",
  );

describe("withShortRetry", () => {
  it("tries again after an API server's own error and returns the next answer", async () => {
    let calls = 0;
    const got = await withShortRetry(() => {
      calls++;
      if (calls === 1) {
        return Promise.reject(status(500, "InternalError", "etcdserver: connection refused"));
      }
      return Promise.resolve("answer");
    });
    expect([got, calls]).toEqual(["answer", 2]);
  });

  it("gives up after 350 ms with the last error", async () => {
    let calls = 0;
    const started = Date.now();
    const e = await withShortRetry(() => {
      calls++;
      return Promise.reject(status(503, "ServiceUnavailable", `try ${calls}`));
    }).catch((x: unknown) => x as Error);
    expect(Date.now() - started).toBeLessThan(SHORT_RETRY_TIMEOUT_MS + 300);
    expect(calls).toBeGreaterThan(2);
    expect(e.message).toContain(`try ${calls}`);
  });

  it("returns NotFound and Forbidden at once: they are answers", async () => {
    for (const [code, reason] of [
      [404, "NotFound"],
      [403, "Forbidden"],
    ] as const) {
      let calls = 0;
      await expect(
        withShortRetry(() => {
          calls++;
          return Promise.reject(status(code, reason, "no"));
        }),
      ).rejects.toThrow(`${code}`);
      expect(calls).toBe(1);
    }
  });
});
