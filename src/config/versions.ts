import semver from "semver";
import type { Release, ResolvedVersion } from "./release.js";

// The one Kubernetes version table. Every version-specific value (image tags, feature-gate
// defaults, behaviour that changed between releases) comes from here.
//
// Sources, per value (tags as in kubeadm-facts.md §0):
//   [S:x]  kubeadm source read at snapshot x; [3P] third-party copy of kubeadm's constants or a
//   real config pinning that version; [M] inferred, not confirmed in a release branch.
// Image tags are kubeadm's constants.go of the matching release branch: SupportedEtcdVersion
// [minor], CoreDNSVersion, PauseVersion.

// kubeadm: phases/kubelet-finalize (renamed from experimental-cert-rotation before 1.33).
const FINALIZE_SUBPHASE = "enable-client-cert-rotation";

export const RELEASES: readonly Release[] = [
  {
    minor: 33,
    // [3P] a kubeadm config pinning v1.33.13 (1.33 reached end of life in 2026).
    knownPatch: "v1.33.13",
    // [3P] `kubeadm config images list` of each v1.33 patch as minikube's bot records it
    // (pkg/minikube/constants/constants_kubeadm_images.go): 3.5.21-0 up to v1.33.5, 3.5.24-0
    // from v1.33.6 (the 1.32 branch's constants.go and a [3P] copy of the 1.34 one map minor 33
    // to 3.5.24-0 too).
    etcdVersion: "3.5.24-0",
    earlierImages: [{ before: "v1.33.6", etcdVersion: "3.5.21-0" }],
    coreDNSVersion: "v1.12.0", // CHANGELOG-1.33 v1.33.0: kubernetes/kubernetes#128926
    pauseVersion: "3.10", // [3P]
    // kubeadm v1.33 `--feature-gates` help (kubernetes/website reference): NodeLocalCRISocket
    // alpha, PublicKeysECDSA deprecated, RootlessControlPlane alpha, the others beta and on.
    featureGates: {
      ControlPlaneKubeletLocalMode: true,
      NodeLocalCRISocket: false,
      PublicKeysECDSA: false,
      RootlessControlPlane: false,
      WaitForAllControlPlaneComponents: true,
    },
    behaviour: {
      probeNamedPort: false, // [O] v1.33.0 manifests use numeric probe ports
      kubeletAPIAdminBindingSince: "v1.33.12", // kubernetes/kubernetes#138957 cherry-pick
      // kubernetes/kubernetes#135851 (release-1.33), shipped in the 2026-02-10 patches.
      extraArgsKeepOrderSince: "v1.33.8",
      podInfraContainerImageFlag: true,
      kubeletFinalizeSubphase: FINALIZE_SUBPHASE,
      nullCreationTimestamp: true,
      kubeconfigPreferences: true,
      // Numeric CoreDNS probe ports until kubernetes/kubernetes#131587 (CHANGELOG-1.34, alpha.1).
      coreDNSNamedProbePorts: false,
      kubeProxySNATNodeInternalIP: false,
      kubeProxyDaemonSetPatchTarget: false,
      // ECDSA-P384 arrived in v1.34.0-alpha.1 (kubernetes/kubernetes#131677, CHANGELOG-1.34).
      kubeadmAPIV1beta3: true,
      encryptionAlgorithmECDSAP384: false,
    },
  },
  {
    minor: 34,
    knownPatch: "v1.34.7", // [3P] a kubeadm setup script pinning v1.34.7
    // [3P] copy of the 1.34 branch's constants; minikube's record of `kubeadm config images
    // list` (as for 1.33): 3.6.4-0 in v1.34.0 and v1.34.1, 3.6.5-0 from v1.34.2.
    etcdVersion: "3.6.5-0",
    earlierImages: [{ before: "v1.34.2", etcdVersion: "3.6.4-0" }],
    coreDNSVersion: "v1.12.1", // [S:DW]; [3P] kind v1.34 nodes (coredns/coredns#7869)
    pauseVersion: "3.10.1", // [S:DW]
    // kubeadm v1.34 `--feature-gates` help: NodeLocalCRISocket and ControlPlaneKubeletLocalMode
    // beta and on; WaitForAllControlPlaneComponents GA and locked to enabled
    // (kubernetes/kubernetes#132594, milestone v1.34).
    featureGates: {
      ControlPlaneKubeletLocalMode: true,
      NodeLocalCRISocket: true,
      PublicKeysECDSA: false,
      RootlessControlPlane: false,
      WaitForAllControlPlaneComponents: true,
    },
    lockedFeatureGates: ["WaitForAllControlPlaneComponents"],
    behaviour: {
      probeNamedPort: true, // [S:DW] constant ProbePort = "probe-port"
      kubeletAPIAdminBindingSince: "v1.34.8", // kubernetes/kubernetes#138957 cherry-pick
      // kubernetes/kubernetes#135852 (release-1.34), shipped in the 2026-02-10 patches.
      extraArgsKeepOrderSince: "v1.34.4",
      // kubernetes/kubernetes#133778 (merged 2025-08-29, after v1.34.0) stopped writing it.
      podInfraContainerImageFlag: true,
      kubeletFinalizeSubphase: FINALIZE_SUBPHASE,
      nullCreationTimestamp: false,
      kubeconfigPreferences: false,
      // kubernetes/kubernetes#131587, in CHANGELOG-1.34 (v1.34.0-alpha.1).
      coreDNSNamedProbePorts: true,
      kubeProxySNATNodeInternalIP: false,
      kubeProxyDaemonSetPatchTarget: false,
      kubeadmAPIV1beta3: true,
      encryptionAlgorithmECDSAP384: true,
    },
  },
  {
    minor: 35,
    knownPatch: "v1.35.8", // [3P] a fixture copying the v1.35.8 constants
    etcdVersion: "3.6.6-0", // [3P] same fixture
    coreDNSVersion: "v1.13.1", // [3P] same fixture
    pauseVersion: "3.10.1", // [3P] same fixture
    // kubeadm v1.35 `--feature-gates` help: ControlPlaneKubeletLocalMode GA and locked to
    // enabled (kubernetes/kubernetes#134106); WaitForAllControlPlaneComponents removed
    // (kubernetes/kubernetes#134781): kubeadm refuses it as an unknown gate.
    featureGates: {
      ControlPlaneKubeletLocalMode: true,
      NodeLocalCRISocket: true,
      PublicKeysECDSA: false,
      RootlessControlPlane: false,
    },
    graduatedFeatureGates: ["WaitForAllControlPlaneComponents"],
    lockedFeatureGates: ["ControlPlaneKubeletLocalMode"],
    behaviour: {
      probeNamedPort: true,
      kubeletAPIAdminBindingSince: "v1.35.5", // kubernetes/kubernetes#138957 cherry-pick
      // kubernetes/kubernetes#135853 (release-1.35), in v1.35.1 (2026-02-10).
      extraArgsKeepOrderSince: "v1.35.1",
      // kubeadm v1.35.0, v1.35.1 and v1.35.3 print "... will be removed in 1.36" (users' logs);
      // kubernetes/kubernetes#139268 (release-1.35 cherry-pick of #139122, merged 2026-09-12)
      // says 1.38. [M] the first patch carrying it: the one after the September 2026 patches.
      runtimeConfigWarning: [
        { since: "v1.35.0", removedIn: "1.36" },
        { since: "v1.35.9", removedIn: "1.38" },
      ],
      // kubernetes/kubernetes#133778: kubeadm no longer passes --pod-infra-container-image;
      // the kubelet flag itself was removed in 1.35 (kubernetes/kubernetes#133779).
      podInfraContainerImageFlag: false,
      kubeletFinalizeSubphase: FINALIZE_SUBPHASE,
      nullCreationTimestamp: false,
      kubeconfigPreferences: false,
      coreDNSNamedProbePorts: true,
      kubeProxySNATNodeInternalIP: false,
      kubeProxyDaemonSetPatchTarget: false,
      kubeadmAPIV1beta3: true,
      encryptionAlgorithmECDSAP384: true,
    },
  },
  {
    minor: 36,
    knownPatch: "v1.36.3", // [3P] a kubeadm config pinning v1.36.3
    // [3P] `kubeadm config images list` of v1.36.0 to v1.36.5 as minikube's bot records it
    // (pkg/minikube/constants/constants_kubeadm_images.go): etcd 3.6.8-0, CoreDNS v1.14.2, pause
    // 3.10.2 (3.10.1 until v1.36.0-beta.0); [O] `kubeadm upgrade plan` v1.35.5 → v1.36.1 names
    // the same etcd and CoreDNS (test/unit/config/upgrade-plan.test.ts).
    etcdVersion: "3.6.8-0",
    coreDNSVersion: "v1.14.2",
    pauseVersion: "3.10.2",
    // kubeadm v1.36 `--feature-gates` help: NodeLocalCRISocket GA ("default=true", kubeadm
    // locks GA gates: kubernetes/kubernetes#134106); ControlPlaneKubeletLocalMode removed
    // (kubernetes/kubernetes#135773).
    featureGates: {
      NodeLocalCRISocket: true,
      PublicKeysECDSA: false,
      RootlessControlPlane: false,
    },
    graduatedFeatureGates: ["WaitForAllControlPlaneComponents", "ControlPlaneKubeletLocalMode"],
    lockedFeatureGates: ["NodeLocalCRISocket"],
    behaviour: {
      probeNamedPort: true,
      kubeletAPIAdminBindingSince: "v1.36.1", // kubernetes/kubernetes#138957 cherry-pick
      // kubernetes/kubernetes#135400 merged on master before 1.36 (CHANGELOG-1.36).
      extraArgsKeepOrderSince: "v1.36.0",
      // kubernetes/kubernetes#136898 (master, 2026-02-10) moved the warning from 1.36 to 1.37;
      // the release-1.36 cherry-pick of #139122 (1.38), kubernetes/kubernetes#139267, is not
      // merged.
      runtimeConfigWarning: [{ since: "v1.36.0", removedIn: "1.37" }],
      podInfraContainerImageFlag: false,
      kubeletFinalizeSubphase: FINALIZE_SUBPHASE,
      nullCreationTimestamp: false,
      kubeconfigPreferences: false,
      coreDNSNamedProbePorts: true,
      kubeProxySNATNodeInternalIP: false,
      // [M] kubernetes/kubernetes#138090 merged 2026-03-30, reviewers aimed at the 1.36 docs.
      kubeProxyDaemonSetPatchTarget: true,
      kubeadmAPIV1beta3: true,
      encryptionAlgorithmECDSAP384: true,
    },
  },
  {
    minor: 37,
    knownPatch: "v1.37.1", // [3P] configs pinning v1.37.1
    // [3P] `kubeadm config images list` of v1.37.0 and v1.37.1 as minikube's bot records it (as
    // for 1.36). Master at snapshot DM (3.7.2-0, v1.14.7) was already past v1.38.0-alpha.1.
    etcdVersion: "3.7.0-0",
    coreDNSVersion: "v1.14.6",
    pauseVersion: "3.10.2",
    // [3P] an upgrade checker for 1.37 flags NodeLocalCRISocket as removed
    // (kubernetes/kubernetes#138645); PublicKeysECDSA went with v1beta3
    // (kubernetes/kubernetes#136016, CHANGELOG-1.37); RootlessControlPlane was removed by
    // kubernetes/kubernetes#134178, after the v1.36 reference still listed it [M for the release].
    featureGates: {},
    graduatedFeatureGates: [
      "WaitForAllControlPlaneComponents",
      "ControlPlaneKubeletLocalMode",
      "NodeLocalCRISocket",
    ],
    behaviour: {
      probeNamedPort: true,
      kubeletAPIAdminBindingSince: "v1.37.0", // kubernetes/kubernetes#138957 (master)
      // Since 1.36 on master.
      extraArgsKeepOrderSince: "v1.37.0",
      // kubernetes/kubernetes#139122 (CHANGELOG-1.37): "For older kubelet versions than 1.38,
      // it will return a preflight warning."
      runtimeConfigWarning: [{ since: "v1.37.0", removedIn: "1.38" }],
      podInfraContainerImageFlag: false,
      kubeletFinalizeSubphase: FINALIZE_SUBPHASE,
      nullCreationTimestamp: false,
      kubeconfigPreferences: false,
      coreDNSNamedProbePorts: true,
      // Not in k8s.io/kube-proxy config/v1alpha1/types.go at v0.37.0-beta.0 nor on master of
      // 2026-07-21 (no commit ever added it; kubernetes/kubernetes#133024 had only an open PR).
      kubeProxySNATNodeInternalIP: false,
      kubeProxyDaemonSetPatchTarget: true,
      // kubernetes/kubernetes#136016 removed v1beta3 and PublicKeysECDSA: CHANGELOG-1.37
      // (v1.37.0-alpha.1, "Changelog since v1.36.0").
      kubeadmAPIV1beta3: false,
      encryptionAlgorithmECDSAP384: true,
    },
  },
];

