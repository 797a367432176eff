import { go, type GoFields } from "./go-struct.js";
import type { Release } from "./release.js";

// The Go types kubeadm decodes the component configurations into, field by field, as
// go-struct.ts describes them. Read from the staging repositories at the release tags
// (kubernetes/kubelet config/v1beta1/types.go v0.33.0 … v0.36.0 and master of 2026-07 for
// 1.37; kubernetes/kube-proxy config/v1alpha1/types.go likewise; kubernetes/component-base
// logs/api/v1 and tracing/api/v1 types.go), with `since` for the fields a release added.

const TYPE_META: GoFields = { apiVersion: go.opt(""), kind: go.opt("") };

/** component-base logs/api/v1 OutputRoutingOptions: a zero Quantity still prints "0". */
const OUTPUT_ROUTING: GoFields = { splitStream: go.opt(false), infoBufferSize: go.val("0") };

/** component-base logs/api/v1 LoggingConfiguration (identical in 1.33 to 1.37). */
const LOGGING: GoFields = {
  format: go.opt(""),
  // TimeOrMetaDuration: nanoseconds as a number, or a duration string when given as one.
  flushFrequency: { kind: "scalar", zero: 0, duration: true },
  verbosity: go.val(0),
  vmodule: go.list({ filePattern: go.val(""), verbosity: go.val(0) }),
  options: go.struct({ text: go.struct(OUTPUT_ROUTING), json: go.struct(OUTPUT_ROUTING) }),
};

/** core/v1 Taint. */
const TAINT: GoFields = {
  key: go.val(""),
  value: go.opt(""),
  effect: go.val(""),
  timeAdded: go.ptr(),
};

/** A field with the minor that introduced it. */
type Versioned = [GoFields[string], number?];

