import semver from "semver";
import type { Release } from "./release.js";

// Behaviour kubeadm changed within a minor, by patch release: the table row names the first
// patch that has it (a pre-release of that patch does not).

/** Whether the exact version `version` is `since` or later; false for anything not a version. */
export function atOrAfterPatch(version: string, since: string): boolean {
  const have = semver.valid(version.trim().replace(/^v/, ""));
  return have !== null && semver.gte(have, since.replace(/^v/, ""));
}

/**
 * Whether kubeadm of `version` keeps the user's extraArgs in their order after its sorted
 * defaults (util/arguments.go ArgumentsToCommand after kubernetes/kubernetes#135400), instead of
 * sorting every argument.
 */
export function extraArgsKeepOrder(version: string, release: Release): boolean {
  return atOrAfterPatch(version, release.behaviour.extraArgsKeepOrderSince);
}

/**
 * The release kubeadm of `version` names in its ContainerRuntimeVersion warning ("1.36"), or
 * undefined when that kubeadm has no such check (before 1.35).
 */
export function runtimeConfigFallbackRemovedIn(
  version: string,
  release: Release,
): string | undefined {
  const wordings = release.behaviour.runtimeConfigWarning ?? [];
  const first = wordings[0];
  if (first === undefined) return undefined;
  // A version that is no exact patch (a label not resolved yet) reads as the minor's first one.
  const applying = wordings.filter((w) => atOrAfterPatch(version, w.since));
  return (applying.at(-1) ?? first).removedIn;
}