const OLDEST = RELEASES[0]!;
const NEWEST = RELEASES[RELEASES.length - 1]!;

/** "v1.33 to v1.37". */
export const SUPPORTED_RANGE = `v1.${OLDEST.minor} to v1.${NEWEST.minor}`;

/**
 * The version used when neither the config nor a flag names one: kubeadm's own default label
 * (apis/kubeadm/v1beta4/defaults.go DefaultKubernetesVersion). It resolves online to the newest
 * stable patch, clamped to the newest minor kubeforge knows, so a CI job gets security patches
 * without a kubeforge release, never an untested minor; offline it is the table's newest
 * knownPatch. Pin `kubernetesVersion` for byte-for-byte reproducible clusters.
 */
export const DEFAULT_KUBERNETES_VERSION = "stable-1";

/** Base URL of the release label files (kubeadm: util/version.go kubeReleaseBucketURL). */
export const DEFAULT_RELEASE_BASE_URL = "https://dl.k8s.io/release";

/** kubeadm's constants.CIKubernetesVersionPrefix: a version or label of the CI bucket. */
export const CI_VERSION_PREFIX = "ci/";

/**
 * Where CI builds' label files and binaries live: kubeadm's util/version.go kubeCIBucketURL
 * ("https://storage.googleapis.com/k8s-release-dev") with the "ci" prefix splitVersion appends;
 * a build's binaries are under <base>/<version>/bin/linux/<arch>/.
 */
