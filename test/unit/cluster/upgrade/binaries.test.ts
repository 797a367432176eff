import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stagingDir, swapBinaries } from "../../../../src/cluster/upgrade/binaries.js";
import type { FetchedArtifact } from "../../../../src/node/artifacts/fetch.js";
import { CommandError } from "../../../../src/remote/host.js";
import { LocalHost } from "../../../../src/remote/local.js";

// The kubelet's turn on a node: the staged binaries put in place with the ones in use kept
// beside them, on a rootfs with the machine's own sh, cmp, cp and mv.

const TARGET = "v1.36.3";
let root: string;
let host: LocalHost;

const artifact = (name: string): FetchedArtifact => ({
  name,
  version: TARGET,
  arch: "amd64",
  path: `/runner/${name}`,
  files: [{ from: `/runner/${name}`, to: `/usr/local/bin/${name}`, mode: 0o755 }],
  sha256: "0".repeat(64),
  source: `https://dl.example/${name}`,
});
const BOTH = [artifact("kubelet"), artifact("kubectl")];

const at = (p: string) => join(root, p);
const text = (p: string) => readFile(at(p), "utf8");

async function put(p: string, content: string) {
  await mkdir(join(at(p), ".."), { recursive: true });
  await writeFile(at(p), content, { mode: 0o755 });
}

async function stage(kubelet: string, kubectl: string) {
  await put(`${stagingDir(TARGET)}/kubelet`, kubelet);
  await put(`${stagingDir(TARGET)}/kubectl`, kubectl);
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "kf-swap-"));
  host = new LocalHost({ rootfs: root });
});
afterEach(() => rm(root, { recursive: true, force: true }));

describe("swapBinaries", () => {
  it("puts the staged binaries in place and keeps the ones in use as .kubeforge-prev", async () => {
    await stage("kubelet new", "kubectl new");
    await put("/usr/local/bin/kubelet", "kubelet old");
    await put("/usr/local/bin/kubectl", "kubectl old");

    expect(await swapBinaries(host, BOTH, TARGET)).toEqual([
      "/usr/local/bin/kubelet.kubeforge-prev",
      "/usr/local/bin/kubectl.kubeforge-prev",
    ]);
    expect(await text("/usr/local/bin/kubelet")).toBe("kubelet new");
    expect(await text("/usr/local/bin/kubectl")).toBe("kubectl new");
    expect(await text("/usr/local/bin/kubelet.kubeforge-prev")).toBe("kubelet old");
    expect(await text("/usr/local/bin/kubectl.kubeforge-prev")).toBe("kubectl old");
    // Renamed over, never left half-written.
    expect((await readdir(at("/usr/local/bin"))).sort()).toEqual([
      "kubectl",
      "kubectl.kubeforge-prev",
      "kubelet",
      "kubelet.kubeforge-prev",
    ]);
  });

  it("installs without keeping anything where no binary was in use", async () => {
    await stage("kubelet new", "kubectl new");
    await put("/usr/local/bin/kubectl", "kubectl old");

    expect(await swapBinaries(host, BOTH, TARGET)).toEqual([
      "/usr/local/bin/kubectl.kubeforge-prev",
    ]);
    expect(await text("/usr/local/bin/kubelet")).toBe("kubelet new");
  });

  it("leaves a binary that is the staged one alone on a resumed run, naming what it kept before", async () => {
    await stage("kubelet new", "kubectl new");
    await put("/usr/local/bin/kubelet", "kubelet old");
    await put("/usr/local/bin/kubectl", "kubectl new");
    await swapBinaries(host, BOTH, TARGET);

    expect(await swapBinaries(host, BOTH, TARGET)).toEqual([
      "/usr/local/bin/kubelet.kubeforge-prev",
    ]);
    // The kept binary is still the one that was in use, not the target.
    expect(await text("/usr/local/bin/kubelet.kubeforge-prev")).toBe("kubelet old");
  });

  it("fails naming the host and the command when a staged binary is missing", async () => {
    await put(`${stagingDir(TARGET)}/kubelet`, "kubelet new");
    await put("/usr/local/bin/kubectl", "kubectl old");

    const err = (await swapBinaries(host, BOTH, TARGET).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(CommandError);
    expect(err.message).toMatch(
      /^local: "sh -c .*" exited with code 1: cp: cannot stat .*\/kubectl'/,
    );
  });
});
