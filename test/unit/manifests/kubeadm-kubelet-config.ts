// /var/lib/kubelet/config.yaml as kubeadm wrote it on real nodes with kubeadm's defaults
// (cluster.local, 10.96.0.0/12, containerd, systemd-resolved active), copied from published
// `cat /var/lib/kubelet/config.yaml` output. kubeadm marshals the whole
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration, whose field set is the same in
// k8s.io/kubelet v0.33.0, v0.34.0 and v0.35.0 (config/v1beta1/types.go), so these texts are what
// kubeadm v1.35.0 writes for the same input.

/**
 * With NodeLocalCRISocket (1.34+): instance-config.yaml merged in, so the CRI endpoint is set.
 * From a kubeadm node whose config.yaml printed this way (a published walk-through of how the
 * kubelet authenticates the API server).
 */
export const KUBEADM_CONFIG_YAML_NODE_LOCAL_CRI_SOCKET = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: unix:///var/run/containerd/containerd.sock
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
resolvConf: /run/systemd/resolve/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`;

/**
 * Without NodeLocalCRISocket (v1.33, whose kubelet also got --pod-infra-container-image): the
 * field without omitempty is written empty. From a v1.33 lab node's config.yaml.
 */
export const KUBEADM_CONFIG_YAML_V133 = KUBEADM_CONFIG_YAML_NODE_LOCAL_CRI_SOCKET.replace(
  "containerRuntimeEndpoint: unix:///var/run/containerd/containerd.sock\n",
  'containerRuntimeEndpoint: ""\n',
);