export const DEFAULT_CI_BASE_URL = "https://storage.googleapis.com/k8s-release-dev/ci";

/**
 * kubeadm's constants.DefaultCIImageRepository: where a CI build's control-plane and kube-proxy
 * images are, used instead of imageRepository when that is the default (NormalizeKubernetesVersion).
 */
export const DEFAULT_CI_IMAGE_REPOSITORY = "gcr.io/k8s-staging-ci-images";

/** kubeadm's KubernetesIsCIVersion: "ci/" and a version or label. */
export function isCIVersion(spec: string): boolean {
  return /^ci\/[-\w.+]+$/.test(spec.trim());
}

// kubeadm: util/version.go kubeReleaseRegex and kubeReleaseLabelRegex. The suffix must start
// a semver pre-release or build ("-rc.1", "+build"): kubeadm's regex lets "v1.35.2.1" through,
// then fails parsing it as semver.
const EXACT_VERSION = /^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+][-\w.+]*)?$/;
const RELEASE_LABEL = /^(latest|stable)(-[1-9](\.[1-9][0-9]?)?)?$/;

/** The minor of "v1.35.2", "1.35.2", "v1.35" or "1.35"; undefined for anything else. */
function minorOf(version: string): { major: number; minor: number } | undefined {
  const m = /^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*)([-+][-\w.+]*)?)?$/.exec(
    version,
  );
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** The table row for a version ("v1.35.2", "1.35.2", "v1.35"); throws naming the range. */
export function releaseFor(version: string): Release {
  const parsed = minorOf(version.trim());
  if (!parsed) {
    throw new Error(
      `"${version}" is not a Kubernetes version (expected one like v1.35.2); kubeforge supports ${SUPPORTED_RANGE}`,
    );
  }
  const release = parsed.major === 1 ? RELEASES.find((r) => r.minor === parsed.minor) : undefined;
  if (!release) {
    const shown = version.trim().startsWith("v") ? version.trim() : `v${version.trim()}`;
    throw new Error(
      `Kubernetes version ${shown} is not supported: kubeforge supports ${SUPPORTED_RANGE}`,
    );
  }
  return withPatchImages(release, version.trim());
}

