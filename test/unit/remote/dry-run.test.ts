import { chmod, mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DryRunHost } from "../../../src/remote/dry-run.js";
import { LocalHost } from "../../../src/remote/local.js";

// The dry-run folder mirrors host paths. Directories the real host already has keep its modes
// there; only what a real run would create gets the mode asked for (os.MkdirAll creates only
// the missing directories).

let dir: string;
let dry: DryRunHost;
const modeOf = async (path: string) => (await stat(join(dir, "dry", path))).mode & 0o7777;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-dry-run-"));
  const realRoot = join(dir, "real");
  for (const [path, mode] of [
    ["/var", 0o755],
    ["/var/lib", 0o755],
    ["/etc", 0o755],
    ["/srv", 0o750],
  ] as const) {
    await mkdir(join(realRoot, path), { recursive: true });
    await chmod(join(realRoot, path), mode);
  }
  const real = new LocalHost({ rootfs: realRoot, name: "real" });
  dry = new DryRunHost(real, join(dir, "dry"), () => undefined);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("DryRunHost folder modes", () => {
  it("creates /var and /var/lib as the host has them, the kubelet folder as asked", async () => {
    await dry.mkdirp("/var/lib/kubelet", 0o700);
    expect([await modeOf("var"), await modeOf("var/lib"), await modeOf("var/lib/kubelet")]).toEqual(
      [0o755, 0o755, 0o700],
    );
  });

  it("copies a host parent's own mode, and writes the file with its mode", async () => {
    await dry.writeFile("/srv/data/file.txt", "x", 0o600);
    expect([await modeOf("srv"), await modeOf("srv/data/file.txt")]).toEqual([0o750, 0o600]);
  });

  it("creates parents the host lacks as a real run would: with the mode asked for", async () => {
    await dry.mkdirp("/opt/kubeforge/x", 0o700);
    expect([
      await modeOf("opt"),
      await modeOf("opt/kubeforge"),
      await modeOf("opt/kubeforge/x"),
    ]).toEqual([0o700, 0o700, 0o700]);
  });
});