const KUBELET_FIELDS: Record<string, Versioned> = {
  enableServer: [go.ptr()],
  staticPodPath: [go.opt("")],
  podLogsDir: [go.opt("")],
  syncFrequency: [go.duration()],
  fileCheckFrequency: [go.duration()],
  httpCheckFrequency: [go.duration()],
  staticPodURL: [go.opt("")],
  staticPodURLHeader: [go.map()],
  address: [go.opt("")],
  port: [go.opt(0)],
  readOnlyPort: [go.opt(0)],
  tlsCertFile: [go.opt("")],
  tlsPrivateKeyFile: [go.opt("")],
  tlsCipherSuites: [go.list()],
  tlsCurvePreferences: [go.list(), 36],
  tlsMinVersion: [go.opt("")],
  rotateCertificates: [go.opt(false)],
  serverTLSBootstrap: [go.opt(false)],
  authentication: [
    go.struct({
      x509: go.struct({ clientCAFile: go.opt("") }),
      webhook: go.struct({ enabled: go.ptr(), cacheTTL: go.duration() }),
      anonymous: go.struct({ enabled: go.ptr() }),
    }),
  ],
  authorization: [
    go.struct({
      mode: go.opt(""),
      webhook: go.struct({
        cacheAuthorizedTTL: go.duration(),
        cacheUnauthorizedTTL: go.duration(),
      }),
    }),
  ],
  registryPullQPS: [go.ptr()],
  registryBurst: [go.opt(0)],
  imagePullCredentialsVerificationPolicy: [go.opt("")],
  preloadedImagesVerificationAllowlist: [go.list()],
  eventRecordQPS: [go.ptr()],
  eventBurst: [go.opt(0)],
  enableDebuggingHandlers: [go.ptr()],
  enableContentionProfiling: [go.opt(false)],
  healthzPort: [go.ptr()],
  healthzBindAddress: [go.opt("")],
  oomScoreAdj: [go.ptr()],
  clusterDomain: [go.opt("")],
  clusterDNS: [go.list()],
  streamingConnectionIdleTimeout: [go.duration()],
  nodeStatusUpdateFrequency: [go.duration()],
  nodeStatusReportFrequency: [go.duration()],
  nodeLeaseDurationSeconds: [go.opt(0)],
  imageMinimumGCAge: [go.duration()],
  imageMaximumGCAge: [go.duration()],
  imageGCHighThresholdPercent: [go.ptr()],
  imageGCLowThresholdPercent: [go.ptr()],
  volumeStatsAggPeriod: [go.duration()],
  kubeletCgroups: [go.opt("")],
  systemCgroups: [go.opt("")],
  cgroupRoot: [go.opt("")],
  cgroupsPerQOS: [go.ptr()],
  cgroupDriver: [go.opt("")],
  cpuManagerPolicy: [go.opt("")],
  singleProcessOOMKill: [go.ptr()],
  cpuManagerPolicyOptions: [go.map()],
  cpuManagerReconcilePeriod: [go.duration()],
  memoryManagerPolicy: [go.opt("")],
  topologyManagerPolicy: [go.opt("")],
  topologyManagerScope: [go.opt("")],
  topologyManagerPolicyOptions: [go.map()],
  qosReserved: [go.map()],
  runtimeRequestTimeout: [go.duration()],
  hairpinMode: [go.opt("")],
  maxPods: [go.opt(0)],
  podCIDR: [go.opt("")],
  podPidsLimit: [go.ptr()],
  resolvConf: [go.ptr()],
  runOnce: [go.opt(false)],
  cpuCFSQuota: [go.ptr()],
  cpuCFSQuotaPeriod: [go.durationPtr()],
  nodeStatusMaxImages: [go.ptr()],
  maxOpenFiles: [go.opt(0)],
  contentType: [go.opt("")],
  kubeAPIQPS: [go.ptr()],
  kubeAPIBurst: [go.opt(0)],
  serializeImagePulls: [go.ptr()],
  maxParallelImagePulls: [go.ptr()],
  evictionHard: [go.map()],
  evictionSoft: [go.map()],
  evictionSoftGracePeriod: [go.map()],
  evictionPressureTransitionPeriod: [go.duration()],
  evictionMaxPodGracePeriod: [go.opt(0)],
  evictionMinimumReclaim: [go.map()],
  mergeDefaultEvictionSettings: [go.ptr()],
  podsPerCore: [go.opt(0)],
  enableControllerAttachDetach: [go.ptr()],
  protectKernelDefaults: [go.opt(false)],
  makeIPTablesUtilChains: [go.ptr()],
  iptablesMasqueradeBit: [go.ptr()],
  iptablesDropBit: [go.ptr()],
  featureGates: [go.map()],
  failSwapOn: [go.ptr()],
  memorySwap: [go.struct({ swapBehavior: go.opt("") })],
  containerLogMaxSize: [go.opt("")],
  containerLogMaxFiles: [go.ptr()],
  containerLogMaxWorkers: [go.ptr()],
  containerLogMonitorInterval: [go.durationPtr()],
  configMapAndSecretChangeDetectionStrategy: [go.opt("")],
  systemReserved: [go.map()],
  kubeReserved: [go.map()],
  reservedSystemCPUs: [go.opt("")],
  showHiddenMetricsForVersion: [go.opt("")],
  systemReservedCgroup: [go.opt("")],
  kubeReservedCgroup: [go.opt("")],
  enforceNodeAllocatable: [go.list()],
  allowedUnsafeSysctls: [go.list()],
  defaultPodSysctls: [go.map(), 37],
  volumePluginDir: [go.opt("")],
  providerID: [go.opt("")],
  kernelMemcgNotification: [go.opt(false)],
  logging: [go.struct(LOGGING)],
  enableSystemLogHandler: [go.ptr()],
  enableSystemLogQuery: [go.ptr()],
  shutdownGracePeriod: [go.duration()],
  shutdownGracePeriodCriticalPods: [go.duration()],
  shutdownGracePeriodByPodPriority: [
    go.list({ priority: go.val(0), shutdownGracePeriodSeconds: go.val(0) }),
  ],
  crashLoopBackOff: [go.struct({ maxContainerRestartPeriod: go.durationPtr() })],
  reservedMemory: [go.list({ numaNode: go.val(0), limits: go.free() })],
  memoryReservationPolicy: [go.opt(""), 36],
  enableProfilingHandler: [go.ptr()],
  enableDebugFlagsHandler: [go.ptr()],
  seccompDefault: [go.ptr()],
  memoryThrottlingFactor: [go.ptr()],
  registerWithTaints: [go.list(TAINT)],
  registerNode: [go.ptr()],
  tracing: [go.structPtr({ endpoint: go.ptr(), samplingRatePerMillion: go.ptr() })],
  localStorageCapacityIsolation: [go.ptr()],
  // No omitempty: kubeadm's marshalled config always carries it ("" when unset).
  containerRuntimeEndpoint: [go.val("")],
  imageServiceEndpoint: [go.opt("")],
  failCgroupV1: [go.ptr()],
  userNamespaces: [go.structPtr({ idsPerPod: go.ptr() })],
};

