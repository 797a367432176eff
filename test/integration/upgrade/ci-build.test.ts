import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliResult } from "../../support/cli.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import {
  cliTrustingReleaseServer,
  clusterFile,
  diagnostics,
  runner,
  upgradeHostDigests,
  type Runner,
} from "../up/support.js";

// `kubeforge upgrade -f cluster.yaml --to ci/latest-1.36`: a rehearsal of an upgrade to a
// Kubernetes CI build, as kinder's upgrade jobs do (ci/latest-1.35 → ci/latest-1.36), on a
// cluster `kubeforge up` built at v1.35.0 over real SSH (one control plane, one worker). The local
// release server stands in for the CI bucket: ci/latest-1.36.txt names a build on the release
// branch, and the build's kubelet and kubectl are under ci/<build>/bin/linux/<arch>/ (their
// trailer names the build: the simulated kubelet reports it after its restart). What is asserted
// is kubeadm's handling of CI builds (util/version.go, util/config/common.go
// NormalizeKubernetesVersion, phases/uploadconfig): the control-plane and kube-proxy images from
// gcr.io/k8s-staging-ci-images with the tag's "+" as "_", etcd and CoreDNS still from
// registry.k8s.io, kubeadm-config recording "ci/<build>" so that `upgrade node` and a second run
// read it back. The pre-release needs no --allow-experimental-upgrades: asking for a CI build is
// the permission. SIMULATION LIMIT: no image is pulled from a registry here (the simulated
// runtime records references); the API server's /version is the simulation's, from the image tag.

const exec = promisify(execFile);
const FROM = "v1.35.0";
const BUILD = "v1.36.4-rc.0.12+0123456789abcd";
const TAG = "v1.36.4-rc.0.12_0123456789abcd";
const CI_REGISTRY = "gcr.io/k8s-staging-ci-images";

let bed: SshTestbed;
let r: Runner;
let server: ReleaseServer;
let clusterPath: string;
let kubeconfig: string;
let reportPath: string;
let cli: (args: string[]) => Promise<CliResult>;

interface NodeList {
  items: { metadata: { name: string }; status?: { nodeInfo?: { kubeletVersion: string } } }[];
}

const upgrade = (...extra: string[]) =>
  cli([
    "upgrade",
    "-f",
    clusterPath,
    "--report",
    reportPath,
    "--junit",
    join(r.dir, "report", "junit.xml"),
    "--node-timeout",
    "3m",
    "--probe",
    "none",
    ...extra,
  ]);

const hostDigests = () => upgradeHostDigests(bed);

function manifestImage(component: string): Promise<string> {
  return readFile(bed.host("cp-1").path(`etc/kubernetes/manifests/${component}.yaml`), "utf8").then(
    (t) => (load(t) as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image,
  );
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1"], { ssh: true });
  r = await runner();
  server = await startReleaseServer();
  server.put("/dl/ci/latest-1.36.txt", Buffer.from(`${BUILD}\n`));
  // A build of the next minor's development branch: past the newest minor kubeforge supports.
  server.put("/dl/ci/latest.txt", Buffer.from("v1.38.0-alpha.0.12+fedcba9876543210\n"));
  cli = await cliTrustingReleaseServer(r, server.ca, {
    KUBEFORGE_CI_BASE_URL: server.sources.kubernetesCI,
  });
  clusterPath = await r.writeClusterFile(
    clusterFile({
      name: "ci-build",
      controlPlanes: [bed.host("cp-1")],
      workers: [bed.host("w-1")],
      kubernetesDownloads: server.sources.kubernetes,
      kubernetesCIDownloads: server.sources.kubernetesCI,
    }),
  );
  kubeconfig = join(r.dir, "admin.conf");
  reportPath = join(r.dir, "report", "upgrade-report.json");
  const up = await cli(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
  if (up.code !== 0) throw new Error(await diagnostics(bed, up));
}, 600_000);

afterAll(async () => {
  await bed?.stop();
  await server?.close();
}, 120_000);

describe("kubeforge upgrade -f --to ci/…: refused before anything changes", () => {
  it("refuses a CI build past the newest minor kubeforge supports, naming it; no host changes", async () => {
    const before = await hostDigests();
    const run = await upgrade("--to", "ci/latest");
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      "--to: ci/latest is v1.38.0-alpha.0.12+fedcba9876543210, newer than the newest version kubeforge supports (v1.37)",
    );
    expect(await hostDigests()).toEqual(before);
  }, 300_000);

  it("--plan names the build, says it is one, and changes nothing", async () => {
    const before = await hostDigests();
    const plan = await upgrade("--to", "ci/latest-1.36", "--plan");
    if (plan.code !== 0) throw new Error(await diagnostics(bed, plan));
    expect(plan.stdout).toContain(
      `# kubeforge upgrade --plan: cluster "ci-build" from ${FROM} to ${BUILD} (a CI build); nothing was changed`,
    );
    expect(await hostDigests()).toEqual(before);
  }, 300_000);
});

