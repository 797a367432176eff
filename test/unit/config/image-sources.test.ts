import { describe, expect, it } from "vitest";
import { parseImageSources, splitImageList } from "../../../src/config/image-sources.js";

const resolve = (p: string) => (p.startsWith("/") ? p : `/ws/${p}`);

describe("load-images items", () => {
  it("splits on commas and new lines, never inside an item", () => {
    expect(splitImageList("app:dev, ghcr.io/acme/api:1\n\n build/my image.tar ,")).toEqual([
      "app:dev",
      "ghcr.io/acme/api:1",
      "build/my image.tar",
    ]);
    expect(splitImageList("  ")).toEqual([]);
  });

  it("reads .tar paths as archives (resolved) and the rest as image references", () => {
    expect(
      parseImageSources(
        [
          "app:dev",
          "localhost:5000/team/api@sha256:" + "a".repeat(64),
          "out/app.TAR",
          "/abs.tar",
          "app.tar.gz",
          "b.tgz",
        ],
        resolve,
      ),
    ).toEqual([
      { kind: "image", ref: "app:dev" },
      { kind: "image", ref: `localhost:5000/team/api@sha256:${"a".repeat(64)}` },
      { kind: "archive", path: "/ws/out/app.TAR" },
      { kind: "archive", path: "/abs.tar" },
      // A valid image reference too, but read as what the user most likely meant: an archive.
      { kind: "archive", path: "/ws/app.tar.gz" },
      { kind: "archive", path: "/ws/b.tgz" },
    ]);
  });

  it.each([
    ["App:Dev", /"App:Dev" is neither an image reference .* nor an archive path/],
    ["app:dev:2", /"app:dev:2" is neither/],
    ["a b", /"a b" is neither/],
  ])("refuses %s", (item, says) => {
    const r = parseImageSources([item], resolve);
    expect("problem" in r && r.problem).toMatch(says);
  });

  it("refuses an item listed twice (after resolving paths)", () => {
    expect(parseImageSources(["x.tar", "/ws/x.tar"], resolve)).toEqual({
      problem: '"/ws/x.tar" is listed twice',
    });
  });
});