/** kubelet.config.k8s.io/v1beta1 KubeletConfiguration of a release. */
export function kubeletConfigurationType(release: Pick<Release, "minor">): GoFields {
  const fields: GoFields = { ...TYPE_META };
  for (const [name, [field, since]] of Object.entries(KUBELET_FIELDS)) {
    if (since === undefined || release.minor >= since) fields[name] = field;
  }
  return fields;
}

/**
 * kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration (identical field sets in 1.33 to
 * 1.37), with component-base's ClientConnectionConfiguration. Unlike the kubelet's, most of its
 * fields have no omitempty: unset ones are written as zero values.
 */
export function kubeProxyConfigurationType(release: Release): GoFields {
  const iptables: GoFields = {
    masqueradeBit: go.nullable(),
    masqueradeAll: go.val(false),
    localhostNodePorts: go.nullable(),
    syncPeriod: go.duration(),
    minSyncPeriod: go.duration(),
  };
  if (release.behaviour.kubeProxySNATNodeInternalIP) iptables.snatNodeInternalIP = go.nullable();
  return {
    ...TYPE_META,
    featureGates: go.map(),
    clientConnection: go.struct({
      kubeconfig: go.val(""),
      acceptContentTypes: go.val(""),
      contentType: go.val(""),
      qps: go.val(0),
      burst: go.val(0),
    }),
    logging: go.struct(LOGGING),
    hostnameOverride: go.val(""),
    bindAddress: go.val(""),
    healthzBindAddress: go.val(""),
    metricsBindAddress: go.val(""),
    bindAddressHardFail: go.val(false),
    enableProfiling: go.val(false),
    showHiddenMetricsForVersion: go.val(""),
    mode: go.val(""),
    iptables: go.struct(iptables),
    ipvs: go.struct({
      syncPeriod: go.duration(),
      minSyncPeriod: go.duration(),
      scheduler: go.val(""),
      excludeCIDRs: go.nullableList(),
      strictARP: go.val(false),
      tcpTimeout: go.duration(),
      tcpFinTimeout: go.duration(),
      udpTimeout: go.duration(),
    }),
    nftables: go.struct({
      masqueradeBit: go.nullable(),
      masqueradeAll: go.val(false),
      syncPeriod: go.duration(),
      minSyncPeriod: go.duration(),
    }),
    winkernel: go.struct({
      networkName: go.val(""),
      sourceVip: go.val(""),
      enableDSR: go.val(false),
      rootHnsEndpointName: go.val(""),
      forwardHealthCheckVip: go.val(false),
    }),
    detectLocalMode: go.val(""),
    detectLocal: go.struct({ bridgeInterface: go.val(""), interfaceNamePrefix: go.val("") }),
    clusterCIDR: go.val(""),
    nodePortAddresses: go.nullableList(),
    oomScoreAdj: go.nullable(),
    conntrack: go.struct({
      maxPerCore: go.nullable(),
      min: go.nullable(),
      tcpEstablishedTimeout: go.nullableDuration(),
      tcpCloseWaitTimeout: go.nullableDuration(),
      tcpBeLiberal: go.val(false),
      udpTimeout: go.duration(),
      udpStreamTimeout: go.duration(),
    }),
    configSyncPeriod: go.duration(),
    portRange: go.val(""),
    windowsRunAsService: go.opt(false),
  };
}