/**
 * The row with the image tags kubeadm of `version` names: an exact version before one of the
 * row's earlierImages boundaries gets that entry's tags; a minor alone ("v1.35") the newest.
 */
function withPatchImages(release: Release, version: string): Release {
  const exact = semver.parse(version);
  if (!exact || !release.earlierImages) return release;
  // semver orders a pre-release before its release and ignores build metadata ("+build").
  const earlier = release.earlierImages.find((e) => semver.lt(exact, e.before));
  if (!earlier) return release;
  const { before: _before, ...tags } = earlier;
  return { ...release, ...tags };
}

/**
 * Whether kubeadm of `version` (exact, "v1.35.5") gives kube-apiserver's kubelet client its
 * rights through the ClusterRoleBinding kubeadm:apiserver-kubelet-client (User
 * kube-apiserver-kubelet-client → ClusterRole system:kubelet-api-admin, created in the
 * bootstrap-token phase) and leaves O out of apiserver-kubelet-client.crt. Before, the
 * certificate carried O=kubeadm:cluster-admins. kubernetes/kubernetes#138957 made the change on
 * master (1.37) and its cherry-picks #138958 (1.36), #138959 (1.35), #138960 (1.34), #138964
 * (1.33) shipped in v1.36.1, v1.35.5, v1.34.8 and v1.33.12 (cluster-api's troubleshooting
 * guide, which names those patches; kubernetes/kubeadm#3310). A pre-release of the first such
 * patch counts as before it.
 */
