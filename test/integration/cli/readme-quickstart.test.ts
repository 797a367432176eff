import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { testDir } from "../../support/temp-dir.js";

// The README's first commands, run as written (npm's script runner and the committed dist/cli.js,
// as a user after `npm ci` runs them), with ./cluster and objects.yaml moved to a temporary folder:
// stdout redirected to a file is the YAML kubectl reads back, nothing of npm's mixed in; a second
// run into the same folder is refused.

const readme = readFileSync("README.md", "utf8");
// The first shell block of the README's command-line section.
const quickStart = readme
  .split("\n## The command line\n")[1]!
  .split("```sh\n")[1]!
  .split("```")[0]!;
const commandLine = (prefix: string) => {
  const line = quickStart.split("\n").find((l) => l.startsWith(prefix));
  if (!line) throw new Error(`the README's quick start has no line starting with ${prefix}`);
  return line.replace(/\s+#.*$/, "");
};

function sh(line: string, dir: string) {
  const moved = line
    .replaceAll("./cluster", join(dir, "cluster"))
    .replaceAll("objects.yaml", join(dir, "objects.yaml"));
  return spawnSync("sh", ["-c", moved], {
    encoding: "utf8",
    // npm keeps Node's compile cache in the temporary folder: the test's own.
    env: { ...process.env, KUBECONFIG: "/dev/null", TMPDIR: dir },
  });
}

describe("the README's quick start", () => {
  const init = commandLine("npm run -s kubeforge -- init ");
  const check = commandLine("kubectl label --local -f objects.yaml");

  it("writes clean YAML into objects.yaml, which kubectl reads back", async () => {
    const dir = await testDir("kubeforge-quickstart-");
    const first = sh(init, dir);
    expect(first.status, first.stderr).toBe(0);
    const objects = readFileSync(join(dir, "objects.yaml"), "utf8");
    expect(objects.startsWith("---\n# CREATE /api")).toBe(true);
    const read = sh(check, dir);
    expect(read.status, read.stderr).toBe(0);
    const names = read.stdout.split("\n");
    expect(names).toContain("configmap/kubeadm-config");
    expect(names.filter((n) => /^secret\/bootstrap-token-[a-z0-9]{6}$/.test(n))).toHaveLength(1);
  }, 120_000);

  it("refuses a second run into ./cluster, naming it, and leaves it as it was", async () => {
    const dir = await testDir("kubeforge-quickstart-");
    expect(sh(init, dir).status).toBe(0);
    const again = sh(init, dir);
    expect([again.status, again.stderr]).toEqual([
      1,
      `cannot render the init into ${join(dir, "cluster")}: the folder is not empty; give an empty or new folder\n`,
    ]);
  }, 120_000);
});
