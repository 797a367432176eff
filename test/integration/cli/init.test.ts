import { existsSync } from "node:fs";
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { load } from "js-yaml";
import { listFiles } from "../../../src/cli/files.js";
import { opensslCAPin } from "../../support/ca-pin.js";
import { bundledCli, type CliResult } from "../../support/cli.js";
import { freePort } from "../../support/ports.js";

// `kubeforge init` as a user runs it: the bundled CLI, real files, real exit codes.

const BASE = [
  "--kubernetes-version",
  "v1.35.0",
  "--apiserver-advertise-address",
  "10.0.0.10",
  "--node-name",
  "cp-1",
];
// No kubelet or container runtime on a test machine.
const IGNORE = ["--ignore-preflight-errors", "all"];
const TOKEN = "abcdef.0123456789abcdef";
const API_PHASES =
  "wait-control-plane,upload-config,upload-certs,mark-control-plane,bootstrap-token,kubelet-finalize,addon,show-join-command";

const NODE_FILES = [
  "etc/kubernetes/admin.conf",
  "etc/kubernetes/controller-manager.conf",
  "etc/kubernetes/kubelet.conf",
  "etc/kubernetes/manifests/etcd.yaml",
  "etc/kubernetes/manifests/kube-apiserver.yaml",
  "etc/kubernetes/manifests/kube-controller-manager.yaml",
  "etc/kubernetes/manifests/kube-scheduler.yaml",
  ...[
    "apiserver-etcd-client",
    "apiserver-kubelet-client",
    "apiserver",
    "ca",
    "etcd/ca",
    "etcd/healthcheck-client",
    "etcd/peer",
    "etcd/server",
    "front-proxy-ca",
    "front-proxy-client",
  ].flatMap((b) => [`etc/kubernetes/pki/${b}.crt`, `etc/kubernetes/pki/${b}.key`]),
  "etc/kubernetes/pki/sa.key",
  "etc/kubernetes/pki/sa.pub",
  "etc/kubernetes/scheduler.conf",
  "etc/kubernetes/super-admin.conf",
  "var/lib/kubelet/config.yaml",
  "var/lib/kubelet/instance-config.yaml",
  "var/lib/kubelet/kubeadm-flags.env",
].sort();

let kubeforge: (args: string[]) => Promise<CliResult>;
const temps: string[] = [];

async function temp(prefix: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), `kubeforge-${prefix}-`));
  temps.push(d);
  return d;
}

async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const f of await listFiles(dir)) out.set(relative(dir, f), await readFile(f, "base64"));
  return out;
}

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
}, 60_000);

afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