export function kubeletClientUsesRBAC(version: string, release: Release): boolean {
  const have = semver.parse(version.trim());
  // semver orders a pre-release before its release and ignores build metadata ("+build").
  return have !== null && semver.gte(have, release.behaviour.kubeletAPIAdminBindingSince);
}

/** kubeadm's field for the version and the `init` flag that sets it. */
export const KUBERNETES_VERSION_FIELD =
  "ClusterConfiguration.kubernetesVersion (--kubernetes-version)";

function normalizeExact(text: string): string | undefined {
  return EXACT_VERSION.test(text) ? (text.startsWith("v") ? text : `v${text}`) : undefined;
}

/** A label file's body ("v1.35.2\n") as an exact version; throws naming what it holds. */
export function labelFileVersion(body: string): string {
  const text = body.trim();
  const version = normalizeExact(text);
  if (!version) throw new Error(`the answer "${text.slice(0, 60)}" is not a version`);
  return version;
}

/**
 * The problem with a kubernetesVersion value as written, or undefined: an exact version must
 * be in the table, a label must be one kubeadm knows (and a pinned minor in the table).
 * Labels themselves are resolved later (node/release-version.ts).
 */
export function kubernetesVersionProblem(spec: string): string | undefined {
  const text = spec.trim();
  try {
    if (normalizeExact(text)) {
      releaseFor(text);
      return undefined;
    }
    if (text.startsWith(CI_VERSION_PREFIX)) ciVersionRequest(spec, false);
    const label = text.replace(/^release\//, "");
    if (!RELEASE_LABEL.test(label)) {
      return `"${spec}" is neither a version (v1.35.2) nor a release label (stable, stable-1, stable-1.35, latest, latest-1.35)`;
    }
    offlineAnswer(label);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * The table row a version spec fixes before anything is fetched: an exact version ("v1.37.1")
 * or a label pinned to a minor ("stable-1.37"); undefined for "stable", "stable-1", "latest",
 * anything outside the table or not a version (resolution reports those).
 */
export function pinnedRelease(spec: string): Release | undefined {
  const text = spec.trim();
  const label = text.replace(/^release\//, "");
  const pinned = RELEASE_LABEL.test(label) ? /-1\.([0-9]+)$/.exec(label) : null;
  const version = normalizeExact(text) ?? (pinned ? `v1.${pinned[1]}` : undefined);
  if (!version) return undefined;
  try {
    return releaseFor(version);
  } catch {
    return undefined;
  }
}

/** What a label means when it cannot be fetched: the table's answer to it. */
function offlineAnswer(label: string): Release {
  const pinned = /-(1)\.([0-9]+)$/.exec(label);
  return pinned ? releaseFor(`v1.${pinned[2]}`) : NEWEST;
}

/**
 * What a config or flag asks for ("v1.35.2", "1.35.2", "stable", "stable-1", "stable-1.35",
 * "latest", "latest-1.35"), before anything is fetched: an exact version, resolved; or a
 * release label to read from <base>/<label>.txt (kubeadm's util/version.go
 * KubernetesReleaseVersion). Throws for anything else, and for a label whose pinned minor is not
 * in the table (stable-1.30 fails before going online).
 */
export function versionRequest(
  spec: string,
  opts: { allowCI?: boolean } = {},
): { resolved: ResolvedVersion } | { label: string; ciBuild?: boolean } {
  const text = spec.trim();
  const exact = normalizeExact(text);
  if (exact)
    return {
      resolved: { version: exact, release: releaseFor(exact), source: `${exact} as given` },
    };
  if (text.startsWith(CI_VERSION_PREFIX)) return ciVersionRequest(spec, opts.allowCI === true);
  const label = text.replace(/^release\//, "");
  if (!RELEASE_LABEL.test(label)) {
    throw new Error(
      `Kubernetes version "${spec}" is neither a version (v1.35.2) nor a release label (stable, stable-1, stable-1.35, latest, latest-1.35)`,
    );
  }
  offlineAnswer(label);
  return { label };
}

/** "ci/<version>" or "ci/<label>" (kubeadm's splitVersion with the ci prefix). */
function ciVersionRequest(
  spec: string,
  allowCI: boolean,
): { resolved: ResolvedVersion } | { label: string; ciBuild: true } {
  if (!allowCI) {
    throw new Error(
      `Kubernetes version "${spec}": a CI build (ci/...) can only be an upgrade target (kubeforge upgrade --to, upgrade apply); build the cluster at a release first`,
    );
  }
  const rest = spec.trim().slice(CI_VERSION_PREFIX.length);
  const exact = normalizeExact(rest);
  if (exact) {
    return {
      resolved: {
        version: exact,
        release: releaseFor(exact),
        source: `${CI_VERSION_PREFIX}${exact} as given`,
        ciBuild: true,
      },
    };
  }
  if (!RELEASE_LABEL.test(rest)) {
    throw new Error(
      `Kubernetes version "${spec}" is neither a CI build (ci/v1.37.0-alpha.2.34+0123456789abcd) nor a CI label (ci/latest, ci/latest-1.37)`,
    );
  }
  return { label: rest, ciBuild: true };
}

/**
 * A ClusterConfiguration.kubernetesVersion as kube-system/kubeadm-config stores it: an exact
 * version, or "ci/<version>" after an upgrade to a CI build (kubeadm's UploadConfiguration
 * restores CIKubernetesVersion). Throws for anything else, naming the version.
 */
export function storedKubernetesVersion(text: string): ResolvedVersion {
  const ci = text.trim().startsWith(CI_VERSION_PREFIX);
  const version = normalizeExact(ci ? text.trim().slice(CI_VERSION_PREFIX.length) : text.trim());
  if (!version) {
    throw new Error(`kube-system/kubeadm-config records no exact Kubernetes version ("${text}")`);
  }
  return {
    version,
    release: releaseFor(version),
    source: "the cluster's kubeadm-config",
    ...(ci ? { ciBuild: true } : {}),
  };
}

/** A label's answer when it cannot be fetched: the newest patch the table knows for it. */
export function offlineResolution(label: string): ResolvedVersion {
  const release = offlineAnswer(label);
  return {
    version: release.knownPatch,
    release,
    source: `${label}: offline fallback (kubeforge version table)`,
  };
}

/**
 * The label to resolve instead when `version` is newer than the newest minor the table knows
 * (kubeadm clamps to its own minor the same way, validateStableVersion); undefined when it is
 * supported.
 */
export function clampedLabel(version: string): string | undefined {
  // Past the newest minor: its major.minor, whatever the patch or pre-release (v2 included).
  const v = semver.coerce(version);
  if (!v) return undefined;
  return semver.gte(v, `1.${NEWEST.minor + 1}.0`) ? `stable-1.${NEWEST.minor}` : undefined;
}
