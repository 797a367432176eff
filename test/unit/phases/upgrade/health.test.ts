import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KubeClient, KubeObject } from "../../../../src/kube/types.js";
import { KUBEADM_UPGRADE_TIMING } from "../../../../src/phases/upgrade/data.js";
import { checkClusterHealth, type HealthInput } from "../../../../src/phases/upgrade/health.js";
import type { LocalHost } from "../../../../src/remote/local.js";
import {
  baseInitConfig,
  recordingLogger,
  tempRootHost,
  testRelease,
} from "../../../support/init-fixtures.js";

// kubeadm's CheckClusterHealth (phases/upgrade/health.go, v1.35): CreateJob, then
// ControlPlaneNodesReady, then StaticPodManifest, each a preflight check. The last two only read:
// kubeforge asks them while the Job runs and reports the verdicts in kubeadm's order.

let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ host, root, cleanup } = await tempRootHost());
  await mkdir(join(root, "etc/kubernetes/manifests"), { recursive: true });
});
afterEach(() => cleanup());

const node = (name: string, ready: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name },
  status: { conditions: [{ type: "Ready", status: ready }] },
});

/**
 * A cluster whose control-plane Node is `ready`; its Job completes only once the control-plane
 * Nodes were listed (within 3 s, else it never does).
 */
function cluster(ready: string): KubeClient {
  let listed: () => void = () => {};
  const controlPlanesListed = new Promise<void>((r) => (listed = r));
  return {
    list: (_v: string, _k: string, opts: { labelSelector?: string }) => {
      if (opts.labelSelector) listed();
      return Promise.resolve([node("cp-1", ready)]);
    },
    create: (job: KubeObject) =>
      Promise.resolve({ ...job, metadata: { ...job.metadata, name: "upgrade-health-check-x" } }),
    get: async (ref: { name: string }) => {
      const complete = await Promise.race([
        controlPlanesListed.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 3_000)),
      ]);
      return {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: ref.name },
        status: { conditions: complete ? [{ type: "Complete", status: "True" }] : [] },
      };
    },
  } as unknown as KubeClient;
}

function input(client: KubeClient): HealthInput {
  return {
    host,
    cfg: baseInitConfig(),
    release: testRelease(),
    dryRun: false,
    ignorePreflightErrors: new Set(),
    timing: { ...KUBEADM_UPGRADE_TIMING, createJobTimeoutMs: 2_000 },
    client: () => Promise.resolve(client),
  };
}

describe("checkClusterHealth", () => {
  it("asks for the control-plane Nodes while the Job runs", async () => {
    for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      await writeFile(join(root, `etc/kubernetes/manifests/${c}.yaml`), "kind: Pod\n");
    }
    const log = recordingLogger();
    await checkClusterHealth(input(cluster("True")), log, log);
    expect(log.warnings).toEqual([]);
  });

  it("reports every failed check in kubeadm's order", async () => {
    const log = recordingLogger();
    const failed = checkClusterHealth(input(cluster("False")), log, log);
    await expect(failed).rejects.toThrow(
      /\[ERROR ControlPlaneNodesReady\]: there are NotReady control-planes in the cluster: \[cp-1\]\n.*\[ERROR StaticPodManifest\]: The control plane seems to be Static Pod-hosted/s,
    );
  });
});
