import semver from "semver";
import { clusterVersionProblem, normalizeClusterVersion } from "../../config/cluster/version.js";
import type { ClusterReading } from "./data.js";
import { versionRefusal } from "./policy.js";

// A chained upgrade (`--via V1,V2` or `--via auto`): the exact versions the cluster goes
// through, one minor per hop, as kubeadm allows (phases/upgrade/policy.go: one minor at a time).
// Pure: the resolver (the same one --to goes through: label files, else the version table) is a
// parameter. A run that stopped inside a hop resumes there: hops below where the cluster already
// is (kubeadm-config's version, or a node marker's started target) are behind it and dropped.

/** --via as given: "auto", or versions/labels (each as --to takes it). */
export type ViaRequest = "auto" | readonly string[];

/**
 * --via (or the action's upgrade-via) as given, split at commas: "auto" alone, or versions and
 * labels as --to takes them ("1.35" is its newest patch); throws one sentence naming `field`.
 */
export function viaOption(values: readonly string[], field: string): ViaRequest {
  const given = values.map((v) => v.trim()).filter((v) => v !== "");
  if (given.length === 0) throw new Error(`${field}: give versions (v1.35.2,v1.36.1) or auto`);
  if (given.includes("auto")) {
    if (given.length > 1) throw new Error(`${field}: auto goes alone, without versions`);
    return "auto";
  }
  return given.map((v) => {
    const normalized = normalizeClusterVersion(v);
    if (normalized === undefined) throw new Error(`${field}: ${clusterVersionProblem(v)!}`);
    return normalized;
  });
}

/** Resolves a version or label to an exact version ("stable-1.35" → "v1.35.8"). */
export type VersionResolver = (spec: string, field: string) => Promise<string>;

/** Where the cluster is, for a route: kubeadm-config's version, or further when a hop started. */
export function routeStart(r: ClusterReading): string {
  let at = r.clusterVersion;
  for (const n of r.nodes) {
    const m = n.marker;
    if (m && m.step === "started" && semver.valid(m.to) && semver.valid(at) && semver.gt(m.to, at))
      at = m.to;
  }
  return at;
}

/**
 * The hops from `start` to `to` (exact), the last one `to` itself: each a refusal-free step of
 * at most one minor up. Throws one sentence naming --via for a hop that is not.
 */
export async function resolveRoute(
  cluster: string,
  start: string,
  to: string,
  via: ViaRequest,
  resolve: VersionResolver,
  names: { to: string; via: string } = { to: "--to", via: "--via" },
): Promise<string[]> {
  const viaName = names.via;
  const from = semver.parse(start);
  const target = semver.parse(to);
  if (!from || !target) return [to];
  let through: string[] = [];
  if (via === "auto") {
    // The newest patch of every minor in between, as "stable-1.<minor>" resolves it.
    for (let m = from.minor + 1; m < target.minor && from.major === target.major; m++) {
      through.push(await resolve(`stable-${from.major}.${m}`, `${viaName} auto`));
    }
  } else {
    for (const v of via) through.push(await resolve(v, viaName));
    for (const v of through) {
      if (!semver.lt(v, to)) {
        throw new Error(`${viaName} ${v} is not below the target ${to}: give the versions between`);
      }
    }
    // Versions the cluster has passed already (a resumed run) are behind it.
    through = through.filter((v) => semver.gte(v, start));
  }
  const hops = [...new Set([...through, to])];
  let at = start;
  for (const hop of hops) {
    if (semver.lt(hop, at)) {
      throw new Error(`${viaName}: the versions must go up, and ${hop} comes after ${at}`);
    }
    const asker = hop === to ? names.to : viaName;
    const refusal = semver.eq(hop, at)
      ? undefined
      : versionRefusal(cluster, at, hop, asker, viaName);
    if (refusal) throw new Error(refusal);
    at = hop;
  }
  return hops;
}