describe("kubeforge init --dry-run", () => {
  let out: string;
  let result: CliResult;
  const etcKubernetesExisted = existsSync("/etc/kubernetes");

  beforeAll(async () => {
    out = await temp("dry");
    result = await kubeforge([
      "init",
      ...BASE,
      ...IGNORE,
      "--token",
      TOKEN,
      "--dry-run",
      "--dry-run-dir",
      out,
    ]);
  }, 60_000);

  it("succeeds and renders a complete single-node control plane into the folder", async () => {
    expect(result.stderr).not.toMatch(/error execution phase/);
    expect(result.code).toBe(0);
    expect((await listFiles(out)).map((f) => relative(out, f))).toEqual(NODE_FILES);
  });

  it("prints on stdout only the API writes, each a YAML document after '# <VERB> <path>'", () => {
    const docs = result.stdout.split(/^---\n/m).filter((d) => d.length > 0);
    expect(docs.length).toBeGreaterThan(25);
    for (const doc of docs) expect(doc).toMatch(/^# (CREATE|UPDATE|PATCH|DELETE) \/api/);
    const requests = docs.map((d) => d.split("\n")[0]);
    expect(requests).toContain("# CREATE /api/v1/namespaces/kube-system/secrets");
    expect(requests).toContain("# CREATE /api/v1/namespaces/kube-public/configmaps");
    expect(requests).toContain("# PATCH /api/v1/nodes/cp-1");
    expect(requests).toContain("# CREATE /apis/apps/v1/namespaces/kube-system/deployments");
    // Each document reads back with js-yaml as the object it announces.
    const objects = docs.map((d) => load(d) as { kind: string; metadata: { name: string } });
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      expect.arrayContaining([
        "ConfigMap/kubeadm-config",
        "ConfigMap/kubelet-config",
        "Secret/bootstrap-token-abcdef",
        "ConfigMap/cluster-info",
        "ClusterRoleBinding/kubeadm:cluster-admins",
        "Deployment/coredns",
        "DaemonSet/kube-proxy",
      ]),
    );
  });

  it("reports progress, the commands it did not run and the join commands on stderr", () => {
    expect(result.stderr).toContain("[dryrun] Would run on local: systemctl restart kubelet");
    expect(result.stderr).toContain('[certs] Generating "ca" certificate and key');
    expect(result.stderr).toContain("[dryrun] Would GET http://127.0.0.1:10248/healthz");
    expect(result.stderr).toContain("Your Kubernetes control-plane has initialized successfully!");
    expect(result.stderr).toMatch(/kubeforge join 10\.0\.0\.10:6443 --token \S+ \\/);
  });

  it("writes kubeadm's file modes", async () => {
    const mode = async (p: string) => (await stat(join(out, p))).mode & 0o777;
    for (const f of NODE_FILES) {
      const expected =
        f.endsWith(".key") ||
        f.endsWith("sa.pub") ||
        f.endsWith(".conf") ||
        f.includes("/manifests/")
          ? 0o600
          : 0o644;
      expect([f, await mode(f)]).toEqual([f, expected]);
    }
    expect(await mode("etc/kubernetes/manifests")).toBe(0o700);
  });

  it("renders the configuration it was given", async () => {
    const apiserver = await readFile(
      join(out, "etc/kubernetes/manifests/kube-apiserver.yaml"),
      "utf8",
    );
    expect(apiserver).toContain("--advertise-address=10.0.0.10");
    expect(apiserver).toContain("image: registry.k8s.io/kube-apiserver:v1.35.0");
    const admin = await readFile(join(out, "etc/kubernetes/admin.conf"), "utf8");
    expect(admin).toContain("server: https://10.0.0.10:6443");
  });

  it("never prints a private key or the token secret", () => {
    expect(result.stderr).not.toContain("PRIVATE KEY");
    expect(result.stderr).not.toContain("0123456789abcdef");
  });

  it("does not touch the machine's /etc/kubernetes", () => {
    if (!etcKubernetesExisted) expect(existsSync("/etc/kubernetes")).toBe(false);
  });

  it("refuses a second run into the same folder, now not empty, before anything runs", async () => {
    const before = await snapshot(out);
    const again = await kubeforge(["init", ...BASE, ...IGNORE, "--dry-run", "--dry-run-dir", out]);
    expect([again.code, again.stdout, again.stderr]).toEqual([
      1,
      "",
      `cannot render the init into ${out}: the folder is not empty; give an empty or new folder\n`,
    ]);
    expect(await snapshot(out)).toEqual(before);
  });

  it("picks a new temporary folder and names it when --dry-run-dir is not given", async () => {
    const r = await kubeforge([
      "init",
      ...BASE,
      ...IGNORE,
      "--dry-run",
      "--skip-phases",
      `certs,kubeconfig,${API_PHASES}`,
    ]);
    expect(r.code).toBe(0);
    const dir = /Rendering node files into (\S+);/.exec(r.stderr)?.[1];
    expect(dir).toBeDefined();
    temps.push(dir!);
    expect(await readdir(join(dir!, "etc/kubernetes/manifests"))).toContain("kube-apiserver.yaml");
  });
});

