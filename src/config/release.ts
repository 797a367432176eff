// The shape of one row of the Kubernetes version table (versions.ts). Every
// version-specific value and behaviour is read from here, never from `if (minor >= N)` in a phase.

export interface Release {
  /** Minor version: 35 for v1.35.x. */
  minor: number;
  /** Latest patch known to this build, used when a label cannot be resolved online: "v1.35.0". */
  knownPatch: string;
  /** etcd image tag kubeadm deploys for this minor ("3.6.6-0"). */
  etcdVersion: string;
  /** CoreDNS image tag ("v1.13.1"). */
  coreDNSVersion: string;
  /** pause image tag ("3.10.1"). */
  pauseVersion: string;
  /**
   * The image tags of this minor's earlier patches where they differ from the newest ones
   * above, oldest boundary first: a version before `before` gets the tags given (releaseFor
   * applies them), as each kubeadm release names its own.
   */
  earlierImages?: readonly EarlierImages[];
  /** Feature-gate defaults for this release (user `featureGates` override them). */
  featureGates: Record<string, boolean>;
  /**
   * Gates that graduated and were removed from kubeadm's list in this release: the behaviour is
   * always on and naming the gate is an error (kubeadm: "unrecognized feature-gate key").
   */
  graduatedFeatureGates?: string[];
  /**
   * GA gates kubeadm locks to their default (true) in this release: naming one with that value
   * is accepted, another value is an error, and the behaviour is always on.
   */
  lockedFeatureGates?: string[];
  /** Behaviour that is not a feature gate but changed between releases. */
  behaviour: ReleaseBehaviour;
}

export interface EarlierImages {
  /** The first patch that no longer uses these tags: "v1.33.6". */
  before: string;
  etcdVersion?: string;
  coreDNSVersion?: string;
  pauseVersion?: string;
}

export interface ReleaseBehaviour {
  /** Static pod probes use the named container port "probe-port" (1.34+) instead of numbers. */
  probeNamedPort: boolean;
  /**
   * The first patch of this minor whose kubeadm authorizes the API server's kubelet client
   * through the ClusterRoleBinding kubeadm:apiserver-kubelet-client (to system:kubelet-api-admin)
   * instead of O=kubeadm:cluster-admins in apiserver-kubelet-client.crt (kubernetes/kubernetes
   * #138957, cherry-picked into 1.33–1.36 patches). Read through kubeletClientUsesRBAC().
   */
  kubeletAPIAdminBindingSince: string;
  /**
   * The first patch of this minor whose kubeadm sorts only its default arguments and appends
   * the user's extraArgs (and kubeletExtraArgs) in the user's order; earlier patches sort the
   * whole list (kubernetes/kubernetes#135400, cherry-picked as #135850–#135853). Read through
   * extraArgsKeepOrder().
   */
  extraArgsKeepOrderSince: string;
  /** kubeadm-flags.env carries --pod-infra-container-image. */
  podInfraContainerImageFlag: boolean;
  /** Name of the kubelet-finalize sub-phase. */
  kubeletFinalizeSubphase: string;
  /**
   * Marshalled objects carry `creationTimestamp: null` (apimachinery before k8s PR 130989,
   * "Omit null creationTimestamp", first released in v1.34).
   */
  nullCreationTimestamp: boolean;
  /**
   * kubeconfig files carry `preferences: {}` (client-go before k8s PR 131741, which made the
   * deprecated field omitzero in v1.34).
   */
  kubeconfigPreferences: boolean;
  /**
   * The CoreDNS Deployment declares container ports 8080 "liveness-probe" and 8181
   * "readiness-probe" and its probes use those names; before, the probes used the numbers and
   * the ports were not declared (kubernetes/kubernetes#131587, first released in v1.34).
   */
  coreDNSNamedProbePorts: boolean;
  /**
   * KubeProxyConfiguration v1alpha1 has the field iptables.snatNodeInternalIP, so kubeadm's
   * marshalled config.conf carries it (as null when unset).
   */
  kubeProxySNATNodeInternalIP: boolean;
  /** kubeadm knows the "kubeproxydaemonset" patch target (kubernetes/kubernetes#138090). */
  kubeProxyDaemonSetPatchTarget: boolean;
  /** kubeadm still reads kubeadm.k8s.io/v1beta3 (removed in 1.37, kubernetes/kubernetes#136016). */
  kubeadmAPIV1beta3: boolean;
  /** encryptionAlgorithm may be ECDSA-P384 (added in 1.34, kubernetes/kubernetes#131677). */
  encryptionAlgorithmECDSAP384: boolean;
  /**
   * kubeadm's ContainerRuntimeVersion preflight check (kubernetes/kubernetes#134906, new in
   * 1.35; absent before): from each patch listed on, the release its warning names as the one
   * that drops the kubelet's cgroupDriver fallback. Read through runtimeConfigFallbackRemovedIn().
   */
  runtimeConfigWarning?: readonly RuntimeConfigWarningWording[];
}

/** From patch `since` on, kubeadm's warning says the fallback "will be removed in `removedIn`". */
export interface RuntimeConfigWarningWording {
  since: string;
  removedIn: string;
}

/** Kubernetes version a config asks for: an exact version or a label still to resolve. */
export interface ResolvedVersion {
  /** Exact version, "v1.35.0". */
  version: string;
  release: Release;
  /** How it was obtained, for the log: "config", "stable-1.35 via dl.k8s.io", "offline fallback". */
  source: string;
  /**
   * A build from Kubernetes' CI bucket ("ci/…"): kubeadm's CIKubernetesVersion. Its control-plane
   * and kube-proxy images come from the CI registry, its binaries from the CI bucket, and
   * kubeadm-config records it as "ci/<version>".
   */
  ciBuild?: boolean;
}
