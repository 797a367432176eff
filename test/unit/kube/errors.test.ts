import { describe, expect, it } from "vitest";
import {
  ApiError,
  apiErrorFromNetwork,
  apiErrorFromResponse,
  apiErrorOf,
  describeOperation,
  isForbidden,
  isNotFound,
  isTransient,
  isUnauthorized,
} from "../../../src/kube/errors.js";

describe("ApiError", () => {
  it.each([
    [
      { verb: "create", kind: "Secret", name: "bootstrap-token-abcdef", namespace: "kube-system" },
      "creating Secret kube-system/bootstrap-token-abcdef",
    ],
    [{ verb: "patch", kind: "Node", name: "cp-1" }, "patching Node cp-1"],
    [
      { verb: "update", kind: "ConfigMap", name: "kubelet-config", namespace: "kube-system" },
      "updating ConfigMap kube-system/kubelet-config",
    ],
    [{ verb: "delete", kind: "Secret", name: "s", namespace: "ns" }, "deleting Secret ns/s"],
    [
      { verb: "list", kind: "Pod", namespace: "kube-system", labelSelector: "tier=control-plane" },
      'listing Pods in kube-system with labels "tier=control-plane"',
    ],
    [{ verb: "list", kind: "ClusterRoleBinding" }, "listing ClusterRoleBindings"],
    [{ verb: "getRaw", path: "/livez" }, "getting /livez"],
  ] as const)("describes %j as %s", (op, text) => {
    expect(describeOperation(op)).toBe(text);
  });

  it("reads only the Status of a body", () => {
    const body = JSON.stringify({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      message: "Unauthorized",
      reason: "Unauthorized",
      code: 401,
      details: { causes: [{ message: "x".repeat(1000) }] },
    });
    const e = apiErrorFromResponse(
      { verb: "get", kind: "ConfigMap", name: "kubelet-config", namespace: "kube-system" },
      401,
      body,
    );
    expect(e.message).toBe(
      "getting ConfigMap kube-system/kubelet-config: 401 Unauthorized: Unauthorized",
    );
    expect(isUnauthorized(e)).toBe(true);
    expect(e.ref).toEqual({ kind: "ConfigMap", name: "kubelet-config", namespace: "kube-system" });
  });

  it("derives reasons from codes when the body has none (client-go's NewGenericServerResponse)", () => {
    const op = { verb: "get", kind: "Node", name: "n" } as const;
    expect(apiErrorFromResponse(op, 404, "").reason).toBe("NotFound");
    expect(apiErrorFromResponse(op, 504, "").reason).toBe("Timeout");
    expect(apiErrorFromResponse(op, 429, "").reason).toBe("TooManyRequests");
    expect(apiErrorFromResponse(op, 418, "").reason).toBe("Unknown");
    expect(apiErrorFromResponse(op, 503, "").message).toBe(
      "getting Node n: 503 Service Unavailable",
    );
  });

  it("describes a timeout and a TLS failure in one line", () => {
    const timeout = apiErrorFromNetwork(
      { verb: "getRaw", path: "/livez" },
      "https://10.0.0.1:6443",
      new DOMException("The operation was aborted due to timeout", "TimeoutError"),
      30_000,
    );
    expect(timeout.message).toBe(
      "getting /livez: no response from https://10.0.0.1:6443: the request got no answer within 30s",
    );
    const tls = new TypeError("fetch failed", {
      cause: Object.assign(new Error("self-signed certificate in certificate chain"), {
        code: "SELF_SIGNED_CERT_IN_CHAIN",
      }),
    });
    const e = apiErrorFromNetwork(
      { verb: "get", kind: "Node", name: "n" },
      "https://10.0.0.1:6443",
      tls,
    );
    expect(e.message).toBe(
      "getting Node n: no response from https://10.0.0.1:6443: self-signed certificate in certificate chain (SELF_SIGNED_CERT_IN_CHAIN)",
    );
    expect(e.networkCode).toBe("SELF_SIGNED_CERT_IN_CHAIN");
    expect(isTransient(e)).toBe(true);
  });

  it("predicates find an ApiError through wrapping causes, and only then", () => {
    const inner = new ApiError({
      operation: { verb: "create", kind: "ConfigMap", name: "x", namespace: "y" },
      code: 403,
      reason: "Forbidden",
      statusMessage: "no",
    });
    const wrapped = new Error("error execution phase upload-config", {
      cause: new Error("timed out", { cause: inner }),
    });
    expect(apiErrorOf(wrapped)).toBe(inner);
    expect(isForbidden(wrapped)).toBe(true);
    expect(isNotFound(wrapped)).toBe(false);
    expect(isForbidden(new Error("Forbidden"))).toBe(false);
    expect(isTransient(inner)).toBe(false);
  });
});
