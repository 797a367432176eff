import type { ResolvedVersion } from "../config/release.js";
import {
  CI_VERSION_PREFIX,
  clampedLabel,
  DEFAULT_CI_BASE_URL,
  DEFAULT_RELEASE_BASE_URL,
  KUBERNETES_VERSION_FIELD,
  labelFileVersion,
  offlineResolution,
  releaseFor,
  versionRequest,
} from "../config/versions.js";

// Release labels ("stable", "stable-1.35") resolved online, as kubeadm's util/version.go
// KubernetesReleaseVersion: <base>/<label>.txt holds the exact version. The version table
// (config/versions.ts) decides what a label may mean and answers when the network does not.

export interface ResolveOptions {
  /** The HTTP client (the global fetch, or a test's). */
  fetch: typeof fetch;
  /** Environment to read KUBEFORGE_RELEASE_BASE_URL from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Where label files live; default KUBEFORGE_RELEASE_BASE_URL, else https://dl.k8s.io/release. */
  baseURL?: string;
  /** Per request; kubeadm uses 10 s (util/version.go getReleaseVersionTimeout). */
  timeoutMs?: number;
  warn?: (msg: string) => void;
  /** Where the version was given, to start errors with (default: the kubeadm field and flag). */
  field?: string;
  /** Accept a CI build ("ci/…"): upgrade targets only. */
  allowCI?: boolean;
}

async function fetchLabel(url: string, opts: ResolveOptions): Promise<string> {
  const response = await opts.fetch(url, { signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000) });
  if (!response.ok) throw new Error(`HTTP status ${response.status}`);
  return labelFileVersion(await response.text());
}

function errorText(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause instanceof Error ? `: ${e.cause.message}` : "";
    return `${e.message}${cause}`;
  }
  return String(e);
}

/**
 * Resolves a version or label to an exact version and its table row. On any fetch error the
 * table answers (with a warning naming the URL); a label that resolves past the newest minor in
 * the table is re-resolved as stable-1.<newest>.
 */
export async function resolveKubernetesVersion(
  spec: string,
  opts: ResolveOptions,
): Promise<ResolvedVersion> {
  try {
    return await resolve(spec, opts);
  } catch (e) {
    // The problem is in what the user wrote: name where, as validation does.
    throw new Error(`${opts.field ?? KUBERNETES_VERSION_FIELD}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

async function resolve(spec: string, opts: ResolveOptions): Promise<ResolvedVersion> {
  const asked = versionRequest(spec, { allowCI: opts.allowCI === true });
  if ("resolved" in asked) return asked.resolved;
  if (asked.ciBuild) return resolveCILabel(asked.label, opts);
  const baseURL = (
    opts.baseURL ??
    opts.env.KUBEFORGE_RELEASE_BASE_URL ??
    DEFAULT_RELEASE_BASE_URL
  ).replace(/\/+$/, "");
  const warn = opts.warn ?? (() => {});
  const fallback = (url: string, e: unknown, label: string): ResolvedVersion => {
    const offline = offlineResolution(label);
    warn(
      `could not fetch a Kubernetes version from ${url} (${errorText(e)}); falling back to ${offline.version} from kubeforge's version table`,
    );
    return offline;
  };

  const label = asked.label;
  const url = `${baseURL}/${label}.txt`;
  let version: string;
  try {
    version = await fetchLabel(url, opts);
  } catch (e) {
    return fallback(url, e, label);
  }
  const clamped = clampedLabel(version);
  if (clamped) {
    warn(
      `${label} resolved to ${version}, newer than the newest version kubeforge supports (${clamped.replace("stable-", "v")}); using ${clamped} instead`,
    );
    const clampedURL = `${baseURL}/${clamped}.txt`;
    try {
      version = await fetchLabel(clampedURL, opts);
    } catch (e) {
      return fallback(clampedURL, e, clamped);
    }
    return { version, release: releaseFor(version), source: `${clamped} via ${clampedURL}` };
  }
  return { version, release: releaseFor(version), source: `${label} via ${url}` };
}

/**
 * A CI label ("latest-1.37") from the CI bucket (KUBEFORGE_CI_BASE_URL, else kubeadm's). Unlike a
 * release label it has no offline answer, and a build newer than the newest minor kubeforge
 * supports is refused: kubeadm would fall back to that minor's stable release
 * (validateStableVersion), which a rehearsal of a CI build must not silently become.
 */
async function resolveCILabel(label: string, opts: ResolveOptions): Promise<ResolvedVersion> {
  const base = (opts.env.KUBEFORGE_CI_BASE_URL ?? DEFAULT_CI_BASE_URL).replace(/\/+$/, "");
  const url = `${base}/${label}.txt`;
  let version: string;
  try {
    version = await fetchLabel(url, opts);
  } catch (e) {
    throw new Error(
      `could not fetch ${CI_VERSION_PREFIX}${label} from ${url} (${errorText(e)}); a CI build has no offline answer`,
      { cause: e },
    );
  }
  const clamped = clampedLabel(version);
  if (clamped) {
    throw new Error(
      `${CI_VERSION_PREFIX}${label} is ${version}, newer than the newest version kubeforge supports (${clamped.replace("stable-", "v")})`,
    );
  }
  return {
    version,
    release: releaseFor(version),
    source: `${CI_VERSION_PREFIX}${label} via ${url}`,
    ciBuild: true,
  };
}
