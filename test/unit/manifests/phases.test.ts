import { mkdtemp, readFile, rm, stat, mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Release } from "../../../src/config/release.js";
import type { InitConfig } from "../../../src/config/types.js";
import { parseYAMLDocuments } from "../../../src/config/yaml.js";
import { controlPlanePhase } from "../../../src/phases/init/control-plane.js";
import { etcdPhase } from "../../../src/phases/init/etcd.js";
import { kubeletStartPhase } from "../../../src/phases/init/kubelet-start.js";
import type { InitData } from "../../../src/phases/init/data.js";
import { DryRunHost } from "../../../src/remote/dry-run.js";
import type { Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import type { Phase } from "../../../src/workflow/phase.js";
import {
  asksCATrustDirs,
  caTrustDirs,
  HostDouble,
  onPath,
  type CommandStub,
} from "../../support/host-double.js";
import {
  type InitDataExtras,
  recordingLogger,
  runPhase,
  testInitData,
} from "../../support/init-fixtures.js";
import { initConfig, release133, release135 } from "./fixtures.js";
import {
  KUBEADM_CONFIG_YAML_NODE_LOCAL_CRI_SOCKET,
  KUBEADM_CONFIG_YAML_V133,
} from "./kubeadm-kubelet-config.js";

// The three phases against a real file system under a temporary root. Commands that would touch
// the machine's services are answered by stubs (a CI runner with systemd must not have its
// kubelet restarted by a unit test); every command asked is recorded.

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "kf-phases-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const NO_SYSTEMD = "System has not been booted with systemd as init system (PID 1). Can't operate.";

function host(commands: CommandStub[] = [], hostname = "cp-1"): HostDouble {
  return new HostDouble(new LocalHost({ rootfs: root }), {
    facts: { hostname },
    commands: [
      ...commands,
      // Only /usr/share/ca-certificates "exists" on this imaginary node.
      caTrustDirs(new Set(["/usr/share/ca-certificates"])),
      onPath("systemctl", "/usr/bin/systemctl"),
      {
        match: ["systemctl", "status"],
        result: { code: 3, stdout: "● kubelet.service\n     Loaded: loaded" },
      },
      { match: ["systemctl", "is-active"], result: { code: 3, stdout: "inactive\n" } },
      { match: ["systemctl"], result: { code: 0 } },
    ],
  });
}

/** Runs the phase tree with the real Runner; its lines carry the "[<phase>] " prefix. */
async function runTree(phase: Phase<InitData>, data: InitData) {
  const log = recordingLogger();
  await runPhase(phase, data, log);
  return log;
}

const file = (path: string) => readFile(join(root, path), "utf8");
const mode = async (path: string) => (await stat(join(root, path))).mode & 0o777;

function data(
  h: Host,
  cfg: InitConfig = initConfig(),
  release: Release = release135(),
  extra: InitDataExtras = {},
): InitData {
  return testInitData(h, cfg, release, { now: new Date("2026-01-01T00:00:00Z"), ...extra });
}

describe("control-plane phase", () => {
  it("writes the three manifests 0600 in a 0700 folder, identically on a re-run", async () => {
    const h = host();
    const log = await runTree(controlPlanePhase, data(h));
    expect(log.lines).toEqual([
      '[control-plane] Using manifest folder "/etc/kubernetes/manifests"',
      '[control-plane] Creating static Pod manifest for "kube-apiserver"',
      '[control-plane] Creating static Pod manifest for "kube-controller-manager"',
      '[control-plane] Creating static Pod manifest for "kube-scheduler"',
    ]);
    expect(await mode("etc/kubernetes/manifests")).toBe(0o700);
    const first: Record<string, string> = {};
    for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      expect(await mode(`etc/kubernetes/manifests/${c}.yaml`)).toBe(0o600);
      first[c] = await file(`etc/kubernetes/manifests/${c}.yaml`);
    }
    const [pod] = parseYAMLDocuments(first["kube-apiserver"]!, "kube-apiserver.yaml") as {
      spec: { volumes: { name: string }[] };
    }[];
    // The CA trust dir the node has is mounted, the ones it lacks are not.
    expect(pod!.spec.volumes.map((v) => v.name)).toEqual([
      "ca-certs",
      "k8s-certs",
      "usr-share-ca-certificates",
    ]);
    // The checks ran on the machine, read-only.
    const tests = h.calls.filter((c) => asksCATrustDirs(c.argv));
    expect(tests.length).toBeGreaterThan(0);
    expect(tests.every((c) => c.opts.readOnly === true)).toBe(true);

    await runTree(controlPlanePhase, data(h));
    for (const c of Object.keys(first)) {
      expect(await file(`etc/kubernetes/manifests/${c}.yaml`)).toBe(first[c]);
    }
  });

  it("uses external-CA flags when ca.crt is there without ca.key", async () => {
    await mkdir(join(root, "etc/kubernetes/pki"), { recursive: true });
    await writeFile(join(root, "etc/kubernetes/pki/ca.crt"), "-----BEGIN CERTIFICATE-----\n");
    await runTree(controlPlanePhase, data(host()));
    const kcm = await file("etc/kubernetes/manifests/kube-controller-manager.yaml");
    expect(kcm).toContain("- --cluster-signing-key-file=\n");
    expect(kcm).toContain("- --cluster-signing-cert-file=\n");
  });

  it("applies patches from the patches folder and logs them", async () => {
    const patchesDir = join(root, "patches"); // on the machine kubeforge runs on
    await mkdir(patchesDir, { recursive: true });
    await writeFile(
      join(patchesDir, "kube-scheduler+json.yaml"),
      "- op: add\n  path: /spec/containers/0/command/-\n  value: --v=4\n",
    );
    const d = data(host(), initConfig(), release135(), { patchesDir });
    const log = await runTree(controlPlanePhase, d);
    expect(await file("etc/kubernetes/manifests/kube-scheduler.yaml")).toContain("- --v=4\n");
    expect(await file("etc/kubernetes/manifests/kube-apiserver.yaml")).not.toContain("--v=4");
    expect(log.lines).toContain(
      '[patches] Applied patch of type "application/json-patch+json" to target "kube-scheduler"',
    );
    // Read once for the whole run, as kubeadm reads it once per process.
    expect(log.lines.filter((l) => l.startsWith("[patches] Reading"))).toEqual([
      `[patches] Reading patches from path "${patchesDir}"`,
    ]);
  });

  it("reads patches from the local machine even in a dry run", async () => {
    const patchesDir = join(root, "patches");
    await mkdir(patchesDir, { recursive: true });
    await writeFile(
      join(patchesDir, "kube-apiserver+merge.yaml"),
      "metadata: {annotations: {p: 'on'}}\n",
    );
    const dry = new DryRunHost(host(), join(root, "dry"), () => undefined);
    await runTree(
      controlPlanePhase,
      data(dry, initConfig(), release135(), { patchesDir, dryRun: true }),
    );
    expect(await file("dry/etc/kubernetes/manifests/kube-apiserver.yaml")).toContain('p: "on"\n');
  });

  it("fails naming a patches folder that does not exist", async () => {
    const patchesDir = join(root, "no-such-dir");
    await expect(
      runTree(controlPlanePhase, data(host(), initConfig(), release135(), { patchesDir })),
    ).rejects.toThrow(`could not list patch files for path "${patchesDir}": it does not exist`);
  });
});

