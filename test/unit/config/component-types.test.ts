import { describe, expect, it } from "vitest";
import { kubeletConfigurationType } from "../../../src/config/component-types.js";
import { marshalGoStruct, unknownGoFields } from "../../../src/config/go-struct.js";
import { releaseFor } from "../../../src/config/versions.js";

// Expected values follow the field declarations of k8s.io/kubelet config/v1beta1/types.go
// (v0.35.0 unless named) and encoding/json's rules: `omitempty` drops a nil pointer and a
// zero scalar, never a struct; a field without it is written even when unset.

const v135 = kubeletConfigurationType(releaseFor("v1.35.0"));
const ZERO_V135 = {
  authentication: {
    anonymous: {},
    webhook: { cacheTTL: "0s" },
    x509: {},
  },
  authorization: { webhook: { cacheAuthorizedTTL: "0s", cacheUnauthorizedTTL: "0s" } },
  containerRuntimeEndpoint: "",
  cpuManagerReconcilePeriod: "0s",
  crashLoopBackOff: {},
  evictionPressureTransitionPeriod: "0s",
  fileCheckFrequency: "0s",
  httpCheckFrequency: "0s",
  imageMaximumGCAge: "0s",
  imageMinimumGCAge: "0s",
  logging: {
    flushFrequency: 0,
    options: { json: { infoBufferSize: "0" }, text: { infoBufferSize: "0" } },
    verbosity: 0,
  },
  memorySwap: {},
  nodeStatusReportFrequency: "0s",
  nodeStatusUpdateFrequency: "0s",
  runtimeRequestTimeout: "0s",
  shutdownGracePeriod: "0s",
  shutdownGracePeriodCriticalPods: "0s",
  streamingConnectionIdleTimeout: "0s",
  syncFrequency: "0s",
  volumeStatsAggPeriod: "0s",
};

describe("KubeletConfiguration marshalled as kubeadm's Go code does", () => {
  it("an empty document: every struct and every field without omitempty", () => {
    expect(marshalGoStruct(v135, {})).toEqual(ZERO_V135);
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    // *bool with omitempty keeps an explicit false; bool with omitempty drops it.
    ["failSwapOn: false (*bool)", { failSwapOn: false }, { failSwapOn: false }],
    ["rotateCertificates: false (bool)", { rotateCertificates: false }, {}],
    ["serverTLSBootstrap: true (bool)", { serverTLSBootstrap: true }, { serverTLSBootstrap: true }],
    // *int32 keeps 0, int32 drops it.
    ["readOnlyPort: 0 (int32)", { readOnlyPort: 0 }, {}],
    [
      "imageGCHighThresholdPercent: 0 (*int32)",
      { imageGCHighThresholdPercent: 0 },
      { imageGCHighThresholdPercent: 0 },
    ],
    // metav1.Duration is written through time.Duration.String.
    ["syncFrequency: 60s", { syncFrequency: "60s" }, { syncFrequency: "1m0s" }],
    [
      "crashLoopBackOff.maxContainerRestartPeriod: 90s (*Duration)",
      { crashLoopBackOff: { maxContainerRestartPeriod: "90s" } },
      { crashLoopBackOff: { maxContainerRestartPeriod: "1m30s" } },
    ],
    [
      "memorySwap.swapBehavior",
      { memorySwap: { swapBehavior: "LimitedSwap" } },
      { memorySwap: { swapBehavior: "LimitedSwap" } },
    ],
    ["an empty list is omitted", { clusterDNS: [] }, {}],
    [
      "a list of structs: zero values of fields without omitempty",
      { shutdownGracePeriodByPodPriority: [{ priority: 10 }] },
      { shutdownGracePeriodByPodPriority: [{ priority: 10, shutdownGracePeriodSeconds: 0 }] },
    ],
    [
      "a pointer struct is written only when set",
      { userNamespaces: { idsPerPod: 65536 } },
      { userNamespaces: { idsPerPod: 65536 } },
    ],
    [
      "an unknown field is dropped",
      { maxPod: 110, tracing: { endpoint: "x", rate: 1 } },
      { tracing: { endpoint: "x" } },
    ],
    [
      "logging.flushFrequency given as a duration string stays a string",
      { logging: { flushFrequency: "5s", format: "json" } },
      {
        logging: {
          ...ZERO_V135.logging,
          flushFrequency: "5s",
          format: "json",
        },
      },
    ],
  ])("%s", (_name, given, changed) => {
    expect(marshalGoStruct(v135, given)).toEqual({ ...ZERO_V135, ...changed });
  });

  it("knows the fields a release added (tlsCurvePreferences and memoryReservationPolicy in v0.36.0)", () => {
    const given = { tlsCurvePreferences: [23], memoryReservationPolicy: "None" };
    expect(marshalGoStruct(v135, given)).toEqual(ZERO_V135);
    expect(marshalGoStruct(kubeletConfigurationType(releaseFor("v1.36.0")), given)).toEqual({
      ...ZERO_V135,
      ...given,
    });
  });
});

describe("unknown fields, as strict decoding names them", () => {
  it.each<[Record<string, unknown>, string[]]>([
    [{ maxPods: 110, cgroupDriver: "systemd" }, []],
    [{ maxPod: 110 }, ["maxPod"]],
    [{ logging: { format: "json", formt: "text" } }, ["logging.formt"]],
    [
      { logging: { options: { text: { splitStreams: true } } } },
      ["logging.options.text.splitStreams"],
    ],
    [
      { reservedMemory: [{ numaNode: 0, limits: { memory: "1Gi" } }, { node: 1 }] },
      ["reservedMemory[1].node"],
    ],
    // Maps are free-form: their keys are not fields.
    [{ evictionHard: { "memory.available": "100Mi" }, featureGates: { Anything: true } }, []],
  ])("%j: %j", (given, unknown) => {
    expect(unknownGoFields(v135, given)).toEqual(unknown);
  });
});
