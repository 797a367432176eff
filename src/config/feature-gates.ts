import type { Release } from "./release.js";
import { RELEASES } from "./versions.js";

// kubeadm's own feature gates (cmd/kubeadm/app/features/features.go), not the components'.

/** Gates kubeadm marks deprecated: still accepted, with a warning (features.go NewFeatureGate). */
export const DEPRECATED_FEATURE_GATES: Readonly<Record<string, string>> = {
  PublicKeysECDSA:
    "The PublicKeysECDSA feature gate is deprecated; use ClusterConfiguration.encryptionAlgorithm (ECDSA-P256) instead.",
};

/** Every gate some supported release knows, with its newest default. */
export function allKnownFeatureGates(): Record<string, boolean> {
  const known: Record<string, boolean> = {};
  for (const r of RELEASES) Object.assign(known, r.featureGates);
  return known;
}

/**
 * Parses `--feature-gates "A=true,B=false"` as kubeadm's features.NewFeatureGate: blanks around
 * names and values are trimmed, empty items skipped, values are Go strconv.ParseBool forms.
 * kubeadm knows only its own version's gates, so names are checked against `release` (the
 * version the command line pins) and its deprecated gates are warned about; a gate that
 * graduated in that release passes, for validation to explain. Without a release (a label still
 * to resolve) names are checked in validation, against the resolved version's gates.
 */
export function parseFeatureGates(
  value: string,
  opts: { release?: Release; warn?: (msg: string) => void; flag?: string } = {},
): Record<string, boolean> {
  const { release } = opts;
  const flag = opts.flag ?? "--feature-gates";
  const gates: Record<string, boolean> = {};
  for (const item of value.split(",")) {
    if (item.length === 0) continue;
    const eq = item.indexOf("=");
    if (eq < 0)
      throw new Error(
        `${flag}: "${item}" has no value; write ${item.trim()}=true or ${item.trim()}=false`,
      );
    const name = item.slice(0, eq).trim();
    const text = item.slice(eq + 1).trim();
    const known = release ? name in release.featureGates : true;
    if (!known && !release?.graduatedFeatureGates?.includes(name)) {
      throw new Error(
        `${flag}: unknown feature gate "${name}" for Kubernetes v1.${release!.minor}; known gates: ${Object.keys(release!.featureGates).sort().join(", ") || "none"}`,
      );
    }
    const parsed = parseGoBool(text);
    if (parsed === undefined) {
      throw new Error(
        `${flag}: invalid value "${text}" for feature gate ${name}; use true or false`,
      );
    }
    const locked = release ? lockedGateProblem(name, parsed, release) : undefined;
    if (locked) throw new Error(`${flag}: ${locked}`);
    const deprecation = DEPRECATED_FEATURE_GATES[name];
    if (deprecation && release && name in release.featureGates)
      opts.warn?.(`Setting deprecated feature gate ${name}=${text}. ${deprecation}`);
    gates[name] = parsed;
  }
  return gates;
}

/** Go's strconv.ParseBool. */
export function parseGoBool(text: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(text)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(text)) return false;
  return undefined;
}

/** Gate names in `gates` that `release` does not know, in order. */
export function unknownFeatureGates(gates: Record<string, boolean>, release: Release): string[] {
  return Object.keys(gates).filter((g) => !(g in release.featureGates));
}

/**
 * The problem with setting `gate` to `value` when `release` locks it (a GA gate kubeadm locks to
 * its default: kubernetes/kubernetes#132594, #134106), or undefined.
 */
export function lockedGateProblem(
  gate: string,
  value: boolean,
  release: Release,
): string | undefined {
  const locked = release.lockedFeatureGates?.includes(gate) ?? false;
  const lockedTo = release.featureGates[gate] ?? true;
  if (!locked || value === lockedTo) return undefined;
  return `cannot set feature gate ${gate} to ${value}: it is GA and locked to ${lockedTo} in Kubernetes v1.${release.minor}; remove it`;
}

/**
 * Whether a kubeadm feature is on (kubeadm: features.Enabled): a gate that graduated and was
 * removed, or is locked, has its fixed value; otherwise the user's setting, else the release
 * default.
 */
export function featureGateEnabled(
  featureGates: Readonly<Record<string, boolean>> | undefined,
  release: Release,
  gate: string,
): boolean {
  if (release.graduatedFeatureGates?.includes(gate)) return true;
  if (release.lockedFeatureGates?.includes(gate)) return release.featureGates[gate] ?? true;
  return featureGates?.[gate] ?? release.featureGates[gate] ?? false;
}

/** featureGateEnabled over a configuration's ClusterConfiguration.featureGates. */
export function featureEnabled(
  cfg: { cluster: { featureGates?: Record<string, boolean> } },
  release: Release,
  gate: string,
): boolean {
  return featureGateEnabled(cfg.cluster.featureGates, release, gate);
}
