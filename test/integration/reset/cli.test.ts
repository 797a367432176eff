import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../../support/cli.js";
import { writeNodeFiles } from "../../unit/phases/reset/fixtures.js";

// The `kubeforge reset` command line of the bundled CLI: kubeadm's flags and phases, `reset
// phase <name>`, and errors that name the flag at fault. Every run here is a dry run or fails
// before changing anything: no service manager or runtime is involved.

let kubeforge: Awaited<ReturnType<typeof bundledCli>>["kubeforge"];
let rootfs: string;

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-reset-cli-"));
  await writeNodeFiles(rootfs, {
    "/etc/kubernetes/manifests/kube-apiserver.yaml": "pod",
    "/etc/kubernetes/admin.conf": "not a kubeconfig",
  });
}, 120_000);

afterAll(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

describe("kubeforge reset (CLI)", () => {
  it("documents kubeadm's flags and phases", async () => {
    const r = await kubeforge(["reset", "--help"]);
    expect(r.code).toBe(0);
    for (const flag of [
      "--force",
      "--dry-run",
      "--cert-dir",
      "--cri-socket",
      "--cleanup-tmp-dir",
      "--skip-phases",
      "--ignore-preflight-errors",
      "--rootfs",
    ]) {
      expect(r.stdout).toContain(flag);
    }
    expect(r.stdout).toMatch(/preflight[\s\S]*remove-etcd-member[\s\S]*cleanup-node/);
  });

  it("runs one phase with `reset phase`, without the closing reminders", async () => {
    const r = await kubeforge(["reset", "phase", "cleanup-node", "--dry-run", "--rootfs", rootfs]);
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "[dryrun] Would remove /etc/kubernetes/manifests/kube-apiserver.yaml",
    );
    expect(r.stderr).toContain("[kubeforge] Phase timings: cleanup-node");
    expect(r.stdout).toBe("");
    expect(await readdir(join(rootfs, "etc/kubernetes/manifests"))).toEqual([
      "kube-apiserver.yaml",
    ]);
  });

  it("a dry run of the whole workflow ends with the reminders on stdout", async () => {
    const r = await kubeforge(["reset", "--dry-run", "--rootfs", rootfs]);
    expect(r.code).toBe(0);
    // An unreadable admin.conf is the API being gone, as far as reset cares.
    expect(r.stderr).toMatch(
      /\[reset\] WARNING: Unable to fetch the kubeadm-config ConfigMap from cluster: .*admin\.conf/,
    );
    expect(r.stdout).toContain("https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/");
  });

  it.each([
    [["--skip-phases", "cleanup"], /invalid phase name "cleanup" in --skip-phases/],
    [["--cert-dir", "pki"], /--cert-dir: "pki" is not an absolute path/],
    [["--ignore-preflight-errors", "all,Swap"], /don't specify individual checks if 'all' is used/],
  ])("rejects %j with one clear sentence", async (flags, message) => {
    const r = await kubeforge(["reset", "--dry-run", "--rootfs", rootfs, ...flags]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(await readdir(join(rootfs, "etc/kubernetes/manifests"))).toEqual([
      "kube-apiserver.yaml",
    ]);
  });
});
