import { createHash, X509Certificate } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initFirstControlPlane, joinArgs } from "../../support/stacked-cluster.js";
import {
  createTestbed,
  type CliResult,
  type TestHost,
  type Testbed,
} from "../../support/testbed.js";

// `kubeforge upgrade apply` on the first control plane of a cluster `kubeforge init` built at
// v1.35.0, then `upgrade node` on a worker, each on a namespace testbed host whose kubelet, API
// server and controllers are the simulation (etcd is Debian's, for real). Every expected value
// is kubeadm's, from cmd/kubeadm/app/cmd/upgrade/{apply,node}.go and
// app/phases/upgrade/{staticpods,postupgrade,kubeletconfig}.go (v1.35), as cited per test.
// What is checked is read back from the host's files, openssl-free node:crypto and kubectl.

const TOKEN = "abcdef.0123456789abcdef";
const CERTIFICATE_KEY = "7a".repeat(32);
const TARGET = "v1.36.3";
const COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

let bed: Testbed;
let cp: TestHost;
let worker: TestHost;
const before = new Map<string, Buffer>();
let apply: CliResult;
let node: CliResult;
let dryRun: CliResult;
let dryRunFiles: string[];
let failed: CliResult;
const digests: Record<string, Map<string, string>> = {};
let afterFault: Map<string, Buffer>;

interface Obj {
  metadata: { name: string };
  data?: Record<string, string>;
  status?: {
    conditions?: { type: string; status: string }[];
    nodeInfo?: { kubeletVersion: string };
  };
}

const read = (h: TestHost, p: string) => readFile(h.path(p));
const cert = async (h: TestHost, p: string) => new X509Certificate(await read(h, p));
/** The client certificate embedded in a kubeconfig. */
async function kubeconfigCert(h: TestHost, p: string): Promise<X509Certificate> {
  const kc = load((await read(h, p)).toString()) as {
    users: { user: { "client-certificate-data": string } }[];
  };
  return new X509Certificate(Buffer.from(kc.users[0]!.user["client-certificate-data"], "base64"));
}

/** sha256 of every file under the host's /etc/kubernetes and /var/lib/kubelet, by path. */
async function digest(h: TestHost): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(h.path(dir), { withFileTypes: true }).catch(() => [])) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile())
        out.set(
          p,
          createHash("sha256")
            .update(await read(h, p))
            .digest("hex"),
        );
    }
  };
  await walk("etc/kubernetes");
  await walk("var/lib/kubelet");
  return out;
}

async function tmpEntries(h: TestHost): Promise<string[]> {
  return (await readdir(h.path("etc/kubernetes/tmp"))).sort();
}

/** The sim kubelet reports Ready only with a CNI configuration (containerd's NetworkReady). */
async function networkReady(h: TestHost): Promise<void> {
  await mkdir(h.path("etc/cni/net.d"), { recursive: true });
  await writeFile(h.path("etc/cni/net.d/10-test.conflist"), "{}\n");
}

