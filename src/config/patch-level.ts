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
