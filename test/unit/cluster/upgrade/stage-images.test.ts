import { describe, expect, it } from "vitest";
import { stageImages } from "../../../../src/cluster/upgrade/stage-images.js";
import { defaultClusterSpec } from "../../../../src/config/cluster/defaults.js";
import { releaseFor } from "../../../../src/config/versions.js";
import { CANARY_IMAGE } from "../../../../src/manifests/probe-canary.js";
import { firstControlPlaneConfig } from "../../../support/up-config.js";

// What the upgrade's `stage` pulls on each node: the target's images for its role (kubeadm's
// `config images list` on a control plane; pause, kube-proxy and CoreDNS on a worker), and with
// the canary workload probe its image on the workers, where its Pods run.

const TARGET = "v1.36.3";
const R = releaseFor(TARGET);
const cluster = firstControlPlaneConfig(defaultClusterSpec(), TARGET).cluster;
const probes = { intervalMs: 500, keep: false, settleMs: 300_000 };
const WORKER = [
  `registry.k8s.io/pause:${R.pauseVersion}`,
  `registry.k8s.io/kube-proxy:${TARGET}`,
  `registry.k8s.io/coredns/coredns:${R.coreDNSVersion}`,
];

describe("stageImages", () => {
  it("adds the canary's image on the workers when the canary is probed", () => {
    expect(stageImages(cluster, "worker", TARGET, probes)).toEqual([...WORKER, CANARY_IMAGE]);
    expect(CANARY_IMAGE).toBe("registry.k8s.io/e2e-test-images/agnhost:2.52");
  });

  it("leaves it out on control planes, without the workload probe, and when the user's workloads replace the canary", () => {
    expect(stageImages(cluster, "control-plane", TARGET, probes)).not.toContain(CANARY_IMAGE);
    expect(stageImages(cluster, "control-plane", TARGET, probes)).toContain(
      `registry.k8s.io/kube-apiserver:${TARGET}`,
    );
    expect(stageImages(cluster, "worker", TARGET, undefined)).toEqual(WORKER);
    const user = { objects: [], requests: [], deployments: [], command: "true" };
    expect(stageImages(cluster, "worker", TARGET, { ...probes, user })).toEqual(WORKER);
  });
});
