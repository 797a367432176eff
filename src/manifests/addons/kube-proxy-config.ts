import { tryParseGoDurationNanos, formatGoDurationNanos } from "../../config/duration.js";
import type { Release } from "../../config/release.js";
import type { ComponentConfig } from "../../config/types.js";
import { KUBE_PROXY_CONFIG_API } from "../../config/types.js";
import { toYAML } from "../../config/yaml.js";

// The KubeProxyConfiguration text kubeadm stores in the kube-proxy ConfigMap (key config.conf).
// kubeadm decodes the document into the Go type k8s.io/kube-proxy/config/v1alpha1
// KubeProxyConfiguration, defaults only its own few fields (componentconfigs/kubeproxy.go
// Default), then marshals the struct (componentconfigs handler.Marshal): every field without
// `omitempty` is written, unset ones as Go zero values ("", 0, false, null, 0s), and fields the
// type does not know are dropped. The shape below is that type as read at
// kubernetes/kubernetes@052d2d84 (staging/src/k8s.io/kube-proxy/config/v1alpha1/types.go),
// with component-base's ClientConnectionConfiguration and logs/api/v1 LoggingConfiguration.

type Field =
  | { kind: "value"; zero: unknown; omitEmpty?: true; duration?: true }
  | { kind: "struct"; fields: Record<string, Field> }
  /** Free-form (maps, lists of structs): written as given, omitted when empty if omitEmpty. */
  | { kind: "free"; omitEmpty: boolean };

const v = (zero: unknown): Field => ({ kind: "value", zero });
const duration: Field = { kind: "value", zero: "0s", duration: true };
const nullDuration: Field = { kind: "value", zero: null, duration: true };
const omitted = (zero: unknown): Field => ({ kind: "value", zero, omitEmpty: true });
const struct = (fields: Record<string, Field>): Field => ({ kind: "struct", fields });

/** logs/api/v1 OutputRoutingOptions: splitStream is omitempty; a zero Quantity prints "0". */
const outputRouting = () => struct({ splitStream: omitted(false), infoBufferSize: v("0") });

function kubeProxyConfigurationShape(release: Release): Record<string, Field> {
  const iptables: Record<string, Field> = {
    masqueradeBit: v(null),
    masqueradeAll: v(false),
    localhostNodePorts: v(null),
    syncPeriod: duration,
    minSyncPeriod: duration,
  };
  if (release.behaviour.kubeProxySNATNodeInternalIP) iptables.snatNodeInternalIP = v(null);
  return {
    featureGates: { kind: "free", omitEmpty: true },
    clientConnection: struct({
      kubeconfig: v(""),
      acceptContentTypes: v(""),
      contentType: v(""),
      qps: v(0),
      burst: v(0),
    }),
    logging: struct({
      format: omitted(""),
      // TimeOrMetaDuration: a number of nanoseconds unless given as a duration string.
      flushFrequency: { kind: "value", zero: 0, duration: true },
      verbosity: v(0),
      vmodule: { kind: "free", omitEmpty: true },
      options: struct({ text: outputRouting(), json: outputRouting() }),
    }),
    hostnameOverride: v(""),
    bindAddress: v(""),
    healthzBindAddress: v(""),
    metricsBindAddress: v(""),
    bindAddressHardFail: v(false),
    enableProfiling: v(false),
    showHiddenMetricsForVersion: v(""),
    mode: v(""),
    iptables: struct(iptables),
    ipvs: struct({
      syncPeriod: duration,
      minSyncPeriod: duration,
      scheduler: v(""),
      excludeCIDRs: v(null),
      strictARP: v(false),
      tcpTimeout: duration,
      tcpFinTimeout: duration,
      udpTimeout: duration,
    }),
    nftables: struct({
      masqueradeBit: v(null),
      masqueradeAll: v(false),
      syncPeriod: duration,
      minSyncPeriod: duration,
    }),
    winkernel: struct({
      networkName: v(""),
      sourceVip: v(""),
      enableDSR: v(false),
      rootHnsEndpointName: v(""),
      forwardHealthCheckVip: v(false),
    }),
    detectLocalMode: v(""),
    detectLocal: struct({ bridgeInterface: v(""), interfaceNamePrefix: v("") }),
    clusterCIDR: v(""),
    nodePortAddresses: v(null),
    oomScoreAdj: v(null),
    conntrack: struct({
      maxPerCore: v(null),
      min: v(null),
      tcpEstablishedTimeout: nullDuration,
      tcpCloseWaitTimeout: nullDuration,
      tcpBeLiberal: v(false),
      udpTimeout: duration,
      udpStreamTimeout: duration,
    }),
    configSyncPeriod: duration,
    portRange: v(""),
    windowsRunAsService: omitted(false),
  };
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === "" || value === false || value === 0) {
    return true;
  }
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && Object.keys(value).length === 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** metav1.Duration marshals through time.Duration.String ("60s" → "1m0s"). */
function normalizeDuration(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const nanos = tryParseGoDurationNanos(value);
  return nanos === undefined ? value : formatGoDurationNanos(nanos);
}

function marshalStruct(fields: Record<string, Field>, given: unknown): Record<string, unknown> {
  const source = isObject(given) ? given : {};
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(fields)) {
    const value = source[name];
    switch (field.kind) {
      case "struct":
        out[name] = marshalStruct(field.fields, value);
        break;
      case "free":
        if (!(field.omitEmpty && isEmpty(value))) out[name] = structuredClone(value ?? null);
        break;
      case "value": {
        if (field.omitEmpty && isEmpty(value)) break;
        if (value === undefined) out[name] = field.zero;
        else out[name] = field.duration ? normalizeDuration(value) : structuredClone(value);
        break;
      }
    }
  }
  return out;
}

/**
 * The KubeProxyConfiguration as kubeadm marshals it: every field of the v1alpha1 type, user and
 * kubeadm-defaulted values over Go zero values, unknown fields dropped. `config` is the
 * already-defaulted document (config/component-configs.ts defaultKubeProxyConfiguration).
 */
export function marshalKubeProxyConfiguration(config: ComponentConfig, release: Release): string {
  const body = marshalStruct(kubeProxyConfigurationShape(release), config);
  return toYAML({ apiVersion: KUBE_PROXY_CONFIG_API, kind: "KubeProxyConfiguration", ...body });
}
