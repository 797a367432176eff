import { homedir } from "node:os";
import { describe, expect, it } from "vitest";
import { artifactCacheDir } from "../../../../src/node/artifacts/fetch.js";

describe("artifactCacheDir", () => {
  it.each([
    [
      "GitHub Actions: the tool cache",
      { RUNNER_TOOL_CACHE: "/opt/hostedtoolcache", XDG_CACHE_HOME: "/x", HOME: "/home/u" },
      "/opt/hostedtoolcache",
    ],
    [
      "XDG_CACHE_HOME",
      { XDG_CACHE_HOME: "/var/cache/u", HOME: "/home/u" },
      "/var/cache/u/kubeforge",
    ],
    ["HOME", { HOME: "/home/u" }, "/home/u/.cache/kubeforge"],
    [
      "relative XDG_CACHE_HOME is ignored (XDG spec)",
      { XDG_CACHE_HOME: "c", HOME: "/h" },
      "/h/.cache/kubeforge",
    ],
    [
      "empty RUNNER_TOOL_CACHE is ignored",
      { RUNNER_TOOL_CACHE: "", HOME: "/h" },
      "/h/.cache/kubeforge",
    ],
    ["no HOME: the account's home", {}, `${homedir()}/.cache/kubeforge`],
  ])("%s", (_what, env, dir) => {
    expect(artifactCacheDir(env)).toBe(dir);
  });
});