async function waitNodesReady(names: string[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const list = await bed.kubectl<{ items: Obj[] }>(cp, ["get", "nodes"]);
    const ready = list.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
    if (names.every((n) => ready.some((r) => r.metadata.name === n))) return;
    if (Date.now() > deadline) throw new Error(`nodes not Ready: ${JSON.stringify(list.items)}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1"]);
  [cp, worker] = bed.hosts as [TestHost, TestHost];
  const secrets = { token: TOKEN, certificateKey: CERTIFICATE_KEY };
  const init = await initFirstControlPlane(cp, secrets);
  if (init.code !== 0) throw new Error(`init failed:\n${init.stderr}`);
  const joined = await worker.kubeforge(
    joinArgs(cp, await bed.caCertHash(cp), worker, secrets, "worker"),
  );
  if (joined.code !== 0) throw new Error(`join failed:\n${joined.stderr}`);
  await networkReady(cp);
  await networkReady(worker);
  await waitNodesReady(["cp-1", "w-1"]);
  for (const c of COMPONENTS) {
    before.set(c, await read(cp, `etc/kubernetes/manifests/${c}.yaml`));
  }
  for (const f of [
    "etc/kubernetes/pki/apiserver.crt",
    "etc/kubernetes/pki/ca.crt",
    "etc/kubernetes/pki/etcd/server.crt",
    "etc/kubernetes/admin.conf",
    "etc/kubernetes/super-admin.conf",
    "etc/kubernetes/kubelet.conf",
    "var/lib/kubelet/config.yaml",
  ]) {
    before.set(f, await read(cp, f));
  }
  before.set("w-1:config.yaml", await read(worker, "var/lib/kubelet/config.yaml"));
  // Renewed certificates must start later than the ones init wrote (second resolution).
  await new Promise((r) => setTimeout(r, 1100));

  digests.beforeDryRun = await digest(cp);
  // The dry-run folder in the host's work folder, which the testbed removes.
  const dryRunDir = join(cp.workDir, "dry-run");
  dryRun = await cp.kubeforge([
    "upgrade",
    "apply",
    TARGET,
    "--rootfs",
    cp.rootfs,
    "--dry-run",
    "--dry-run-dir",
    dryRunDir,
  ]);
  dryRunFiles = await readdir(join(dryRunDir, "etc/kubernetes/manifests")).catch(() => []);
  digests.afterDryRun = await digest(cp);

  // A kubelet that never picks up kube-scheduler's new manifest: the hash never changes.
  await cp.node.setFaults({ frozenStaticPods: ["kube-scheduler"] });
  const config = join(cp.workDir, "upgrade.yaml");
  await writeFile(
    config,
    [
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: UpgradeConfiguration",
      `apply: {kubernetesVersion: ${TARGET}}`,
      // Long enough for the components before kube-scheduler to restart on a loaded machine:
      // only the faulty one must run out of it.
      "timeouts: {upgradeManifests: 45s}",
      "",
    ].join("\n"),
  );
  failed = await cp.kubeforge(
    ["upgrade", "apply", "--config", config, "-y", "--rootfs", cp.rootfs],
    {
      timeoutMs: 300_000,
    },
  );
  afterFault = new Map();
  for (const c of COMPONENTS) {
    afterFault.set(c, await read(cp, `etc/kubernetes/manifests/${c}.yaml`));
  }
  await cp.node.setFaults({});
  // kubeadm's rollback moves the old manifests back and returns (rollbackOldManifests does not
  // wait): the kubelet then restarts the old kube-apiserver. The next apply meets it, as an
  // operator who waits for the cluster to be back would.
  await untilServerVersion(cp, "v1.35.0");

  apply = await cp.kubeforge(["upgrade", "apply", TARGET, "--rootfs", cp.rootfs, "-y"], {
    timeoutMs: 420_000,
  });
  if (apply.code !== 0) console.log(apply.stderr, await cp.node.logs());
  node = await worker.kubeforge(["upgrade", "node", "--rootfs", worker.rootfs], {
    timeoutMs: 120_000,
  });
  if (node.code !== 0) console.log(node.stderr);
}, 900_000);

/** Waits (up to 60 s) until the API server answers `version` with `want`. */
async function untilServerVersion(cp: Parameters<typeof bed.kubectl>[0], want: string) {
  let seen = "no answer";
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const v = await bed
      .kubectl<{ serverVersion?: { gitVersion: string } }>(cp, ["version"])
      .catch(() => undefined);
    seen = v?.serverVersion?.gitVersion ?? "no answer";
    if (seen === want) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the API server still answers ${seen}, not ${want}, 60 s after the rollback`);
}

afterAll(async () => {
  await bed?.stop();
});

describe("kubeforge upgrade apply --dry-run", () => {
  it("changes no file on the node and prints kubeadm's dry-run closing line (apply.go)", () => {
    expect(dryRun.stderr).not.toMatch(/error execution phase/);
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toContain("[upgrade/successful] Finished dryrunning successfully!");
    expect(digests.afterDryRun).toEqual(digests.beforeDryRun);
    // DryRunStaticPodUpgrade: the three control-plane manifests rendered where they would go.
    expect(dryRunFiles.sort()).toEqual([
      "kube-apiserver.yaml",
      "kube-controller-manager.yaml",
      "kube-scheduler.yaml",
    ]);
  });
});

describe("a control-plane component whose static Pod hash never changes", () => {
  it("fails naming the component, after timeouts.upgradeManifests", () => {
    // staticpods.go upgradeComponent: WaitForStaticPodHashChange, then rollbackOldManifests.
    expect(failed.code, failed.stderr.slice(-4000)).not.toBe(0);
    expect(failed.stderr, failed.stderr.slice(-4000)).toContain(
      "couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state.",
    );
    expect(failed.stderr, failed.stderr.slice(-4000)).toMatch(
      /static Pod hash for component kube-scheduler on Node cp-1 did not change after 45s/,
    );
  });

  it("puts every replaced control-plane manifest back byte for byte; etcd stays upgraded", () => {
    // rollbackOldManifests(..., restoreEtcd=false): etcd's manifest is not restored.
    for (const c of COMPONENTS.slice(1)) {
      expect(afterFault.get(c)!.equals(before.get(c)!), c).toBe(true);
    }
    expect(afterFault.get("etcd")!.equals(before.get("etcd")!)).toBe(false);
  });
});

describe("kubeforge upgrade apply on the first control plane", () => {
  it("succeeds with kubeadm's closing message (cmd/upgrade/apply.go)", () => {
    expect(apply.stderr).not.toMatch(/error execution phase/);
    expect(apply.code).toBe(0);
    expect(apply.stdout).toContain(
      `[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "${TARGET}".`,
    );
    expect(apply.stdout).toContain(
      "[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.",
    );
  });

  it("runs the health checks and the version policy before changing anything", () => {
    // phases/upgrade/health.go CheckClusterHealth; cmd/phases/upgrade/apply/preflight.go.
    expect(apply.stderr).toContain("[upgrade] Running cluster health checks");
    expect(apply.stderr).not.toMatch(
      /WARNING (CreateJob|ControlPlaneNodesReady|StaticPodManifest)/,
    );
    expect(apply.stderr).toContain(`[upgrade/versions] Cluster version: v1.35.0`);
    const health = apply.stderr.indexOf("Running cluster health checks");
    const controlPlane = apply.stderr.indexOf("[upgrade/control-plane]");
    expect(health).toBeGreaterThan(-1);
    expect(controlPlane).toBeGreaterThan(health);
  });

  it("upgrades etcd first, then kube-apiserver, kube-controller-manager, kube-scheduler", async () => {
    // staticpods.go StaticPodControlPlane: etcd, then constants.ControlPlaneComponents. The
    // failed run left etcd upgraded, so this run finds its manifest equal and restarts it
    // because kube-apiserver's changes (kubernetes/kubernetes#124688).
    const order = [
      apply.stderr.indexOf(
        `[upgrade/staticpods] Restarting the etcd static pod and backing up its manifest to "/etc/kubernetes/tmp/kubeadm-backup-manifests-`,
      ),
      ...COMPONENTS.slice(1).map((c) =>
        apply.stderr.indexOf(
          `[upgrade/staticpods] Moving new manifest to "/etc/kubernetes/manifests/${c}.yaml"`,
        ),
      ),
    ];
    expect(order.every((i) => i > -1)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    for (const c of COMPONENTS.slice(1)) {
      const pod = load((await read(cp, `etc/kubernetes/manifests/${c}.yaml`)).toString()) as {
        spec: { containers: { image: string }[] };
      };
      expect(pod.spec.containers[0]!.image).toBe(`registry.k8s.io/${c}:${TARGET}`);
    }
    // kubeadm v1.36's etcd: `kubeadm config images list` of v1.36.0 to v1.36.5 names
    // registry.k8s.io/etcd:3.6.8-0 (minikube's generated constants_kubeadm_images.go), as the
    // observed `kubeadm upgrade plan` v1.35.5 → v1.36.1 does.
    const etcd = load((await read(cp, "etc/kubernetes/manifests/etcd.yaml")).toString()) as {
      spec: { containers: { image: string }[] };
    };
    expect(etcd.spec.containers[0]!.image).toBe("registry.k8s.io/etcd:3.6.8-0");
  });

  it("keeps the old manifests byte for byte in kubeadm-backup-manifests-<date> and the etcd data in kubeadm-backup-etcd-<date>", async () => {
    // staticpods.go GetPathManagerForUpgrade: CreateTimestampDir "2006-01-02-15-04-05";
    // the temporary kubeadm-upgraded-manifests<random> folder is removed (CleanupDirs).
    const entries = await tmpEntries(cp);
    const backups = entries.filter((e) =>
      /^kubeadm-backup-manifests-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d$/.test(e),
    );
    // One from the failed run, one from the run that succeeded (names sort by date).
    expect(backups).toHaveLength(2);
    // The run that succeeded removed its kubeadm-upgraded-manifests<random> (CleanupDirs); the
    // failed one kept its own, as kubeadm keeps everything "in the fail and rollback case".
    expect(entries.filter((e) => /^kubeadm-upgraded-manifests\d+$/.test(e))).toHaveLength(1);
    for (const c of COMPONENTS.slice(1)) {
      const saved = await read(cp, `etc/kubernetes/tmp/${backups[1]}/${c}.yaml`);
      expect(saved.equals(before.get(c)!), c).toBe(true);
    }
    // etcd was upgraded by the failed run (and not rolled back), so its v1.35 manifest is in
    // the first backup; the second run backed up and restarted that upgraded one
    // (kubernetes/kubernetes#124688: etcd restarts when kube-apiserver's manifest changes).
    const firstEtcd = await read(cp, `etc/kubernetes/tmp/${backups[0]}/etcd.yaml`);
    expect(firstEtcd.equals(before.get("etcd")!)).toBe(true);
    const secondEtcd = await read(cp, `etc/kubernetes/tmp/${backups[1]}/etcd.yaml`);
    expect(secondEtcd.equals(afterFault.get("etcd")!)).toBe(true);
    const etcdBackup = entries.find((e) => /^kubeadm-backup-etcd-\d{4}(-\d\d){5}$/.test(e));
    expect(etcdBackup).toBeDefined();
    // util.CopyDir is `cp -r /var/lib/etcd <dir>`: the data folder lands inside it.
    expect(await readdir(cp.path(`etc/kubernetes/tmp/${etcdBackup}/etcd/member`))).toEqual(
      expect.arrayContaining(["snap", "wal"]),
    );
  });

  it("renews the upgraded components' certificates and admin.conf, not the CA or kubelet.conf", async () => {
    // staticpods.go renewCertsByComponent and the admin.conf renewal at the end.
    const old = (f: string) => new X509Certificate(before.get(f)!);
    const renewed = await cert(cp, "etc/kubernetes/pki/apiserver.crt");
    expect(renewed.serialNumber).not.toBe(old("etc/kubernetes/pki/apiserver.crt").serialNumber);
    expect(Date.parse(renewed.validFrom)).toBeGreaterThan(
      Date.parse(old("etc/kubernetes/pki/apiserver.crt").validFrom),
    );
    expect(renewed.subject).toBe(old("etc/kubernetes/pki/apiserver.crt").subject);
    expect(renewed.subjectAltName).toBe(old("etc/kubernetes/pki/apiserver.crt").subjectAltName);
    expect((await cert(cp, "etc/kubernetes/pki/etcd/server.crt")).serialNumber).not.toBe(
      old("etc/kubernetes/pki/etcd/server.crt").serialNumber,
    );
    expect(
      (await read(cp, "etc/kubernetes/pki/ca.crt")).equals(
        before.get("etc/kubernetes/pki/ca.crt")!,
      ),
    ).toBe(true);
    expect(
      (await read(cp, "etc/kubernetes/kubelet.conf")).equals(
        before.get("etc/kubernetes/kubelet.conf")!,
      ),
    ).toBe(true);
    const admin = await kubeconfigCert(cp, "etc/kubernetes/admin.conf");
    const oldAdmin = load(before.get("etc/kubernetes/admin.conf")!.toString()) as {
      users: { user: { "client-certificate-data": string } }[];
    };
    expect(admin.serialNumber).not.toBe(
      new X509Certificate(Buffer.from(oldAdmin.users[0]!.user["client-certificate-data"], "base64"))
        .serialNumber,
    );
  });

  it("renews super-admin.conf too, since it exists on the first control plane, keeping its subject", async () => {
    // staticpods.go StaticPodControlPlane (v1.29+, KEP-4214): after admin.conf, "Do the same for
    // super-admin.conf, but only if it exists" (constants.SuperAdminKubeConfigFileName), under
    // the same certificate-renewal switch, a failure rolling the manifests back.
    const renewed = await kubeconfigCert(cp, "etc/kubernetes/super-admin.conf");
    const oldFile = load(before.get("etc/kubernetes/super-admin.conf")!.toString()) as {
      users: { user: { "client-certificate-data": string } }[];
    };
    const old = new X509Certificate(
      Buffer.from(oldFile.users[0]!.user["client-certificate-data"], "base64"),
    );
    expect(renewed.serialNumber).not.toBe(old.serialNumber);
    expect(Date.parse(renewed.validFrom)).toBeGreaterThan(Date.parse(old.validFrom));
    expect(renewed.subject).toBe("O=system:masters\nCN=kubernetes-super-admin");
    expect(renewed.subject).toBe(old.subject);
  });

  it("stores the target in kubeadm-config and uploads kubelet-config (cmd/phases/upgrade/apply/uploadconfig.go)", async () => {
    const cm = await bed.kubectl<Obj>(cp, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kubeadm-config",
    ]);
    expect(load(cm.data!.ClusterConfiguration!)).toMatchObject({ kubernetesVersion: TARGET });
    const kubelet = await bed.kubectl<Obj>(cp, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kubelet-config",
    ]);
    expect(kubelet.data!.kubelet).toContain("kind: KubeletConfiguration");
  });

  it("backs up the kubelet configuration into kubeadm-kubelet-config-<date> and rewrites it", async () => {
    // phases/upgrade/postupgrade.go WriteKubeletConfigFiles; v1.35 names the folder with the
    // date, as a v1.35.4 run logs it (postupgrade.go:105, "kubeadm-kubelet-config-2026-05-01-
    // 04-18-07"); v1.33/v1.34 used CreateTempDir's random suffix.
    const dir = (await tmpEntries(cp)).find((e) =>
      /^kubeadm-kubelet-config-\d{4}(-\d\d){5}$/.test(e),
    );
    expect(dir).toBeDefined();
    const saved = await read(cp, `etc/kubernetes/tmp/${dir}/config.yaml`);
    expect(saved.equals(before.get("var/lib/kubelet/config.yaml")!)).toBe(true);
    expect((await read(cp, "var/lib/kubelet/config.yaml")).toString()).toContain(
      "kind: KubeletConfiguration",
    );
  });

  it("re-applies CoreDNS and kube-proxy, the only control plane being upgraded (addons.go)", async () => {
    expect(apply.stderr).toContain("[addons] Applied essential addon: CoreDNS");
    expect(apply.stderr).toContain("[addons] Applied essential addon: kube-proxy");
    const ds = await bed.kubectl<{
      spec: { template: { spec: { containers: { image: string }[] } } };
    }>(cp, ["-n", "kube-system", "get", "daemonset", "kube-proxy"]);
    expect(ds.spec.template.spec.containers[0]!.image).toBe(`registry.k8s.io/kube-proxy:${TARGET}`);
  });

  it("the API server now serves the target version", async () => {
    const v = await bed.kubectl<{ serverVersion: { gitVersion: string } }>(cp, ["version"]);
    expect(v.serverVersion.gitVersion).toBe(TARGET);
  });
});

describe("kubeforge upgrade node on a worker", () => {
  it("skips the control-plane phases and rewrites only the kubelet configuration (node.go)", async () => {
    expect(node.stderr).not.toMatch(/error execution phase/);
    expect(node.code).toBe(0);
    // cmd/phases/upgrade/node/preflight.go and controlplane.go.
    expect(node.stderr).toContain("Skipping prepull. Not a control plane node.");
    expect(node.stderr).toContain("Skipping phase. Not a control plane node.");
    const dir = (await tmpEntries(worker)).find((e) =>
      /^kubeadm-kubelet-config-\d{4}(-\d\d){5}$/.test(e),
    );
    expect(dir).toBeDefined();
    const saved = await read(worker, `etc/kubernetes/tmp/${dir}/config.yaml`);
    expect(saved.equals(before.get("w-1:config.yaml")!)).toBe(true);
    expect(await tmpEntries(worker)).not.toContainEqual(expect.stringMatching(/^kubeadm-backup/));
  });
});
