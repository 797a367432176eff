import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// scripts/test-deps is the one list of Debian packages the tests need, for developers and CI
// alike: .ci/run installs nothing else, and the machine these tests run on was prepared by it.

const list = () =>
  execFileSync("scripts/test-deps", ["--list"], { encoding: "utf8" }).trim().split("\n");

describe("scripts/test-deps", () => {
  it("is what .ci/run installs its packages with, and .ci/run installs none of its own", () => {
    const ci = readFileSync(".ci/run", "utf8");
    expect(ci).toMatch(/^scripts\/test-deps$/m);
    expect(ci).not.toMatch(/apt-get install/);
  });

  it("lists Debian packages, each installed here", () => {
    const packages = list();
    expect(packages).toEqual(expect.arrayContaining(["etcd-server", "openssh-server", "haproxy"]));
    for (const name of packages) {
      const status = spawnSync("dpkg-query", ["-W", "-f=${Status}", name], { encoding: "utf8" });
      expect(status.stdout, name).toBe("install ok installed");
    }
  });

  it("refuses to run as another user than root, in one line, changing nothing", () => {
    // The script on stdin: the checkout may sit in a folder that user cannot enter.
    const run = spawnSync(
      "setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-s"],
      { encoding: "utf8", input: readFileSync("scripts/test-deps") },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      "scripts/test-deps installs Debian packages: run it as root (sudo scripts/test-deps)\n",
    );
  });
});