// This machine runs no container runtime: preflight's image pull could not pass (see below), so
// the tests about node files skip preflight, as a kubeadm user may.
describe("kubeforge init --rootfs", () => {
  it("writes the node files, and a second run changes nothing", async () => {
    const rootfs = await temp("rootfs");
    const skip = `preflight,${API_PHASES}`;
    const args = ["init", ...BASE, ...IGNORE, "--rootfs", rootfs, "--skip-phases", skip];
    const first = await kubeforge(args);
    expect(first.stderr).not.toMatch(/error/);
    expect(first.code).toBe(0);
    const before = await snapshot(rootfs);
    expect([...before.keys()].sort()).toEqual(NODE_FILES);

    const second = await kubeforge(args);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain("[certs] Using existing ca certificate authority");
    expect(await snapshot(rootfs)).toEqual(before);
  });

  it("fails at wait-control-plane, naming the kubelet and the timeout, when no kubelet runs", async () => {
    const rootfs = await temp("rootfs");
    const config = join(rootfs, "..", `${relative(tmpdir(), rootfs)}.yaml`);
    temps.push(config);
    await writeFile(
      config,
      [
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: InitConfiguration",
        "localAPIEndpoint: {advertiseAddress: 10.0.0.10}",
        "nodeRegistration: {name: cp-1}",
        "timeouts: {kubeletHealthCheck: 1s}",
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        "kubernetesVersion: v1.35.0",
        "---",
        "apiVersion: kubelet.config.k8s.io/v1beta1",
        "kind: KubeletConfiguration",
        // A port nothing listens on, whatever runs on this machine.
        `healthzPort: ${await freePort()}`,
      ].join("\n"),
    );
    const r = await kubeforge([
      "init",
      "--config",
      config,
      ...["--skip-phases", "preflight", "--rootfs", rootfs],
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error execution phase wait-control-plane: .*kubelet.*1s/);
    expect(r.stderr).toContain("journalctl -xeu kubelet");
    expect(existsSync(join(rootfs, "var/lib/kubelet/config.yaml"))).toBe(true);
  });

  it("fails preflight as kubeadm does on a machine without a kubelet, before writing anything", async () => {
    const rootfs = await temp("rootfs");
    const r = await kubeforge(["init", ...BASE, "--rootfs", rootfs]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "error execution phase preflight: [preflight] Some fatal errors occurred:",
    );
    expect(r.stderr).toMatch(/\[ERROR KubeletVersion\]/);
    expect(r.stderr).toContain("--ignore-preflight-errors=...");
    expect(await listFiles(rootfs)).toEqual([]);
  });

  it("refuses a patch that is not one in preflight, naming the file, before writing anything", async () => {
    const rootfs = await temp("rootfs");
    const patches = await temp("patches");
    await writeFile(join(patches, "kube-apiserver+merge.yaml"), "not a patch at all\n");
    const r = await kubeforge([
      "init",
      ...BASE,
      ...IGNORE,
      "--rootfs",
      rootfs,
      "--patches",
      patches,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error execution phase preflight: patch file ${join(patches, "kube-apiserver+merge.yaml")}: document 1 is a string, not a mapping`,
    );
    expect(await listFiles(rootfs)).toEqual([]);
  });

  it("fails preflight at the image pull when no runtime answers, whatever is ignored, before writing anything", async () => {
    const rootfs = await temp("rootfs");
    const socket = join(rootfs, "..", "no-runtime.sock");
    const r = await kubeforge([
      "init",
      ...BASE,
      ...IGNORE,
      ...["--cri-socket", `unix://${socket}`, "--rootfs", rootfs],
    ]);
    expect(r.code).toBe(1);
    // kubeadm's RunPullImagesCheck: the runtime must answer before any image is pulled.
    expect(r.stderr).toContain(
      "[preflight] Pulling images required for setting up a Kubernetes cluster",
    );
    // Without crictl kubeforge sees only that the socket is missing; with it, crictl says so.
    expect(r.stderr).toMatch(
      /error execution phase preflight: cannot pull the control-plane images: (no container runtime socket at |validate CRI v1 runtime API for endpoint ")\S*no-runtime\.sock/,
    );
    expect(await listFiles(rootfs)).toEqual([]);
  });
});

describe("bad input: one clear sentence, exit 1, nothing written", () => {
  let configDir: string;
  beforeAll(async () => {
    configDir = await temp("configs");
    await writeFile(
      join(configDir, "typo.yaml"),
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubent: 10.244.0.0/16\n",
    );
    await writeFile(
      join(configDir, "malformed.yaml"),
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: [ClusterConfiguration\n",
    );
    await writeFile(
      join(configDir, "good.yaml"),
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
    );
  });

  const cases: [string, () => string[], RegExp][] = [
    [
      "an invalid pod network range",
      () => ["--pod-network-cidr", "10.244.0.0/33"],
      /podSubnet.*10\.244\.0\.0\/33/,
    ],
    [
      "an unsupported Kubernetes version",
      () => ["--kubernetes-version", "v1.30.2"],
      /v1\.33 to v1\.37/,
    ],
    ["a malformed token", () => ["--token", "abc"], /--token/],
    [
      "an invalid advertise address",
      () => ["--apiserver-advertise-address", "999.1.1.1"],
      /advertiseAddress/,
    ],
    ["an unknown feature gate", () => ["--feature-gates", "Bogus=true"], /Bogus/],
    [
      "an unknown phase in --skip-phases",
      () => ["--skip-phases", "certz"],
      /invalid phase name "certz" in --skip-phases/,
    ],
    [
      "an unknown field in --config",
      () => ["--config", join(configDir, "typo.yaml")],
      /unknown field "networking\.podSubent"/,
    ],
    [
      "malformed YAML in --config",
      () => ["--config", join(configDir, "malformed.yaml")],
      /malformed\.yaml is not valid YAML at line \d+, column \d+/,
    ],
    [
      "a flag kubeadm refuses beside --config",
      () => ["--config", join(configDir, "good.yaml"), "--pod-network-cidr", "10.244.0.0/16"],
      /can not mix '--config' with arguments \[pod-network-cidr\]/,
    ],
    [
      "a missing --config file",
      () => ["--config", join(configDir, "absent.yaml")],
      /cannot read --config file .*absent\.yaml/,
    ],
  ];

  it.each(cases)("%s", async (_name, args, message) => {
    const rootfs = await temp("bad");
    const given = args();
    const versionGiven = given.includes("--kubernetes-version") || given.includes("--config");
    const r = await kubeforge([
      "init",
      ...(versionGiven ? [] : ["--kubernetes-version", "v1.35.0"]),
      ...(given.includes("--config") ? [] : ["--apiserver-advertise-address", "10.0.0.10"]),
      ...given,
      "--rootfs",
      rootfs,
      ...IGNORE,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/^\s+at /m); // a sentence, not a stack trace
    expect(await listFiles(rootfs)).toEqual([]);
  });
});

describe("kubeforge init phase", () => {
  it("runs one sub-phase, honouring flags written before or after 'phase'", async () => {
    for (const placement of ["after", "before"]) {
      const rootfs = await temp("phase");
      const flags = [...BASE, "--rootfs", rootfs];
      const args =
        placement === "after"
          ? ["init", "phase", "certs", "ca", ...flags]
          : ["init", ...flags, "phase", "certs", "ca"];
      const r = await kubeforge(args);
      expect([placement, r.code, r.stderr]).toEqual([
        placement,
        0,
        expect.stringContaining('Generating "ca"'),
      ]);
      expect((await listFiles(rootfs)).map((f) => relative(rootfs, f))).toEqual([
        "etc/kubernetes/pki/ca.crt",
        "etc/kubernetes/pki/ca.key",
      ]);
    }
  });

  it("runs a whole phase with 'all' and nothing else", async () => {
    const rootfs = await temp("phase");
    const r = await kubeforge(["init", "phase", "kubeconfig", "all", ...BASE, "--rootfs", rootfs]);
    // kubeconfig needs the CA: the error names it, as kubeadm's does.
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error execution phase kubeconfig\/admin: .*ca/);
    await kubeforge(["init", "phase", "certs", "ca", ...BASE, "--rootfs", rootfs]);
    const ok = await kubeforge(["init", "phase", "kubeconfig", "all", ...BASE, "--rootfs", rootfs]);
    expect(ok.code).toBe(0);
    const files = (await listFiles(rootfs)).map((f) => relative(rootfs, f));
    expect(files.filter((f) => f.endsWith(".conf"))).toHaveLength(5);
    expect(files.some((f) => f.includes("manifests") || f.includes("kubelet/"))).toBe(false);
  });

  it("asks for a sub-phase when the phase has some", async () => {
    const r = await kubeforge(["init", "phase", "certs", ...BASE]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("phase certs has sub-phases");
    expect(r.stderr).toContain("all, ca, apiserver, apiserver-kubelet-client");
  });

  it("lists kubeadm's phases in help", async () => {
    const r = await kubeforge(["init", "--help"]);
    expect(r.code).toBe(0);
    const phaseLines = r.stdout.split("Init workflow phases")[1]!;
    const order = [
      "preflight",
      "certs",
      "kubeconfig",
      "etcd",
      "control-plane",
      "kubelet-start",
      "wait-control-plane",
      "upload-config",
      "upload-certs",
      "mark-control-plane",
      "bootstrap-token",
      "kubelet-finalize",
      "addon",
      "show-join-command",
    ];
    const positions = order.map((p) => phaseLines.search(new RegExp(`^  ${p} `, "m")));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });
});

describe("small commands", () => {
  it("certs ca-cert-hash prints sha256 of the CA's SubjectPublicKeyInfo, as openssl computes it", async () => {
    const rootfs = await temp("hash");
    await kubeforge(["init", "phase", "certs", "ca", ...BASE, "--rootfs", rootfs]);
    const certDir = join(rootfs, "etc/kubernetes/pki");
    const r = await kubeforge(["certs", "ca-cert-hash", "--cert-dir", certDir]);
    const expected = opensslCAPin(join(certDir, "ca.crt"));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`sha256:${expected}\n`);

    const missing = await kubeforge(["certs", "ca-cert-hash", "--cert-dir", join(rootfs, "nope")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read the CA certificate .*nope\/ca\.crt/);
  });

  it("token generate and certs certificate-key print fresh values in kubeadm's formats", async () => {
    const [t1, t2, k1, k2] = await Promise.all([
      kubeforge(["token", "generate"]),
      kubeforge(["token", "generate"]),
      kubeforge(["certs", "certificate-key"]),
      kubeforge(["certs", "certificate-key"]),
    ]);
    expect(t1.stdout).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}\n$/);
    expect(t1.stdout).not.toBe(t2.stdout);
    expect(k1.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(k1.stdout).not.toBe(k2.stdout);
  });

  it("config print init-defaults prints a file that config validate accepts", async () => {
    const dir = await temp("print");
    const printed = await kubeforge(["config", "print", "init-defaults"]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain("kind: InitConfiguration");
    expect(printed.stdout).toContain("kind: ClusterConfiguration");
    await writeFile(join(dir, "defaults.yaml"), printed.stdout);
    const valid = await kubeforge(["config", "validate", "--config", join(dir, "defaults.yaml")]);
    expect([valid.code, valid.stdout]).toEqual([0, "ok\n"]);
  });

  it("config print --component-configs appends documents config validate accepts", async () => {
    const dir = await temp("print-components");
    const printed = await kubeforge([
      "config",
      "print",
      "init-defaults",
      "--kubernetes-version",
      "v1.35.2",
      "--component-configs",
      "KubeletConfiguration,KubeProxyConfiguration",
    ]);
    expect(printed.code).toBe(0);
    const kinds = [...printed.stdout.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]);
    expect(kinds).toEqual([
      "InitConfiguration",
      "ClusterConfiguration",
      "KubeletConfiguration",
      "KubeProxyConfiguration",
    ]);
    expect(printed.stdout).toContain("\nkubernetesVersion: 1.35.0\n");
    await writeFile(join(dir, "defaults.yaml"), printed.stdout);
    const valid = await kubeforge(["config", "validate", "--config", join(dir, "defaults.yaml")]);
    expect([valid.code, valid.stdout, valid.stderr]).toEqual([0, "ok\n", ""]);
    const bad = await kubeforge([
      "config",
      "print",
      "init-defaults",
      "--component-configs",
      "KubeletConfig",
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      "--component-configs needs to contain some of [KubeProxyConfiguration KubeletConfiguration]",
    );
    expect(bad.stdout).toBe("");
  });

  it("config validate lists every problem, one per line, and exits 1", async () => {
    const dir = await temp("validate");
    await writeFile(
      join(dir, "bad.yaml"),
      [
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        "networking:",
        "  podSubnet: 10.244.0.0/33",
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: JoinConfiguration",
        "discovery:",
        "  bootstrapToken:",
        "    token: abcdef.0123456789abcdef",
        "    apiServerEndpoint: 10.0.0.1:6443",
        "",
      ].join("\n"),
    );
    const r = await kubeforge(["config", "validate", "--config", join(dir, "bad.yaml")]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines.some((l) => /networking\.podSubnet.*10\.244\.0\.0\/33/.test(l))).toBe(true);
    expect(lines.some((l) => /caCertHashes|unsafeSkipCAVerification/.test(l))).toBe(true);
    expect(r.stderr).not.toContain("0123456789abcdef");
  });

  it("--version names the supported Kubernetes range", async () => {
    const r = await kubeforge(["--version"]);
    expect(r.stdout).toMatch(/^kubeforge \d+\.\d+\.\d+ \(Kubernetes v1\.33 to v1\.37\)\n$/);
  });
});

describe("kubeforge join command line", () => {
  it("lists kubeadm's join phases in help, in kubeadm's order", async () => {
    const r = await kubeforge(["join", "--help"]);
    expect(r.code).toBe(0);
    const order = [
      "preflight",
      "control-plane-prepare",
      "kubelet-start",
      "etcd-join",
      "control-plane-join",
      "wait-control-plane",
    ];
    const positions = order.map((p) => r.stdout.indexOf(`  ${p} `));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it("refuses an unknown phase, naming the valid ones", async () => {
    const r = await kubeforge([
      "join",
      "phase",
      "no-such-phase",
      "10.0.0.1:6443",
      "--token",
      TOKEN,
      "--discovery-token-unsafe-skip-ca-verification",
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/invalid phase name "no-such-phase".*preflight.*kubelet-start/s);
  });

  it("refuses token discovery without a CA pin before touching anything", async () => {
    const rootfs = await temp("join");
    const r = await kubeforge(["join", "10.0.0.1:6443", "--token", TOKEN, "--rootfs", rootfs]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--discovery-token-unsafe-skip-ca-verification");
    expect(await listFiles(rootfs)).toEqual([]);
  });
});
