import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../../support/cli.js";
import { simHost, type SimHost } from "../../support/sim-cluster.js";

// `kubeforge init phase preflight` on a simulated node whose container runtime does or does not
// implement the CRI RuntimeConfig method (the node fault runtimeConfigUnimplemented: a runtime
// from before KEP-4033, as containerd 1.7). Expected: kubeadm v1.35.0's ContainerRuntimeVersion
// warning, as users posted it from real `kubeadm init` runs of v1.35.0:
//   [WARNING ContainerRuntimeVersion]: You must update your container runtime to a version that
//   supports the CRI method RuntimeConfig. Falling back to using cgroupDriver from kubelet config
//   will be removed in 1.36. For more information, see
//   https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri

const KUBEADM_1_35_0_WARNING =
  "[WARNING ContainerRuntimeVersion]: You must update your container runtime to a version that supports the CRI method RuntimeConfig. Falling back to using cgroupDriver from kubelet config will be removed in 1.36. For more information, see https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri";

let kubeforge: Awaited<ReturnType<typeof bundledCli>>["kubeforge"];
let host: SimHost;

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  host = await simHost({ kubernetesVersion: "v1.35.0" });
}, 120_000);

afterAll(async () => {
  await host?.stop();
});

const preflight = () =>
  kubeforge(
    [
      "init",
      "phase",
      "preflight",
      "--config",
      host.configFile,
      "--rootfs",
      host.rootfs,
      "--ignore-preflight-errors",
      "all",
    ],
    { env: host.node.env },
  );

describe("init preflight and the runtime's RuntimeConfig", () => {
  it("says nothing of a runtime that answers RuntimeConfig", async () => {
    const r = await preflight();
    expect(r.stderr).not.toMatch(/error execution phase/);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("ContainerRuntimeVersion");
  }, 120_000);

  it("warns as kubeadm v1.35.0 does of a runtime without it, and goes on", async () => {
    await host.node.setFaults({ runtimeConfigUnimplemented: true });
    const r = await preflight();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(KUBEADM_1_35_0_WARNING);
  }, 120_000);
});