describe("etcd phase", () => {
  it("creates the data dir 0700 and writes etcd.yaml", async () => {
    const log = await runTree(etcdPhase, data(host()));
    expect(log.lines).toEqual([
      '[etcd] Creating static Pod manifest for local etcd in "/etc/kubernetes/manifests"',
    ]);
    expect(await mode("var/lib/etcd")).toBe(0o700);
    expect(await mode("etc/kubernetes/manifests/etcd.yaml")).toBe(0o600);
    expect(await file("etc/kubernetes/manifests/etcd.yaml")).toContain(
      "- --initial-cluster=cp-1=https://10.0.0.4:2380\n",
    );
  });

  it("is skipped with external etcd", () => {
    const cfg = initConfig(
      (c) => (c.cluster.etcd = { external: { endpoints: ["https://etcd:2379"] } }),
    );
    const local = etcdPhase.phases![0]!;
    expect(local.runIf!(data(host(), cfg))).toBe(false);
    expect(local.runIf!(data(host()))).toBe(true);
  });
});

describe("kubelet-start phase", () => {
  it("v1.35: flags env, instance-config merged into config.yaml, then a restart", async () => {
    const h = host([
      { match: ["systemctl", "is-active", "systemd-resolved"], result: { stdout: "active\n" } },
    ]);
    const log = await runTree(kubeletStartPhase, data(h));
    expect(log.lines).toEqual([
      '[kubelet-start] Writing kubelet environment file with flags to file "/var/lib/kubelet/kubeadm-flags.env"',
      '[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/instance-config.yaml"',
      '[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kubeletconfiguration"',
      '[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"',
      "[kubelet-start] Starting the kubelet",
    ]);
    expect(log.warnings).toEqual([]);
    expect(await mode("var/lib/kubelet")).toBe(0o700);
    for (const f of ["kubeadm-flags.env", "instance-config.yaml", "config.yaml"]) {
      expect(await mode(`var/lib/kubelet/${f}`)).toBe(0o644);
    }
    expect(await file("var/lib/kubelet/kubeadm-flags.env")).toBe('KUBELET_KUBEADM_ARGS=""\n');
    expect(await file("var/lib/kubelet/instance-config.yaml")).toBe(
      'containerRuntimeEndpoint: "unix:///var/run/containerd/containerd.sock"\n',
    );
    // Byte for byte what kubeadm writes for kubeadm's defaults (the whole marshalled struct).
    expect(await file("var/lib/kubelet/config.yaml")).toBe(
      KUBEADM_CONFIG_YAML_NODE_LOCAL_CRI_SOCKET,
    );
    const changing = h.calls.filter((c) => c.argv[0] === "systemctl" && !c.opts.readOnly);
    expect(changing.map((c) => c.argv.join(" "))).toEqual([
      "systemctl stop kubelet",
      "systemctl daemon-reload",
      "systemctl restart kubelet",
    ]);
    expect(changing.every((c) => c.opts.sudo === true)).toBe(true);
  });

  it("v1.33: the CRI socket is a flag, no instance-config, and a hostname-override when needed", async () => {
    const cfg = initConfig((c) => (c.cluster.kubernetesVersion = "v1.33.0"));
    await runTree(kubeletStartPhase, data(host([], "VM-42"), cfg, release133()));
    expect(await file("var/lib/kubelet/kubeadm-flags.env")).toBe(
      'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --hostname-override=cp-1 --pod-infra-container-image=registry.k8s.io/pause:3.10"\n',
    );
    await expect(stat(join(root, "var/lib/kubelet/instance-config.yaml"))).rejects.toThrow();
    expect(await file("var/lib/kubelet/config.yaml")).toBe(
      KUBEADM_CONFIG_YAML_V133.replace("resolvConf: /run/systemd/resolve/resolv.conf\n", ""),
    );
  });

  it("kubeletconfiguration patches come before the instance config, which wins", async () => {
    const patchesDir = join(root, "patches");
    await mkdir(patchesDir, { recursive: true });
    await writeFile(
      join(patchesDir, "kubeletconfiguration+merge.yaml"),
      "containerRuntimeEndpoint: unix:///run/other.sock\nmaxPods: 50\n",
    );
    await runTree(kubeletStartPhase, data(host(), initConfig(), release135(), { patchesDir }));
    const [config] = parseYAMLDocuments(
      await file("var/lib/kubelet/config.yaml"),
      "config.yaml",
    ) as Record<string, unknown>[];
    expect(config!.maxPods).toBe(50);
    expect(config!.containerRuntimeEndpoint).toBe("unix:///var/run/containerd/containerd.sock");
  });

  it("sets resolvConf when systemd-resolved is active", async () => {
    const h = host([
      { match: ["systemctl", "is-active", "systemd-resolved"], result: { stdout: "active\n" } },
    ]);
    await runTree(kubeletStartPhase, data(h));
    expect(await file("var/lib/kubelet/config.yaml")).toContain(
      "resolvConf: /run/systemd/resolve/resolv.conf\n",
    );
  });

  it("only warns when the kubelet cannot be stopped or restarted, saying why", async () => {
    const h = host([
      { match: ["systemctl", "stop"], result: { code: 1, stderr: NO_SYSTEMD } },
      { match: ["systemctl", "daemon-reload"], result: { code: 1, stderr: NO_SYSTEMD } },
    ]);
    const log = await runTree(kubeletStartPhase, data(h));
    expect(log.warnings).toHaveLength(2);
    expect(log.warnings[0]).toMatch(
      /^\[kubelet-start\] unable to stop the kubelet service momentarily: \[failed to stop kubelet: .*System has not been booted with systemd/,
    );
    expect(log.warnings[1]).toMatch(
      /^\[kubelet-start\] unable to start the kubelet service: \[failed to reload systemd: .*System has not been booted with systemd/,
    );
    expect(log.lines.at(-1)).toBe(
      "[kubelet-start] Please ensure kubelet is reloaded and running manually.",
    );
    expect(await file("var/lib/kubelet/config.yaml")).toContain("kind: KubeletConfiguration");
  });

  it("says so when there is no init system at all", async () => {
    const h = host([onPath("systemctl", undefined), onPath("openrc", undefined)]);
    const log = await runTree(kubeletStartPhase, data(h));
    expect(log.lines).toContain(
      "[kubelet-start] No supported init system detected, won't make sure the kubelet is running properly.",
    );
    expect(log.warnings).toEqual([
      expect.stringMatching(
        /^\[kubelet-start\] cannot determine if systemd-resolved is active: .*no supported init system/,
      ),
    ]);
    expect(h.calls.some((c) => c.argv.includes("restart"))).toBe(false);
  });

  it("a dry run writes the files into its folder and reports the service commands", async () => {
    const would: string[] = [];
    const real = host();
    const dry = new DryRunHost(real, join(root, "dry"), (_h, argv) => would.push(argv.join(" ")));
    await runTree(kubeletStartPhase, data(dry, initConfig(), release135(), { dryRun: true }));
    expect(would).toEqual([
      "systemctl stop kubelet",
      "systemctl daemon-reload",
      "systemctl restart kubelet",
    ]);
    expect(await file("dry/var/lib/kubelet/config.yaml")).toContain("containerRuntimeEndpoint");
    await expect(stat(join(root, "var/lib/kubelet"))).rejects.toThrow();
  });
});
