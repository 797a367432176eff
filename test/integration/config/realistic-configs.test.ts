import { mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli, type CliResult } from "../../support/cli.js";

// Realistic kubeadm configuration files, as users bring them, through `kubeforge config
// validate` and `kubeforge init --dry-run`. Each case states what kubeadm of that version
// answers, and why (kubeadm's source or changelog).

let kubeforge: (args: string[]) => Promise<CliResult>;
let dir: string;

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  dir = await mkdtemp(join(tmpdir(), "kubeforge-realistic-"));
}, 60_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const init = (address: string) =>
  [
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: InitConfiguration",
    "localAPIEndpoint:",
    `  advertiseAddress: ${address}`,
    "nodeRegistration:",
    "  name: cp-1",
    "---",
  ].join("\n");

interface Case {
  name: string;
  text: string;
  /** kubeadm config validate: accepted? and what stderr names. */
  valid: boolean;
  stderr: RegExp[];
  /** init --dry-run: a rendered file and what it holds. */
  rendered?: { file: string; holds: string[] };
  /** init --dry-run: what the printed API objects hold. */
  api?: string[];
}

const CASES: Case[] = [
  {
    // util/validation ValidateImageRepository matches "<repository>/<name>:<tag>" against the
    // distribution reference grammar, where a registry may carry a port.
    name: "a private registry on a port",
    text: `${init("10.0.0.10")}
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
imageRepository: nexus.local:8122/k8s
controlPlaneEndpoint: k8s-api.example.internal:6443
networking:
  podSubnet: 10.244.0.0/16
`,
    valid: true,
    stderr: [],
    rendered: {
      file: "etc/kubernetes/manifests/kube-apiserver.yaml",
      holds: ["image: nexus.local:8122/k8s/kube-apiserver:v1.35.0"],
    },
  },
  {
    // Dual-stack: one range per family; the IPv6 service range is at most 20 bits
    // (validation.go ValidateServiceSubnetSize), /112 is 16.
    name: "dual-stack networking",
    text: `${init("10.0.0.10")}
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
networking:
  podSubnet: 10.244.0.0/16,fd00:10:244::/56
  serviceSubnet: 10.96.0.0/16,fd00:10:96::/112
`,
    valid: true,
    stderr: [],
    rendered: {
      file: "etc/kubernetes/manifests/kube-controller-manager.yaml",
      holds: ["- --cluster-cidr=10.244.0.0/16,fd00:10:244::/56"],
    },
  },
  {
    // IPv6 only, the service range inside the pod range: kubeadm has no overlap check, so it
    // accepts the file; kubeforge warns, naming both ranges. The endpoint and kube-proxy's
    // bind address "::" are written single-quoted, as sigs.k8s.io/yaml writes them.
    name: "IPv6-only networking with the service range inside the pod range",
    text: `${init("fd00::10")}
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
controlPlaneEndpoint: "[fd00::10]:6443"
networking:
  podSubnet: fd00:10::/56
  serviceSubnet: fd00:10::/112
`,
    valid: true,
    stderr: [/fd00:10::\/56.*fd00:10::\/112/],
    rendered: {
      file: "etc/kubernetes/manifests/kube-apiserver.yaml",
      holds: ["- --advertise-address=fd00::10", "- --service-cluster-ip-range=fd00:10::/112"],
    },
    api: ["controlPlaneEndpoint: '[fd00::10]:6443'", "bindAddress: '::'"],
  },
  {
    // v1beta3 is still read by kubeadm v1.35 (deprecated, converted); kubeadm warns about it.
    name: "a v1beta3 ClusterConfiguration with a version",
    text: `${init("10.0.0.10")}
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
networking:
  podSubnet: 192.168.0.0/16
`,
    valid: true,
    stderr: [/v1beta3/],
    rendered: {
      file: "etc/kubernetes/manifests/kube-controller-manager.yaml",
      holds: ["- --cluster-cidr=192.168.0.0/16"],
    },
  },
  {
    // config validate decodes component configurations strictly (util/config/strict): an
    // unknown field is an error naming it; init only warns and drops it.
    name: "a KubeletConfiguration with an unknown field",
    text: `${init("10.0.0.10")}
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
maxPods: 150
podsPerCoreLimit: 4
`,
    valid: false,
    stderr: [/podsPerCoreLimit/],
    rendered: { file: "var/lib/kubelet/config.yaml", holds: ["maxPods: 150"] },
  },
];

describe.each(CASES)("$name", (c) => {
  let file: string;
  beforeAll(async () => {
    file = join(dir, `${c.name.replace(/\W+/g, "-")}.yaml`);
    await writeFile(file, c.text);
  });

  it(`config validate: ${c.valid ? "ok" : "refused"}`, async () => {
    const r = await kubeforge(["config", "validate", "--config", file]);
    expect([r.code, r.stdout]).toEqual(c.valid ? [0, "ok\n"] : [1, ""]);
    for (const re of c.stderr) expect(r.stderr).toMatch(re);
    if (c.valid && c.stderr.length === 0) expect(r.stderr).toBe("");
  });

  it("init --dry-run renders it", async () => {
    const out = join(dir, `dry-${c.name.replace(/\W+/g, "-")}`);
    await mkdir(out);
    const r = await kubeforge([
      "init",
      "--config",
      file,
      "--ignore-preflight-errors",
      "all",
      "--dry-run",
      "--dry-run-dir",
      out,
    ]);
    expect(r.stderr).not.toMatch(/error execution phase/);
    expect(r.code).toBe(0);
    if (!c.valid) for (const re of c.stderr) expect(r.stderr).toMatch(re);
    if (c.rendered) {
      const text = await readFile(join(out, c.rendered.file), "utf8");
      for (const line of c.rendered.holds) expect(text).toContain(line);
    }
    for (const line of c.api ?? []) expect(r.stdout).toContain(line);
  }, 60_000);
});