describe("kubeforge upgrade -f --to ci/latest-1.36", () => {
  let run: CliResult;
  const requestsBefore: number[] = [];

  beforeAll(async () => {
    requestsBefore.push(server.requests.length);
    run = await upgrade("--to", "ci/latest-1.36");
    if (run.code !== 0) throw new Error(await diagnostics(bed, run));
  }, 900_000);

  it("upgrades to the build the label names, without --allow-experimental-upgrades", async () => {
    expect(run.stderr).toContain(
      `ci/latest-1.36 is the CI build ${BUILD} (ci/latest-1.36 via ${server.sources.kubernetesCI}/latest-1.36.txt)`,
    );
    const report = JSON.parse(await readFile(reportPath, "utf8")) as {
      from: string;
      to: string;
      result: string;
    };
    expect(report).toMatchObject({ from: FROM, to: BUILD, result: "succeeded" });
  });

  it("takes the control plane from the CI registry with the build's tag; etcd from registry.k8s.io", async () => {
    for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      expect(await manifestImage(c)).toBe(`${CI_REGISTRY}/${c}:${TAG}`);
    }
    expect(await manifestImage("etcd")).toMatch(/^registry\.k8s\.io\/etcd:/);
    // The only control plane: kubeadm's apply re-applied kube-proxy with the build (addons.go).
    const ds = await r.kubectl<{
      spec: { template: { spec: { containers: { image: string }[] } } };
    }>(kubeconfig, ["-n", "kube-system", "get", "daemonset", "kube-proxy"]);
    expect(ds.spec.template.spec.containers[0]!.image).toBe(`${CI_REGISTRY}/kube-proxy:${TAG}`);
    const { stdout } = await exec("kubectl", [
      "--kubeconfig",
      kubeconfig,
      "get",
      "--raw",
      "/version",
    ]);
    expect((JSON.parse(stdout) as { gitVersion: string }).gitVersion).toBe(BUILD);
  });

  it('records "ci/<build>" in kubeadm-config, as kubeadm uploads a CI build', async () => {
    const cm = await r.kubectl<{ data: Record<string, string> }>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kubeadm-config",
    ]);
    expect(load(cm.data.ClusterConfiguration!)).toMatchObject({ kubernetesVersion: `ci/${BUILD}` });
  });

  it("puts the build's kubelet and kubectl from the CI bucket on every node, each checked", async () => {
    const nodes = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
    expect(nodes.items.map((n) => [n.metadata.name, n.status?.nodeInfo?.kubeletVersion])).toEqual([
      ["cp-1", BUILD],
      ["w-1", BUILD],
    ]);
    for (const h of bed.hosts) {
      const kubelet = await h.sshOutput("tail -c 200 /usr/local/bin/kubelet", {
        timeoutMs: 60_000,
      });
      expect(kubelet, h.name).toContain(`/dl/ci/${BUILD}/bin/linux/`);
    }
    const asked = server.requests.slice(requestsBefore[0]);
    for (const bin of ["kubelet", "kubectl"]) {
      expect(asked).toContain(`/dl/ci/${BUILD}/bin/linux/amd64/${bin}`);
      expect(asked).toContain(`/dl/ci/${BUILD}/bin/linux/amd64/${bin}.sha256`);
    }
    expect(asked.filter((p) => p.startsWith(`/dl/release/${BUILD}`))).toEqual([]);
  });

  it("a second run reads kubeadm-config's ci/ record back: every node at the build, skipped", async () => {
    const before = await hostDigests();
    const again = await upgrade("--to", "ci/latest-1.36");
    if (again.code !== 0) throw new Error(await diagnostics(bed, again));
    expect(
      again.stderr.match(/already at v1\.36\.4-rc\.0\.12\+0123456789abcd: skipped/g),
    ).toHaveLength(2);
    expect(await hostDigests()).toEqual(before);
  }, 300_000);
});
