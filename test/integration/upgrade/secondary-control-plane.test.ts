import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdir, readFile } from "node:fs/promises";
import { load } from "js-yaml";
import { initFirstControlPlane, joinArgs } from "../../support/stacked-cluster.js";
import {
  createTestbed,
  type CliResult,
  type TestHost,
  type Testbed,
} from "../../support/testbed.js";

// `upgrade apply` on the first of two stacked-etcd control planes, then `upgrade node` on the
// second (namespace test hosts, simulated kubelets and API servers, real etcd). kubeadm defers
// the addons until no kube-apiserver runs another image than this node's
// (phases/upgrade/postupgrade.go UnupgradedControlPlaneInstances, cmd/phases/upgrade/addons.go,
// v1.28+): apply skips them naming cp-2, node on cp-2 applies them.

const TOKEN = "abcdef.0123456789abcdef";
const CERTIFICATE_KEY = "3c".repeat(32);
const TARGET = "v1.36.3";

let bed: Testbed;
let cp1: TestHost;
let cp2: TestHost;
let apply: CliResult;
let node: CliResult;
let proxyImageAfterApply: string;

interface DaemonSet {
  spec: { template: { spec: { containers: { image: string }[] } } };
}

async function proxyImage(): Promise<string> {
  const ds = await bed.kubectl<DaemonSet>(cp1, ["-n", "kube-system", "get", "ds", "kube-proxy"]);
  return ds.spec.template.spec.containers[0]!.image;
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "cp-2"]);
  [cp1, cp2] = bed.hosts as [TestHost, TestHost];
  const secrets = { token: TOKEN, certificateKey: CERTIFICATE_KEY };
  const init = await initFirstControlPlane(cp1, secrets);
  if (init.code !== 0) throw new Error(`init failed:\n${init.stderr}`);
  const hash = await bed.caCertHash(cp1);
  const joined = await cp2.kubeforge(joinArgs(cp1, hash, cp2, secrets, "control-plane"));
  if (joined.code !== 0) throw new Error(`join failed:\n${joined.stderr}`);
  // The health check's Job needs a schedulable Ready node; without a CNI configuration every
  // node is NotReady, so ControlPlaneNodesReady is the one check this test ignores.
  apply = await cp1.kubeforge(
    [
      "upgrade",
      "apply",
      TARGET,
      "--rootfs",
      cp1.rootfs,
      "-y",
      "--ignore-preflight-errors",
      "ControlPlaneNodesReady,CreateJob",
    ],
    { timeoutMs: 420_000 },
  );
  if (apply.code !== 0) console.log(apply.stderr);
  proxyImageAfterApply = await proxyImage();
  node = await cp2.kubeforge(["upgrade", "node", "--rootfs", cp2.rootfs], { timeoutMs: 420_000 });
  if (node.code !== 0) console.log(node.stderr);
}, 1_200_000);

afterAll(async () => {
  await bed?.stop();
});

describe("two control planes: apply on cp-1, then node on cp-2", () => {
  it("apply upgrades cp-1 but leaves the addons, naming the control plane still behind", () => {
    expect(apply.code).toBe(0);
    expect(apply.stderr).toContain(
      "[upgrade/addon] Skipping upgrade of addons because control plane instances [cp-2] have not been upgraded",
    );
    expect(apply.stderr).not.toContain("[addons] Applied essential addon");
    expect(proxyImageAfterApply).toBe("registry.k8s.io/kube-proxy:v1.35.0");
  });

  it("node on cp-2 upgrades its static Pods to the version kubeadm-config names", async () => {
    expect(node.stderr).not.toMatch(/error execution phase/);
    expect(node.code).toBe(0);
    for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      const pod = load(await readFile(cp2.path(`etc/kubernetes/manifests/${c}.yaml`), "utf8")) as {
        spec: { containers: { image: string }[] };
      };
      expect(pod.spec.containers[0]!.image).toBe(`registry.k8s.io/${c}:${TARGET}`);
    }
    // super-admin.conf is renewed "only if it exists" (staticpods.go StaticPodControlPlane,
    // v1.29+); a joined control plane has none and `upgrade node` writes none (kubeadm's kinder
    // super-admin workflow, post-upgrade-secondary-cp: "super-admin.conf must not exist").
    await expect(readFile(cp2.path("etc/kubernetes/super-admin.conf"))).rejects.toThrow(/ENOENT/);
    const tmp = await readdir(cp2.path("etc/kubernetes/tmp"));
    expect(tmp).toContainEqual(expect.stringMatching(/^kubeadm-backup-manifests-\d{4}(-\d\d){5}$/));
  });

  it("node on cp-2, the last control plane, applies the addons", async () => {
    expect(node.stderr).toContain("[addons] Applied essential addon: CoreDNS");
    expect(node.stderr).toContain("[addons] Applied essential addon: kube-proxy");
    expect(await proxyImage()).toBe(`registry.k8s.io/kube-proxy:${TARGET}`);
  });
});
