import { isCIVersion, kubernetesVersionProblem, versionRequest } from "../versions.js";
import { quoteValue } from "../values.js";

// kubernetesVersion of a Cluster: what `kubeforge init --kubernetes-version` takes (exact
// versions and kubeadm's release labels, checked against config/versions.ts), plus "1.35" for
// "the newest 1.35 patch" (the action's kubernetes-version input takes that form).

/**
 * The form kept in the spec: "1.35.2" → "v1.35.2", "1.35" / "v1.35" → "stable-1.35", a label
 * as written (minus kubeadm's optional "release/" prefix). Undefined when the text is none of
 * these; then `clusterVersionProblem` says why.
 */
export function normalizeClusterVersion(text: string): string | undefined {
  const t = text.trim();
  const minorOnly = /^v?1\.(0|[1-9][0-9]*)$/.exec(t);
  const normalized = minorOnly
    ? `stable-1.${minorOnly[1]}`
    : /^[0-9]/.test(t)
      ? `v${t}`
      : t.replace(/^release\//, "");
  return kubernetesVersionProblem(normalized) === undefined ? normalized : undefined;
}

/** Why a version is refused (versions.ts' own wording), or undefined when it is accepted. */
export function clusterVersionProblem(text: string): string | undefined {
  if (normalizeClusterVersion(text) !== undefined) return undefined;
  const t = text.trim();
  const minorOnly = /^v?1\.(0|[1-9][0-9]*)$/.exec(t);
  return (
    kubernetesVersionProblem(minorOnly ? `stable-1.${minorOnly[1]}` : t) ??
    `${quoteValue(text)} is not a Kubernetes version`
  );
}

/**
 * An upgrade target as given (--to, upgrade-to): what a Cluster's kubernetesVersion takes, or a
 * CI build ("ci/latest-1.37", "ci/v1.37.0-alpha.2.34+0123456789abcd"), which only an upgrade
 * may go to. Throws one sentence naming `field` for anything else.
 */
export function upgradeTargetVersion(text: string, field: string): string {
  if (isCIVersion(text)) {
    try {
      versionRequest(text, { allowCI: true });
    } catch (e) {
      throw new Error(`${field}: ${(e as Error).message}`, { cause: e });
    }
    return text.trim();
  }
  const normalized = normalizeClusterVersion(text);
  if (normalized === undefined) throw new Error(`${field}: ${clusterVersionProblem(text)!}`);
  return normalized;
}
