// kubeadm v1.35's join phase tree (kubernetes/website's generated `kubeadm join` reference for
// v1.35), with what kubernetes/kubernetes#134106 changed: control-plane-join/etcd kept,
// deprecated and hidden; kubelet-wait-bootstrap listed and always run.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { phaseTreeHelp } from "../../../../src/cli/options.js";
import type { JoinData } from "../../../../src/phases/join/data.js";
import { joinPhases } from "../../../../src/phases/join/index.js";
import { kubeletWaitBootstrapPhase } from "../../../../src/phases/join/kubelet-wait-bootstrap.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { Runner } from "../../../../src/workflow/runner.js";
import { baseInitConfig, recordingLogger, testRelease } from "../../../support/init-fixtures.js";

// `kubeadm join --help` of v1.35, as the reference lists it.
const KUBEADM_135_HELP = [
  "preflight",
  "control-plane-prepare",
  "  /download-certs",
  "  /certs",
  "  /kubeconfig",
  "  /control-plane",
  "kubelet-start",
  "etcd-join",
  "kubelet-wait-bootstrap",
  "control-plane-join",
  "  /mark-control-plane",
  "wait-control-plane",
];

describe("join's phase tree", () => {
  it("help lists kubeadm v1.35's phases, kubelet-wait-bootstrap included", () => {
    const listed = phaseTreeHelp(joinPhases() as never, "")
      .split("\n")
      .map((l) =>
        l
          .trimEnd()
          .replace(/^( *)(\S+).*$/, (_m, pad: string, name: string) =>
            pad.length > 0 ? `  /${name}` : name,
          ),
      );
    expect(listed).toEqual(KUBEADM_135_HELP);
  });

  it("knows the hidden phases scripts skip by name: check-etcd and control-plane-join/etcd", () => {
    const runner = new Runner(joinPhases(), recordingLogger());
    expect(runner.paths()).toContain("check-etcd");
    expect(runner.paths()).toContain("control-plane-join/etcd");
    const selected = runner.selected({ skipPhases: ["control-plane-join/etcd"] });
    expect(selected.get("control-plane-join/etcd")).toBe(false);
    expect(selected.get("control-plane-join/mark-control-plane")).toBe(true);
  });
});

describe("kubelet-wait-bootstrap in a dry run", () => {
  let rootfs: string;
  beforeEach(async () => {
    rootfs = await mkdtemp(join(tmpdir(), "kubeforge-join-wait-"));
  });
  afterEach(async () => {
    await rm(rootfs, { recursive: true, force: true });
  });

  it("leaves bootstrap-kubelet.conf in the dry-run folder (kubeadm returns before removing it)", async () => {
    await mkdir(join(rootfs, "etc/kubernetes"), { recursive: true });
    await writeFile(join(rootfs, "etc/kubernetes/bootstrap-kubelet.conf"), "apiVersion: v1\n");
    const host = new LocalHost({ rootfs });
    const data = {
      host,
      dryRun: true,
      clusterConfig: () => Promise.resolve({ cfg: baseInitConfig(), release: testRelease(35) }),
    } as unknown as JoinData;
    const log = recordingLogger();
    await kubeletWaitBootstrapPhase.run!(data, { path: "kubelet-wait-bootstrap", log });
    expect(log.lines).toEqual(["Would wait for the kubelet to be bootstrapped"]);
    expect(await host.exists("/etc/kubernetes/bootstrap-kubelet.conf")).toBe(true);
  });
});
