import { describe, expect, it } from "vitest";
import {
  clusterVersionProblem,
  normalizeClusterVersion,
} from "../../../../src/config/cluster/version.js";
import { RELEASES } from "../../../../src/config/versions.js";

const NEWEST = RELEASES[RELEASES.length - 1]!.minor;
const OLDEST = RELEASES[0]!.minor;

describe("Cluster kubernetesVersion", () => {
  it.each([
    ["v1.35.0", "v1.35.0"],
    ["1.35.2", "v1.35.2"],
    [" v1.34.1 ", "v1.34.1"],
    ["1.35", "stable-1.35"],
    ["v1.35", "stable-1.35"],
    ["stable", "stable"],
    ["stable-1", "stable-1"],
    ["stable-1.34", "stable-1.34"],
    ["release/stable-1.34", "stable-1.34"],
    ["latest", "latest"],
    [`1.${NEWEST}`, `stable-1.${NEWEST}`],
  ])("%s is kept as %s", (text, normalized) => {
    expect(normalizeClusterVersion(text)).toBe(normalized);
    expect(clusterVersionProblem(text)).toBeUndefined();
  });

  it.each([
    [`1.${OLDEST - 1}`, "is not supported"],
    [`v1.${NEWEST + 1}.0`, "is not supported"],
    [`stable-1.${OLDEST - 1}`, "is not supported"],
    ["2.0", "neither a version"],
    ["v1.35.2.1", "neither a version"],
    ["ci/latest", "a CI build (ci/...) can only be an upgrade target"],
    ["newest", "neither a version"],
    ["", "neither a version"],
  ])("refuses %s", (text, problem) => {
    expect(normalizeClusterVersion(text)).toBeUndefined();
    expect(clusterVersionProblem(text)).toContain(problem);
  });
});
