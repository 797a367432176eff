import { describe, expect, it } from "vitest";
import { compileCacheDir } from "../../../src/cli/compile-cache.js";

// The kubeforge command's compile cache: the user's own cache folder, never the shared
// temporary folder; none for a user without a home.

describe("compileCacheDir", () => {
  const noHome = () => {
    throw new Error("ENOENT: no such file or directory, uv_os_homedir");
  };

  it("is $XDG_CACHE_HOME/kubeforge, else ~/.cache/kubeforge (HOME, else the passwd entry's)", () => {
    expect(compileCacheDir({ XDG_CACHE_HOME: "/x", HOME: "/h" })).toBe(
      "/x/kubeforge/node-compile-cache",
    );
    expect(compileCacheDir({ XDG_CACHE_HOME: "rel", HOME: "/h" })).toBe(
      "/h/.cache/kubeforge/node-compile-cache",
    );
    expect(compileCacheDir({}, () => "/home/u")).toBe(
      "/home/u/.cache/kubeforge/node-compile-cache",
    );
  });

  it("is none for a user without a home, rather than a relative or shared folder", () => {
    expect(compileCacheDir({}, noHome)).toBeUndefined();
    expect(compileCacheDir({ HOME: "relative" }, noHome)).toBeUndefined();
    expect(compileCacheDir({}, () => "")).toBeUndefined();
  });
});
